"""Hostile descriptions: 64-bit-safe extents, UINT members at their boundaries, bounded dispatches,
clear messages, and checks that catch writes past a tensor's end on every kernel path."""
import numpy as np
import pytest

import dmlvk
from dmlvk import (DataType, DepthSpaceOrder, QuantizedLinearConvolutionDesc, TensorDesc,
                   ValidationError, reference)
from dmlvk.ops.depth_space import TABLE as DS_TABLE
from dmlvk.tensor import element_extent_bytes

F32, U8, I8, I32 = DataType.FLOAT32, DataType.UINT8, DataType.INT8, DataType.INT32
DCR = DepthSpaceOrder.DEPTH_COLUMN_ROW
S = TensorDesc(F32, (1, 1, 1, 1))
ONE = np.float32([1])
EDGES = [2**31 - 1, 2**31, 2**32 - 1]


# ---- extents past TotalTensorSizeInBytes ------------------------------------------------------

def test_bias_whose_size_wraps_is_rejected_not_read_out_of_bounds(device):
    bias = TensorDesc(I32, (1, 3, 1, 1), (1, 2**31, 1, 1))          # DMLCalcBufferTensorSize: 4 bytes
    assert bias.total_bytes == 4
    desc = QuantizedLinearConvolutionDesc(TensorDesc(U8, (1, 1, 1, 1)), S, None, TensorDesc(I8, (3, 1, 1, 1)), S,
                                          None, bias, S, None, TensorDesc(U8, (1, 3, 1, 1)))
    with pytest.raises(ValidationError, match="'Bias' has elements reaching byte 17179869188"):
        device.create_operator(desc)


@pytest.mark.parametrize("data_type, sizes, strides", [
    (U8, (1, 1, 2, 2), (1, 1, 2**31, 2**31 + 1)),      # 8-byte total; offsets wrap in 32 bits
    (U8, (1, 1, 2, 2), (1, 1, 2, 2**32 - 1)),          # 4-byte total, stride of 2^32-1
    (F32, (1, 1, 2, 2), (1, 1, 2**31, 2**31 + 1)),     # the same for 4-byte elements
])
def test_depth_space_output_past_its_size_is_rejected(device, data_type, sizes, strides):
    out = TensorDesc(data_type, sizes, strides)
    desc = dmlvk.DepthToSpace1Desc(TensorDesc(data_type, (1, 4, 1, 1)), out, 2, DCR)
    with pytest.raises(ValidationError, match="'Output' has elements reaching byte"):
        device.create_operator(desc)


def test_elements_may_reach_exactly_the_total_size(device):
    out = TensorDesc(U8, (1, 1, 2, 2), (4, 4, 2, 1), total_tensor_size_in_bytes=4)
    op = device.create_operator(dmlvk.DepthToSpace1Desc(TensorDesc(U8, (1, 4, 1, 1)), out, 2, DCR))
    y = np.zeros(4, np.uint8)
    op.execute([np.uint8([10, 11, 12, 13])], [y])
    assert y.tolist() == [10, 11, 12, 13]


def test_sparse_output_launches_work_per_element_not_per_word(device):
    """A nested output whose strides reach far (its total size given to match) takes the
    per-element variant: the dispatch is bounded by the 4 elements, not the 2^18 words."""
    strides = (1, 1, 2**20, 2**10)
    extent = 2**20 + 2**10 + 1
    out = TensorDesc(U8, (1, 1, 2, 2), strides, total_tensor_size_in_bytes=-(-extent // 4) * 4)
    op = device.create_operator(dmlvk.DepthToSpace1Desc(TensorDesc(U8, (1, 4, 1, 1)), out, 2, DCR))
    assert op.kernels[0].count == 4
    y = np.full(out.total_bytes, 7, np.uint8)
    op.execute([np.uint8([10, 11, 12, 13])], [y])
    assert [y[0], y[2**10], y[2**20], y[2**20 + 2**10]] == [10, 11, 12, 13]
    assert np.count_nonzero(y != 7) == 4           # and nothing else


# ---- UINT members of the convolution at 2^31-1, 2^31 and 2^32-1 ----------------------------------

def _conv_case(member: str, v: int, m: int):
    """numpy arguments and options for a 2-row, 3-column input where one UINT member (on the
    height axis) is v; the other members keep the output to a few rows."""
    kh = 2 if member == "dilations" else 1
    opts = dict(strides=(v, 1), dilations=(v if member == "dilations" else 1, 1),
                start_padding=(v if member in ("start_padding", "dilations") else 0, 1),
                end_padding=(v if member == "end_padding" else 0, 1))
    if member == "strides":
        opts["start_padding"] = (2**32 - 1, 1)    # the reproducer: positions pass 2^32, 1 row of 3 is real
    rng = np.random.default_rng(v % 1000 + m)
    x = rng.integers(1, 256, (1, 2, 2, 3), dtype=np.uint8)
    w = rng.integers(-128, 128, (m, 2, kh, 3), dtype=np.int8)
    args = (x, np.float32(0.05), np.uint8(3), w, rng.uniform(0.01, 0.02, m).astype(np.float32), np.int8(0),
            rng.integers(-999, 999, m, dtype=np.int32), np.float32(0.3), np.uint8(11))
    return args, opts


@pytest.mark.parametrize("m", [2, 8], ids=["direct", "gemm"])
@pytest.mark.parametrize("v", EDGES, ids=["2^31-1", "2^31", "2^32-1"])
@pytest.mark.parametrize("member", ["strides", "dilations", "start_padding", "end_padding"])
def test_conv_uint_members_at_their_edges(device, member, v, m):
    args, opts = _conv_case(member, v, m)
    want = reference.quantized_linear_convolution(*args, np.uint8, **opts)
    assert 1 <= want.shape[2] <= 4
    got = dmlvk.quantized_linear_convolution(*args, **opts, device=device)
    assert np.array_equal(got, want), (member, v, got.tolist(), want.tolist())


def test_strides_reproducer_gives_padding_where_positions_wrap(device):
    args, opts = _conv_case("strides", 2**31, 8)
    got = dmlvk.quantized_linear_convolution(*args, **opts, device=device)
    want = reference.quantized_linear_convolution(*args, np.uint8, **opts)
    assert want.shape[2] == 3 and np.array_equal(got, want)
    # rows 0 and 1 see only padding (positions 1 - 2^32 + ... < 0 and 2^31 - 1 + 1 ... >= 2): bias only
    assert np.array_equal(got[:, :, 0], got[:, :, 1])


@pytest.mark.parametrize("v", EDGES, ids=["2^31-1", "2^31", "2^32-1"])
@pytest.mark.parametrize("tensor", ["input", "filter", "output"])
def test_tensor_strides_at_their_edges(device, tensor, v):
    """A huge stride on a size-1 dimension is harmless and runs; on a size-2 dimension the
    elements reach past what can be bound: a ValidationError or a DeviceLimitError, never a
    wrong result."""
    x = np.arange(1, 7, dtype=np.uint8).reshape(1, 1, 2, 3)
    w = np.int8([[[[2, -1]]]])
    sizes = {"input": (1, 1, 2, 3), "filter": (1, 1, 1, 2), "output": (1, 1, 2, 2)}[tensor]
    dt = {"input": U8, "filter": I8, "output": U8}[tensor]
    strides = list(dmlvk.packed_strides(sizes))
    strides[1] = v                                   # channel dimension: size 1
    descs = {"input": TensorDesc(U8, (1, 1, 2, 3)), "filter": TensorDesc(I8, (1, 1, 1, 2)),
             "output": TensorDesc(U8, (1, 1, 2, 2))}
    descs[tensor] = TensorDesc(dt, sizes, tuple(strides))
    desc = QuantizedLinearConvolutionDesc(descs["input"], S, None, descs["filter"], S, None, None, S, None,
                                          descs["output"])
    op = device.create_operator(desc)
    host = {"input": x, "filter": w, "output": np.zeros((1, 1, 2, 2), np.uint8)}
    bufs = {k: np.zeros(descs[k].total_bytes, np.uint8) for k in host}
    for k, a in host.items():
        view = np.lib.stride_tricks.as_strided(bufs[k].view(a.dtype), a.shape,
                                               tuple(st * a.itemsize for st in descs[k].effective_strides))
        view[...] = a
    op.execute([bufs["input"], ONE, None, bufs["filter"], ONE, None, None, ONE, None], [bufs["output"]])
    got = np.lib.stride_tricks.as_strided(bufs["output"], (1, 1, 2, 2), descs["output"].effective_strides)
    want = reference.quantized_linear_convolution(x, 1, None, w, 1, None, None, 1, None, np.uint8)
    assert np.array_equal(got, want)
    strides[2] = v                                   # height: size 2
    descs[tensor] = TensorDesc(dt, sizes, tuple(strides))
    desc = QuantizedLinearConvolutionDesc(descs["input"], S, None, descs["filter"], S, None, None, S, None,
                                          descs["output"])
    if sizes[2] == 1 or element_extent_bytes(descs[tensor]) <= device.info.max_storage_buffer_range:
        return     # nothing reaches past what the device binds (GPUs bind up to 4 GiB)
    with pytest.raises((ValidationError, dmlvk.DeviceLimitError)):
        device.create_operator(desc)


@pytest.mark.parametrize("member", ["strides", "dilations", "start_padding", "end_padding"])
def test_uint_members_past_2_to_the_32_are_rejected(device, member):
    base = dict(strides=(1, 1), dilations=(1, 1), start_padding=(0, 0), end_padding=(0, 0))
    base[member] = (2**32, 1)
    desc = QuantizedLinearConvolutionDesc(TensorDesc(U8, (1, 1, 2, 2)), S, None, TensorDesc(I8, (1, 1, 1, 1)), S,
                                          None, None, S, None, TensorDesc(U8, (1, 1, 2, 2)), **base)
    name = {"strides": "Strides", "dilations": "Dilations", "start_padding": "StartPadding",
            "end_padding": "EndPadding"}[member]
    with pytest.raises(ValidationError, match=f"{name} .*UINT"):
        device.create_operator(desc)
    base[member] = (-1, 1)
    with pytest.raises(ValidationError, match=f"{name} .*UINT"):
        device.create_operator(dataclasses_replace(desc, **{member: (-1, 1)}))
    x = np.zeros((1, 1, 2, 2), np.uint8)
    with pytest.raises(ValueError, match=f"{member} must be two integers in 0..2\\*\\*32-1"):
        dmlvk.quantized_linear_convolution(x, 1.0, None, np.zeros((1, 1, 1, 1), np.int8), 1.0, None, None, 1.0,
                                           np.uint8(0), **{member: (2**32, 1)}, device=device)


def dataclasses_replace(desc, **kw):
    import dataclasses
    return dataclasses.replace(desc, **kw)


# ---- messages ----------------------------------------------------------------------------------

def test_wrong_python_arguments_get_clear_errors(device):
    x = np.zeros((1, 4, 2, 2), np.float32)
    with pytest.raises(TypeError, match="device must be a dmlvk.Device or None, got str"):
        dmlvk.depth_to_space(x, 2, device="x")
    with pytest.raises(TypeError, match="strides must be a sequence of integers"):
        QuantizedLinearConvolutionDesc(None, None, None, None, None, None, None, None, None, None, strides=None)
    with pytest.raises(TypeError, match="strides must hold integers"):
        QuantizedLinearConvolutionDesc(None, None, None, None, None, None, None, None, None, None, strides=(1.5, 1))
    op = device.create_operator(dmlvk.DepthToSpace1Desc(TensorDesc(F32, (1, 4, 2, 2)), TensorDesc(F32, (1, 1, 4, 4)), 2, DCR))
    with pytest.raises(TypeError, match="inputs must be a list of bindings"):
        op.execute(None, [np.zeros(16, np.float32)])
    with pytest.raises(TypeError, match="outputs must be a list of bindings"):
        op.execute([x], np.zeros(16, np.float32))
    q = dict(input_scale=1.0, input_zero_point=None, filter_scale=1.0, filter_zero_point=None, bias=None,
             output_scale=1.0, output_zero_point=np.uint8(0), device=device)
    for xs, ws in (((1, 0, 2, 2), (1, 0, 1, 1)), ((1, 1, 2, 2), (0, 1, 1, 1))):
        with pytest.raises(ValueError, match="has an empty dimension"):
            dmlvk.quantized_linear_convolution(np.zeros(xs, np.uint8), filter=np.zeros(ws, np.int8), **q)
    empty = dmlvk.quantized_linear_convolution(np.zeros((0, 1, 2, 2), np.uint8), filter=np.zeros((3, 1, 1, 1), np.int8), **q)
    assert empty.shape == (0, 3, 2, 2) and empty.dtype == np.uint8       # an empty batch: an empty result
    with pytest.raises(ValueError, match="start_padding must be two integers in 0..2"):
        dmlvk.quantized_linear_convolution(np.zeros((1, 1, 2, 2), np.uint8), filter=np.zeros((1, 1, 1, 1), np.int8),
                                           start_padding=2**40, **q)
    with pytest.raises(TypeError, match="strides must be an int or a pair of ints"):
        dmlvk.quantized_linear_convolution(np.zeros((1, 1, 2, 2), np.uint8), filter=np.zeros((1, 1, 1, 1), np.int8),
                                           strides=(1.0, 1), **q)


# ---- nothing written past a tensor's end, on every kernel path --------------------------------------

MARK = 0xA5


def _marked_output(device, desc):
    """A Buffer 256 bytes longer than the output tensor, filled with a marker."""
    buf = device.buffer(desc.total_bytes + 256)
    buf.write(np.full(buf.nbytes, MARK, np.uint8))
    return buf


def _depth_space_paths():
    """(label, description, expected kernel and MODE) covering every depth/space kernel path."""
    u8, f32, f64 = DataType.UINT8, F32, DataType.FLOAT64
    d2s = lambda dt, i, o, b=2: dmlvk.DepthToSpace1Desc(TensorDesc(dt, i), o if isinstance(o, TensorDesc) else TensorDesc(dt, o), b, DCR)
    s2d = lambda dt, i, o, b=2: dmlvk.SpaceToDepth1Desc(TensorDesc(dt, i), TensorDesc(dt, o), b, DCR)
    return [
        ("rows d2s uint8", d2s(u8, (1, 4, 3, 16), (1, 1, 6, 32)), ("depth_space_rows", None)),
        ("rows s2d float32", s2d(f32, (1, 1, 6, 16), (1, 4, 3, 8)), ("depth_space_rows", None)),
        ("rows B=4 d2s uint8", d2s(u8, (1, 16, 3, 8), (1, 1, 12, 32), 4), ("depth_space_rows", None)),
        ("rows B=4 s2d float64", s2d(f64, (1, 1, 12, 20), (1, 16, 3, 5), 4), ("depth_space_rows", None)),
        ("rows B=3 d2s uint8", d2s(u8, (1, 9, 2, 8), (1, 1, 6, 24), 3), ("depth_space_rows", None)),
        ("rows B=3 s2d float64", s2d(f64, (1, 1, 6, 9), (1, 9, 2, 3), 3), ("depth_space_rows", None)),
        ("elements float64", d2s(f64, (1, 25, 2, 3), (1, 1, 10, 15), 5), ("depth_space", 0)),
        ("words uint8", d2s(u8, (1, 9, 2, 3), (1, 1, 6, 9), 3), ("depth_space", 1)),
        ("per element uint8", d2s(u8, (1, 4, 2, 3), TensorDesc(u8, (1, 1, 4, 6), (24, 24, 11, 2)), 2),
         ("depth_space", None)),
        ("channel-last float32", dmlvk.DepthToSpace1Desc(TensorDesc(f32, (1, 16, 2, 3), (96, 1, 48, 16)),
                                                          TensorDesc(f32, (1, 4, 4, 6), (96, 1, 24, 4)), 2, DCR),
         ("depth_space_nhwc", None)),
        ("channel-last with gaps uint8", dmlvk.DepthToSpace1Desc(TensorDesc(u8, (1, 64, 2, 3), (480, 1, 232, 72)),
                                                                  TensorDesc(u8, (1, 16, 4, 6), (512, 1, 128, 16)), 2, DCR),
         ("depth_space_nhwc", None)),
        ("channel-last per pixel uint8", dmlvk.DepthToSpace1Desc(TensorDesc(u8, (1, 64, 2, 3), (448, 1, 208, 64)),
                                                                  TensorDesc(u8, (1, 16, 4, 6), (512, 1, 128, 16)), 2, DCR),
         ("depth_space_lanes", None)),
    ]


@pytest.mark.parametrize("case", _depth_space_paths(), ids=lambda c: c[0])
@pytest.mark.parametrize("portable", [False, True], ids=["device-variants", "portable"])
def test_depth_space_writes_nothing_past_the_output(device, portable_device, case, portable):
    label, desc, (shader, mode) = case
    dev = portable_device if portable else device
    op = dev.create_operator(desc)
    k = op.kernels[0]
    assert k.shader == shader and (mode is None or DS_TABLE[k.variant].constants(k)["MODE"] == mode), (k.shader, k.spec)
    rng = np.random.default_rng(7)
    x = rng.integers(0, 256, desc.input_tensor.total_bytes, dtype=np.uint8)
    src, dst = dev.upload(x), _marked_output(dev, desc.output_tensor)
    op.execute([src], [dst])
    got = dst.read()
    assert (got[desc.output_tensor.total_bytes:] == MARK).all(), label
    dt = desc.input_tensor.data_type.numpy_dtype
    xs = np.lib.stride_tricks.as_strided(x.view(dt), desc.input_tensor.sizes,
                                         tuple(s * dt.itemsize for s in desc.input_tensor.effective_strides))
    out = desc.output_tensor
    ys = np.lib.stride_tricks.as_strided(got.view(dt), out.sizes, tuple(s * dt.itemsize for s in out.effective_strides))
    fn = reference.depth_to_space if desc.depth_to_space else reference.space_to_depth
    bits = lambda a: np.ascontiguousarray(a).view(np.uint8)          # NaN payloads compare as bits
    assert np.array_equal(bits(ys), bits(fn(xs, desc.block_size, "DCR"))), label


@pytest.mark.parametrize("m", [4, 16], ids=["direct", "gemm"])
def test_convolution_writes_nothing_past_the_output(device, m):
    rng = np.random.default_rng(m)
    x = rng.integers(0, 256, (1, 3, 5, 5), dtype=np.uint8)
    w = rng.integers(-128, 128, (m, 3, 3, 3), dtype=np.int8)
    s = TensorDesc(F32, (1, 1, 1, 1))
    out = TensorDesc(U8, (1, m, 3, 3))
    op = device.create_operator(QuantizedLinearConvolutionDesc(TensorDesc(U8, x.shape), s, None, TensorDesc(I8, w.shape),
                                                               s, None, None, s, None, out))
    gemm = "qconv_pack_filter_cpu" if device.capabilities.cpu_kernels else "qlinear_conv_gemm"
    assert op.kernels[0].shader == (gemm if m >= 8 else "qlinear_conv")
    dst = _marked_output(device, out)
    scale = device.upload(np.float32([0.01]))
    padded = lambda a: device.upload(np.concatenate([a.reshape(-1).view(np.uint8), np.zeros(4, np.uint8)]))
    op.execute([padded(x), scale, None, padded(w), scale, None, None, scale, None], [dst])
    got = dst.read()
    assert (got[out.total_bytes:] == MARK).all()
    want = reference.quantized_linear_convolution(x, np.float32(0.01), None, w, np.float32(0.01), None, None,
                                                   np.float32(0.01), None, np.uint8)
    assert np.array_equal(got[:out.total_bytes].reshape(want.shape), want)


@pytest.mark.parametrize("k", [512, 1024])
def test_gemm_sums_of_full_range_products_stay_exact(device, k):
    """Every product (255 - 0) * (-128 - 127) = -65025, K of them: float32 partial sums stay exact
    only if they are moved to int32 often enough. The bias cancels the sum, so any error shows."""
    x = np.full((1, k, 1, 1), 255, np.uint8)
    w = np.full((8, k, 1, 1), -128, np.int8)
    bias = np.full(8, 65025 * k, np.int32)
    args = (x, np.float32(1), np.uint8(0), w, np.float32(1), np.int8(127), bias, np.float32(1), np.uint8(100))
    got = dmlvk.quantized_linear_convolution(*args, device=device)
    want = reference.quantized_linear_convolution(*args, np.uint8)
    assert want.ravel().tolist() == [100] * 8
    assert np.array_equal(got, want), got.ravel().tolist()


# ---- dispatch planning -----------------------------------------------------------------------------

@pytest.mark.parametrize("limit", [(5, 3, 1), (7, 2, 1), (65535, 65535, 1)])
def test_plan_covers_every_item_when_the_last_dispatch_is_ragged(device, limit):
    dev = dmlvk.Device(device.index)
    dev.max_workgroup_count = limit
    per = limit[0] * limit[1] * 128
    for count in (1, 127, 129, per - 1, per + 8 * 128, 2 * per + 3 * 128 + 5, 3 * per + (limit[0] + 1) * 128):
        if limit[0] > 1000 and count > 10**9:
            continue
        plans = list(dev.plan(count, 128))
        assert sum(items for _, items, _ in plans) == count
        for first, items, (gx, gy, gz) in plans:
            assert gx <= limit[0] and gy <= limit[1] and gz == 1
            assert gx * gy * 128 >= items, (count, items, gx, gy)      # every item has an invocation


def test_ragged_last_dispatch_gives_the_right_result(device, rng):
    dev = dmlvk.Device(device.index)
    dev.max_workgroup_count = (5, 3, 1)
    # 3 x 3 blocks (the element shader): 1 x 9 x 30 x 30 int32 = 8100 outputs = 64 groups of 128 ->
    # four dispatches of 15 groups and a last one of 4; and 27 x 40 x 40: a last one of 8 groups
    for shape in ((1, 9, 30, 30), (1, 27, 21, 32)):
        x = rng.integers(0, 2**31, shape, dtype=np.int32)
        got = dmlvk.depth_to_space(x, 3, "DCR", device=dev)
        assert np.array_equal(got, reference.depth_to_space(x, 3, "DCR"))


@pytest.mark.parametrize("v", EDGES, ids=["2^31-1", "2^31", "2^32-1"])
@pytest.mark.parametrize("which", ["input", "output"])
@pytest.mark.parametrize("dim", [0, 1, 2, 3])
def test_depth_space_strides_at_their_edges(device, which, dim, v):
    """A stride of v on a size-1 dimension runs and matches the reference; on a dimension of size
    2 or more the elements reach far: a clear error where they pass the total size or the device's
    binding limit, else (GPUs bind up to 4 GiB) a run that matches the reference."""
    x = np.arange(1, 1 + 8 * 2 * 3, dtype=np.uint8).reshape(1, 8, 2, 3)
    in_sizes, out_sizes = [1, 8, 2, 3], [1, 2, 4, 6]
    sizes = in_sizes if which == "input" else out_sizes
    strides = list(dmlvk.packed_strides(sizes))
    strides[dim] = v
    descs = {"input": TensorDesc(U8, in_sizes), "output": TensorDesc(U8, out_sizes)}
    descs[which] = TensorDesc(U8, sizes, tuple(strides))
    desc = dmlvk.DepthToSpace1Desc(descs["input"], descs["output"], 2, DCR)
    try:
        op = device.create_operator(desc)
    except (ValidationError, dmlvk.DeviceLimitError):
        assert sizes[dim] > 1          # past the binding limit (lavapipe: 128 MiB) or past the total
        return
    bufs = {k: np.zeros(d.total_bytes, np.uint8) for k, d in descs.items()}
    np.lib.stride_tricks.as_strided(bufs["input"], descs["input"].sizes, descs["input"].effective_strides)[...] = x
    op.execute([bufs["input"]], [bufs["output"]])
    got = np.lib.stride_tricks.as_strided(bufs["output"], descs["output"].sizes, descs["output"].effective_strides)
    assert np.array_equal(got, reference.depth_to_space(x, 2, "DCR"))
