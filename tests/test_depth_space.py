"""DEPTH_TO_SPACE(1) / SPACE_TO_DEPTH(1) on the Vulkan device against dmlvk.reference and the
documented examples, over every data type, order, block size and layout."""
import numpy as np
import pytest

import dmlvk
from dmlvk import DataType, DepthSpaceOrder, TensorDesc, reference
from dmlvk_lab.common import run_depth_space_example
from dmlvk_lab.examples import depth_space_examples
from dmlvk.runtime.capabilities import SUBGROUP_SHUFFLE
from dmlvk.ops.depth_space import TABLE
from harness import bits, element_mask, layout, make_tensor, random_bytes, strided_view

ALL_TYPES = [DataType.FLOAT32, DataType.FLOAT16, DataType.UINT32, DataType.UINT16, DataType.UINT8,
             DataType.INT32, DataType.INT16, DataType.INT8, DataType.FLOAT64, DataType.UINT64,
             DataType.INT64]
ORDERS = [DepthSpaceOrder.DEPTH_COLUMN_ROW, DepthSpaceOrder.COLUMN_ROW_DEPTH]


@pytest.mark.parametrize("ex", depth_space_examples(), ids=lambda e: e.name)
def test_documented_examples(device, ex):
    got = run_depth_space_example(device, ex)
    assert np.array_equal(got, ex.expected), f"{ex.name}: got {got.ravel().tolist()}"


@pytest.mark.parametrize("ex", depth_space_examples(), ids=lambda e: e.name)
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float64])
def test_documented_examples_other_types(device, ex, dtype):
    # The examples' values fit every type; the operator moves bits, so each type must agree.
    got = run_depth_space_example(device, type(ex)(**{**ex.__dict__, "input": ex.input.astype(dtype),
                                                     "expected": ex.expected.astype(dtype)}))
    assert np.array_equal(got, ex.expected.astype(dtype))


def _random_shape(rng, d2s: bool, b: int):
    n = int(rng.integers(1, 3))
    cs = int(rng.integers(1, 4))
    h, w = int(rng.integers(1, 5)), int(rng.integers(1, 6))
    return (n, cs * b * b, h, w) if d2s else (n, cs, h * b, w * b)


def C(kernel) -> dict:
    """A kernel's specialization constants by name (its variant's table entry)."""
    return TABLE[kernel.variant].constants(kernel)


def P(kernel) -> dict:
    """A kernel's push constants by name (its shader's push block)."""
    return TABLE[kernel.variant].push_values(kernel)


def runs(desc, variant, device=None) -> bool:
    """Whether the named variant can run the description (on the device's capabilities)."""
    try:
        desc.kernel(device and device.capabilities, force=variant)
    except ValueError:
        return False
    return True


def run_case(device, rng, desc_cls, data_type, b, order, in_kind, out_kind, shape=None, force=None, tuning=None):
    """One randomised case (force, tuning: the variant choice, as for Device.create_operator);
    returns its description."""
    d2s = desc_cls in (dmlvk.DepthToSpaceDesc, dmlvk.DepthToSpace1Desc)
    in_sizes = shape or _random_shape(rng, d2s, b)
    n, c, h, w = in_sizes
    out_sizes = (n, c // (b * b), h * b, w * b) if d2s else (n, c * b * b, h // b, w // b)
    in_strides = layout(in_kind, in_sizes, rng) if isinstance(in_kind, str) else in_kind
    out_strides = layout(out_kind, out_sizes, rng) if isinstance(out_kind, str) else out_kind
    in_desc, in_buf = make_tensor(rng, data_type, in_sizes, in_strides)
    out_desc, out_buf = make_tensor(rng, data_type, out_sizes, out_strides)
    sentinel = out_buf.copy()
    args = [in_desc, out_desc, b] + ([order] if desc_cls in (dmlvk.DepthToSpace1Desc, dmlvk.SpaceToDepth1Desc) else [])
    desc = desc_cls(*args)
    op = device.create_operator(desc, force, tuning)
    op.execute(inputs=[in_buf], outputs=[out_buf])

    dt = data_type.numpy_dtype
    x = strided_view(in_buf, dt, in_sizes, in_desc.effective_strides)
    fn = reference.depth_to_space if d2s else reference.space_to_depth
    expected = fn(x, b, order)
    got = strided_view(out_buf, dt, out_sizes, out_desc.effective_strides)
    case = (f"{desc_cls.__name__} {data_type.name} B={b} {order.name} input {in_sizes} "
            f"{in_kind} {in_desc.effective_strides} output {out_kind} {out_desc.effective_strides}")
    assert np.array_equal(bits(got), bits(expected)), case
    mask = element_mask(out_buf.size, dt.itemsize, out_sizes, out_desc.effective_strides)
    assert np.array_equal(out_buf[~mask], sentinel[~mask]), "bytes outside the output's elements changed: " + case
    return desc


@pytest.mark.parametrize("data_type", ALL_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("desc_cls", [dmlvk.DepthToSpace1Desc, dmlvk.SpaceToDepth1Desc], ids=lambda c: c.__name__)
def test_random_against_reference(device, rng, desc_cls, data_type):
    for order in ORDERS:
        for b in (1, 2, 3, 4, 5):
            run_case(device, rng, desc_cls, data_type, b, order, "packed", "packed")


STRIDED = [("padded", "packed"), ("nhwc", "nhwc"), ("broadcast", "padded"), ("packed", "nhwc_padded"),
           ("permuted", "permuted"), ("nhwc", "nonnested"), ("packed", "padded")]


@pytest.mark.parametrize("data_type", ALL_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("kinds", STRIDED, ids=lambda k: f"{k[0]}-to-{k[1]}")
def test_strided_layouts(device, rng, data_type, kinds):
    for desc_cls in (dmlvk.DepthToSpace1Desc, dmlvk.SpaceToDepth1Desc):
        for order in ORDERS:
            run_case(device, rng, desc_cls, data_type, int(rng.integers(2, 4)), order, *kinds)


def _row_pitched(sizes, pad):
    """NCHW strides with `pad` extra elements at the end of every row."""
    n, c, h, w = sizes
    return ((w + pad) * h * c, (w + pad) * h, w + pad, 1)


@pytest.mark.parametrize("data_type", [DataType.UINT8, DataType.FLOAT16, DataType.FLOAT32, DataType.INT64],
                         ids=lambda t: t.name)
@pytest.mark.parametrize("b", [2, 4])
def test_bandwidth_path(device, rng, data_type, b):
    # Shapes whose rows split into whole 16/32-byte chunks take dmlvk/shaders/depth_space_rows.comp;
    # row-pitched layouts (gaps between rows that must survive) and broadcast inputs included.
    for d2s, desc_cls in ((True, dmlvk.DepthToSpace1Desc), (False, dmlvk.SpaceToDepth1Desc)):
        for order in ORDERS:
            for w in (8, 24):
                depth = (2, 3 * b * b, 3, w)
                space = (2, 3, 3 * b, w * b)
                shape = depth if d2s else space
                out_sizes = space if d2s else depth
                for in_kind, out_kind in (("packed", "packed"),
                                          (_row_pitched(shape, 32), _row_pitched(out_sizes, 64))):
                    desc = run_case(device, rng, desc_cls, data_type, b, order, in_kind, out_kind, shape=shape)
                    assert desc.kernel().shader == "depth_space_rows", desc
            # width 5 splits into chunks only with one element per piece (K = 1)
            shape = (1, b * b, 2, 5) if d2s else (1, 1, 2 * b, 5 * b)
            desc = run_case(device, rng, desc_cls, data_type, b, order, "packed", "packed", shape=shape)
            assert desc.kernel().shader == ("depth_space_rows" if data_type.bits >= 32 else "depth_space"), desc


@pytest.mark.parametrize("desc_cls", [dmlvk.DepthToSpaceDesc, dmlvk.SpaceToDepthDesc], ids=lambda c: c.__name__)
@pytest.mark.parametrize("data_type", [DataType.FLOAT32, DataType.FLOAT16, DataType.INT8, DataType.UINT64], ids=lambda t: t.name)
def test_old_forms_are_dcr(device, rng, desc_cls, data_type):
    for kinds in (("packed", "packed"), ("nhwc", "padded")):
        run_case(device, rng, desc_cls, data_type, 3, DepthSpaceOrder.DEPTH_COLUMN_ROW, *kinds)


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.float64])
def test_subword_tail_and_odd_shapes(device, rng, dtype):
    # Odd sizes so that rows end mid-word; the tail word's extra bytes must survive.
    dt = DataType.from_numpy(dtype)
    for kinds in (("packed", "packed"), ("packed", "nhwc"), ("packed", "nonnested")):
        run_case(device, rng, dmlvk.DepthToSpace1Desc, dt, 3, DepthSpaceOrder.COLUMN_ROW_DEPTH, *kinds, shape=(1, 9, 3, 5))
        run_case(device, rng, dmlvk.SpaceToDepth1Desc, dt, 3, DepthSpaceOrder.COLUMN_ROW_DEPTH, *kinds, shape=(3, 1, 3, 9))


def test_nan_payloads_and_negative_zero_survive(device):
    raw = np.array([0x7FC00001, 0xFFC12345, 0x80000000, 0x7F800000, 0xFF800001, 0, 1, 0x7FBFFFFF], np.uint32)
    x = raw.view(np.float32).reshape(1, 4, 1, 2)
    y = dmlvk.depth_to_space(x, 2, device=device)
    assert np.array_equal(bits(y), bits(reference.depth_to_space(x, 2)))
    h = np.array([0x7E01, 0xFE00, 0x8000, 0x7C01], np.uint16).view(np.float16).reshape(1, 4, 1, 1)
    assert np.array_equal(bits(dmlvk.depth_to_space(h, 2, "CRD", device=device)),
                          bits(reference.depth_to_space(h, 2, "CRD")))


# ---- numpy-level API ---------------------------------------------------------------------------

@pytest.mark.parametrize("order", ["DCR", "CRD", DepthSpaceOrder.COLUMN_ROW_DEPTH, "crd"])
def test_numpy_api_round_trip(device, rng, order):
    x = rng.standard_normal((2, 18, 3, 4)).astype(np.float32)
    y = dmlvk.depth_to_space(x, 3, order, device=device)
    assert np.array_equal(y, reference.depth_to_space(x, 3, order))
    assert np.array_equal(dmlvk.space_to_depth(y, 3, order, device=device), x)


def test_numpy_api_repeated_calls_of_one_signature(device, rng):
    """Calls of one signature share a plan and its staging (only the copies and the submission
    after the first): each call's own data in, its own result out, results independent of later
    calls; the argument errors still raised after a plan exists; True is not a block size of 1."""
    xs = [rng.integers(0, 256, (1, 8, 3, 5), dtype=np.uint8) for _ in range(5)]
    ys = [dmlvk.depth_to_space(x, 2, "CRD", device=device) for x in xs]
    for x, y in zip(xs, ys):
        assert np.array_equal(y, reference.depth_to_space(x, 2, "CRD"))
    odd = np.zeros((1, 9, 3, 5), np.uint8)
    with pytest.raises(ValueError, match=r"x: .*not divisible by BlockSize"):
        dmlvk.depth_to_space(odd, 2, "CRD", device=device)
    one = dmlvk.depth_to_space(xs[0], 1, device=device)
    assert np.array_equal(one, xs[0])
    with pytest.raises(TypeError, match="block_size"):
        dmlvk.depth_to_space(xs[0], True, device=device)
    with pytest.raises(ValueError, match="order"):
        dmlvk.depth_to_space(xs[0], 2, "XYZ", device=device)


def test_numpy_api_views(device, rng):
    base = rng.integers(-100, 100, (2, 6, 8, 12), dtype=np.int16)
    nhwc_view = np.ascontiguousarray(base.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    sliced = base[:, ::2, 1:7, ::3]                      # (2, 3, 6, 4): padded, strided
    broadcast = np.broadcast_to(base[:1, :4, :2, :2], (3, 4, 2, 2))
    for x in (nhwc_view, sliced, broadcast):
        assert np.array_equal(dmlvk.space_to_depth(x, 2, device=device), reference.space_to_depth(x, 2))
    reversed_view = base[:, :4, ::-1, :]                  # negative strides are copied
    assert np.array_equal(dmlvk.depth_to_space(reversed_view, 2, "CRD", device=device),
                          reference.depth_to_space(reversed_view, 2, "CRD"))


def test_numpy_api_argument_errors(device):
    x = np.zeros((1, 8, 2, 2), np.float32)
    with pytest.raises(ValueError, match="4-D"):
        dmlvk.depth_to_space(np.zeros((8, 2, 2), np.float32), 2, device=device)
    with pytest.raises(TypeError, match="dtype"):
        dmlvk.depth_to_space(x.astype(np.complex128), 2, device=device)     # 16-byte elements
    with pytest.raises(TypeError, match="dtype"):
        dmlvk.depth_to_space(x.astype(object), 2, device=device)
    with pytest.raises(ValueError, match="block_size: .*BlockSize is 0"):
        dmlvk.depth_to_space(x, 0, device=device)
    with pytest.raises(TypeError, match="block_size"):
        dmlvk.depth_to_space(x, 2.0, device=device)
    with pytest.raises(ValueError, match=r"x: .*not divisible by BlockSize"):
        dmlvk.depth_to_space(x, 3, device=device)
    with pytest.raises(ValueError, match=r"x: .*must be divisible by BlockSize"):
        dmlvk.space_to_depth(np.zeros((1, 1, 3, 4), np.uint8), 2, device=device)
    with pytest.raises(ValueError, match="order"):
        dmlvk.depth_to_space(x, 2, "RCD", device=device)
    with pytest.raises(TypeError, match="anything numpy.asarray takes"):
        dmlvk.depth_to_space(object(), 1, device=device)
    with pytest.raises(ValueError, match="empty"):
        dmlvk.depth_to_space(np.zeros((1, 4, 0, 1), np.float32), 2, device=device)


# ---- DirectML-shaped API: bindings ---------------------------------------------------------------

def test_device_buffers_chain_without_host_round_trip(device, rng):
    x = rng.integers(0, 255, (2, 8, 3, 5), dtype=np.uint8)
    dt = DataType.UINT8
    d2s = device.create_operator(dmlvk.DepthToSpace1Desc(
        TensorDesc(dt, x.shape), TensorDesc(dt, (2, 2, 6, 10)), 2, DepthSpaceOrder.COLUMN_ROW_DEPTH))
    s2d = device.create_operator(dmlvk.SpaceToDepth1Desc(
        TensorDesc(dt, (2, 2, 6, 10)), TensorDesc(dt, x.shape), 2, DepthSpaceOrder.COLUMN_ROW_DEPTH))
    a = device.upload(x)
    mid = device.buffer(d2s.output_descs[0].total_bytes)
    back = device.buffer(a.nbytes)
    d2s.execute(inputs=[a], outputs=[mid])
    s2d.execute(inputs=[mid], outputs=[back])
    assert np.array_equal(back.numpy(np.uint8, x.shape), x)
    assert np.array_equal(mid.numpy(np.uint8, (2, 2, 6, 10)), reference.depth_to_space(x, 2, "CRD"))
    # a host output for a device input, and re-execution with the same bindings
    host = np.zeros(x.shape, np.uint8)
    for _ in range(2):
        s2d.execute(inputs=[mid], outputs=[host])
        assert np.array_equal(host, x)


def test_binding_errors(device):
    dt = DataType.FLOAT32
    op = device.create_operator(dmlvk.DepthToSpaceDesc(TensorDesc(dt, (1, 4, 2, 2)), TensorDesc(dt, (1, 1, 4, 4)), 2))
    x = np.zeros((1, 4, 2, 2), np.float32)
    with pytest.raises(ValueError, match="takes 1 inputs and 1 outputs"):
        op.execute(inputs=[x, x], outputs=[np.zeros(16, np.float32)])
    with pytest.raises(ValueError, match="TotalTensorSizeInBytes"):
        op.execute(inputs=[x[:, :2]], outputs=[np.zeros(16, np.float32)])
    with pytest.raises(ValueError, match="TotalTensorSizeInBytes"):
        op.execute(inputs=[x], outputs=[np.zeros(15, np.float32)])
    with pytest.raises(ValueError, match="in place"):
        op.execute(inputs=[x], outputs=[x.reshape(-1)])
    with pytest.raises(ValueError, match="read-only"):
        ro = np.zeros(16, np.float32)
        ro.flags.writeable = False
        op.execute(inputs=[x], outputs=[ro])
    with pytest.raises(ValueError, match="contiguous"):
        op.execute(inputs=[np.zeros((1, 4, 2, 4), np.float32)[..., ::2]], outputs=[np.zeros(16, np.float32)])
    with pytest.raises(ValueError, match="required"):
        op.execute(inputs=[None], outputs=[np.zeros(16, np.float32)])
    with pytest.raises(TypeError, match="numpy array or a dmlvk.Buffer"):
        op.execute(inputs=[[0.0] * 16], outputs=[np.zeros(16, np.float32)])
    buf = device.buffer(64)
    with pytest.raises(ValueError, match="in place"):
        op.execute(inputs=[buf], outputs=[buf])


def test_owned_by_dml_input_is_bound_at_initialization(device, rng):
    dt = DataType.INT32
    x = rng.integers(-9, 9, (1, 4, 2, 3), dtype=np.int32)
    op = device.create_operator(dmlvk.DepthToSpace1Desc(
        TensorDesc(dt, x.shape, flags=dmlvk.TensorFlags.OWNED_BY_DML), TensorDesc(dt, (1, 1, 4, 6)), 2,
        DepthSpaceOrder.DEPTH_COLUMN_ROW))
    out = np.zeros((1, 1, 4, 6), np.int32)
    with pytest.raises(ValueError, match="initialize"):
        op.execute(inputs=[None], outputs=[out])
    op.initialize([x])
    with pytest.raises(ValueError, match="OWNED_BY_DML"):
        op.execute(inputs=[x], outputs=[out])
    x_copy = x.copy()
    x[:] = 0                      # the snapshot, not the array, is what runs
    op.execute(inputs=[None], outputs=[out])
    assert np.array_equal(out, reference.depth_to_space(x_copy, 2))


SUB_WORD = [DataType.UINT8, DataType.INT8, DataType.FLOAT16, DataType.UINT16]


@pytest.mark.parametrize("data_type", SUB_WORD, ids=lambda t: t.name)
@pytest.mark.parametrize("kinds", [("nhwc", "nonnested"), ("padded", "nonnested")], ids=lambda k: f"{k[0]}-to-{k[1]}")
def test_element_variants_agree(device, portable_device, data_type, kinds):
    """Sub-word elements in layouts without a nesting order: 8/16-bit stores where the device has
    8/16-bit storage, atomics on words in the portable variant; both against the reference on the
    same inputs."""
    storage = device.capabilities.storage_8bit if data_type.bits == 8 else device.capabilities.storage_16bit
    atomics = 0
    for desc_cls in (dmlvk.DepthToSpace1Desc, dmlvk.SpaceToDepth1Desc):
        for order in ORDERS:
            for i in range(3):
                seed = [data_type.bits, int(desc_cls is dmlvk.DepthToSpace1Desc), order.value, i, len(kinds[0])]
                descs = [run_case(dev, np.random.default_rng(seed), desc_cls, data_type, 2, order, *kinds)
                         for dev in (device, portable_device)]
                fast, portable = (d.kernel(dev.capabilities) for d, dev in zip(descs, (device, portable_device)))
                assert portable.defines == ()
                if C(portable)["MODE"] != 2:
                    continue      # the random shape made the layout nested after all (MODE 1)
                atomics += 1
                if storage:
                    assert fast.defines == (("SMALL_STORE_BITS", data_type.bits),) and C(fast)["MODE"] == 3
    assert atomics >= 4


# ---- the numpy level takes what numpy takes ---------------------------------------------------------

class _HasArray:
    def __init__(self, a):
        self.a = a

    def __array__(self, dtype=None, copy=None):
        return self.a


def test_numpy_level_takes_lists_and_array_likes(device):
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 2, 2)
    want = reference.depth_to_space(x, 2, "DCR")
    assert np.array_equal(dmlvk.depth_to_space(x.tolist(), 2, device=device), want.astype(np.float64))
    assert np.array_equal(dmlvk.depth_to_space(_HasArray(x), 2, device=device), want)
    with pytest.raises(TypeError, match="dmlvk.Buffer"):
        dmlvk.depth_to_space(device.upload(x), 2, device=device)


@pytest.mark.parametrize("dtype", ["bool", "complex64", "datetime64[s]", "bfloat16"])
def test_depth_space_moves_any_dtype_of_1_2_4_or_8_bytes(device, dtype):
    if dtype == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        dt = np.dtype(ml_dtypes.bfloat16)
    else:
        dt = np.dtype(dtype)
    bits = np.random.default_rng(0).integers(0, 256, 2 * 8 * 3 * 4 * dt.itemsize, dtype=np.uint8)
    if dt == np.bool_:
        bits &= 1
    x = bits.view(dt).reshape(2, 8, 3, 4)
    y = dmlvk.depth_to_space(x, 2, "CRD", device=device)
    assert y.dtype == dt and y.shape == (2, 2, 6, 8)
    assert np.array_equal(y.view(f"u{dt.itemsize}"), reference.depth_to_space(x.view(f"u{dt.itemsize}"), 2, "CRD"))
    z = dmlvk.space_to_depth(y, 2, "CRD", device=device)
    assert np.array_equal(z.view(f"u{dt.itemsize}"), x.view(f"u{dt.itemsize}"))


def test_depth_space_empty_batch_and_out(device):
    assert dmlvk.depth_to_space(np.zeros((0, 8, 3, 3), np.int16), 2, device=device).shape == (0, 2, 6, 6)
    with pytest.raises(ValueError, match="empty dimension"):
        dmlvk.depth_to_space(np.zeros((1, 0, 3, 3), np.int16), 2, device=device)
    x = np.arange(64, dtype=np.float32).reshape(1, 16, 2, 2)
    out = np.empty((1, 4, 4, 4), np.float32)
    assert dmlvk.depth_to_space(x, 2, device=device, out=out) is out
    assert np.array_equal(out, reference.depth_to_space(x, 2))
    with pytest.raises(ValueError, match="out has shape"):
        dmlvk.depth_to_space(x, 2, device=device, out=np.empty((1, 4, 4, 5), np.float32))
    with pytest.raises(ValueError, match="dtype float64"):
        dmlvk.depth_to_space(x, 2, device=device, out=np.empty((1, 4, 4, 4), np.float64))
    with pytest.raises(TypeError, match="out must be a numpy array"):
        dmlvk.space_to_depth(x, 2, device=device, out=[0])


@pytest.mark.parametrize("eb", [1, 2, 4, 8])
def test_channel_last_path_every_order_block_and_width(device, rng, eb):
    """Packed NHWC tensors take depth_space_nhwc.comp (whole 16/8/4-byte vectors of an output
    pixel's channels) where the channels split into such vectors, the general shader otherwise;
    both operators, both orders, B = 1-4, against the reference. COLUMN_ROW_DEPTH depth-to-space
    of 1- and 2-byte elements with B = 3 moves 4-byte vectors of all block positions at once, or
    takes depth_space_lanes.comp (uint8 with whole 8-byte row segments), as do uint8 space-to-depth
    with B = 3 and COLUMN_ROW_DEPTH B = 4, uint8 DEPTH_COLUMN_ROW depth-to-space with B = 2 and
    uint16 COLUMN_ROW_DEPTH space-to-depth with B = 3."""
    dt = {1: DataType.UINT8, 2: DataType.UINT16, 4: DataType.UINT32, 8: DataType.UINT64}[eb]
    taken = odd_blocks = lanes = 0
    for d2s in (True, False):
        for order in DepthSpaceOrder:
            for b in (1, 2, 3, 4):
                for oc in (1, 3, 4, 8, 16):
                    ishape = (2, oc * b * b, 3, 5) if d2s else (2, oc, 3 * b, 5 * b)
                    x = rng.integers(0, 2 ** (8 * eb) - 1, ishape, dtype=np.uint64).astype(dt.numpy_dtype)
                    n, c, h, w = ishape
                    cls = dmlvk.DepthToSpace1Desc if d2s else dmlvk.SpaceToDepth1Desc
                    ind = TensorDesc(dt, ishape, (h * w * c, 1, w * c, c))
                    n2, c2, h2, w2 = cls(ind, ind, b, order).output_sizes(ishape)
                    desc = cls(ind, TensorDesc(dt, (n2, c2, h2, w2), (h2 * w2 * c2, 1, w2 * c2, c2)), b, order)
                    k = desc.kernel(device.capabilities)
                    taken += k.shader in ("depth_space_nhwc", "depth_space_lanes")
                    lanes += k.shader == "depth_space_lanes"
                    if k.shader == "depth_space_nhwc" and C(k)["BLOCKS"] == 1 and b == 3:
                        assert eb > 2 or C(k)["VEC_BYTES"] == 4, k    # odd B, 1- and 2-byte elements: 4-byte vectors
                        odd_blocks += eb <= 2
                    elif k.shader == "depth_space_lanes" and d2s and b == 3:
                        odd_blocks += 1
                    src = np.zeros(desc.input_tensor.total_bytes, np.uint8)
                    src[:x.nbytes] = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).reshape(-1).view(np.uint8)
                    dst = np.zeros(desc.output_tensor.total_bytes, np.uint8)
                    device.create_operator(desc).execute([src], [dst])
                    got = dst[:n2 * h2 * w2 * c2 * eb].view(dt.numpy_dtype).reshape(n2, h2, w2, c2).transpose(0, 3, 1, 2)
                    fn = reference.depth_to_space if d2s else reference.space_to_depth
                    assert np.array_equal(got, fn(x, b, "DCR" if order == 0 else "CRD")), (d2s, order, b, oc)
    assert taken >= 40
    assert eb > 2 or odd_blocks == 3, odd_blocks         # COLUMN_ROW_DEPTH, 4, 8 and 16 channels
    # B = 3: 8 and 16 channels (uint16: 4 and 8) of both orders and COLUMN_ROW_DEPTH depth-to-space;
    # B = 4: 4 and 8 channels; uint8 DEPTH_COLUMN_ROW depth-to-space with B = 2: 16 channels (8
    # make 16-byte row segments, which _row_segments takes; 4 make 8-byte runs, which go through tiles)
    assert lanes == {1: 9, 2: 2}.get(eb, 0), lanes


@pytest.mark.parametrize("dt,b", [(DataType.FLOAT64, 4), (DataType.UINT32, 8)], ids=["float64-B4", "uint32-B8"])
def test_rows_path_32_byte_chunks_move_in_halves(portable_device, rng, dt, b):
    """One element per piece, 32-byte chunks: two invocations per chunk, each a 16-byte half (the
    portable variant; with subgroup shuffles B = 4 pairs invocations instead, see below)."""
    device = portable_device
    for d2s in (True, False):
        for order in DepthSpaceOrder:
            ishape = (2, 3 * b * b, 4, 6) if d2s else (2, 3, 4 * b, 6 * b)
            x = rng.integers(0, 2 ** 31, ishape).astype(dt.numpy_dtype)
            cls = dmlvk.DepthToSpace1Desc if d2s else dmlvk.SpaceToDepth1Desc
            ind = TensorDesc(dt, ishape)
            desc = cls(ind, TensorDesc(dt, cls(ind, ind, b, order).output_sizes(ishape)), b, order)
            k = desc.kernel(device.capabilities)
            chunks = x.size * x.itemsize // 32
            assert k.shader == "depth_space_rows" and k.count == 2 * chunks
            y = np.zeros(desc.output_tensor.sizes, dt.numpy_dtype)
            device.create_operator(desc).execute([x], [y])
            fn = reference.depth_to_space if d2s else reference.space_to_depth
            assert np.array_equal(y, fn(x, b, "DCR" if order == 0 else "CRD")), (d2s, order)


@pytest.mark.parametrize("data_type", [DataType.UINT8, DataType.FLOAT16, DataType.FLOAT32, DataType.INT64],
                         ids=lambda t: t.name)
def test_rows_path_paired_b4_chunks(device, portable_device, rng, data_type):
    """B = 4 with subgroup shuffles: 8-byte pieces, a 32-byte chunk per invocation, the halves
    exchanged within lane pairs. 420 chunks: several workgroups, the last one and its last
    subgroup partly empty; packed and row-pitched (gaps intact); both operators and orders; the
    same cases without shuffles take 4-byte pieces (or halves of chunks)."""
    if not device.capabilities.has(SUBGROUP_SHUFFLE):
        pytest.skip("the device has no subgroup shuffles")
    eb = data_type.bits // 8
    k = 8 // eb                                       # elements per 8-byte piece
    for d2s, desc_cls in ((True, dmlvk.DepthToSpace1Desc), (False, dmlvk.SpaceToDepth1Desc)):
        for order in ORDERS:
            depth, space = (1, 16 * 5, 7, 3 * k), (1, 5, 28, 12 * k)
            shape, out_sizes = (depth, space) if d2s else (space, depth)
            for in_kind, out_kind in (("packed", "packed"), (_row_pitched(shape, 8 * k), _row_pitched(out_sizes, 16 * k))):
                for dev in (device, portable_device):
                    desc = run_case(dev, rng, desc_cls, data_type, 4, order, in_kind, out_kind, shape=shape)
                    kern = desc.kernel(dev.capabilities)
                    assert kern.shader == "depth_space_rows", kern
                    if dev is device:
                        assert kern.defines == (("PAIRED", 1),) and C(kern)["K"] == k and kern.count == 420, kern
                    else:
                        assert kern.defines == () and kern.count == 840, kern     # 16-byte chunks or halves


@pytest.mark.parametrize("data_type", [DataType.UINT8, DataType.FLOAT16, DataType.FLOAT32, DataType.INT64],
                         ids=lambda t: t.name)
def test_rows_path_block_row_major_space_to_depth(device, portable_device, rng, data_type):
    """Space-to-depth with B = 3 / 4 of large inputs takes each channel's rows in block-row order
    (the thresholds lowered here): two images of several channels, packed and row-pitched (gaps
    intact), both orders, on the device and the portable one; the size thresholds per order; never
    for depth-to-space, B = 2 or staged chunks."""
    eb = data_type.bits // 8
    k = max(1, 8 // eb)
    row_major = lambda desc, **tuning: C(desc.kernel(device.capabilities, tuning=tuning))["BLOCK_ROW_MAJOR"]
    space, depth = (2, 3, 12, 12 * k), (2, 48, 3, 3 * k)
    small = dmlvk.SpaceToDepth1Desc(TensorDesc(data_type, space), TensorDesc(data_type, depth), 4,
                                    DepthSpaceOrder.COLUMN_ROW_DEPTH)
    assert not row_major(small)
    assert row_major(small, ROWS_BLOCK_ROW_MAJOR_FROM=small.input_tensor.total_bytes)
    dcr = dmlvk.SpaceToDepth1Desc(small.input_tensor, small.output_tensor, 4, DepthSpaceOrder.DEPTH_COLUMN_ROW)
    assert not row_major(dcr)
    assert row_major(dcr, ROWS_BLOCK_ROW_MAJOR_DCR_ABOVE=dcr.input_tensor.total_bytes - 1)
    low = dict(ROWS_BLOCK_ROW_MAJOR_FROM=0, ROWS_BLOCK_ROW_MAJOR_DCR_ABOVE=0)
    for b in (3, 4):
        space, depth = (2, 3, 5 * b, 4 * b * k), (2, 3 * b * b, 5, 4 * k)
        for order in ORDERS:
            for in_kind, out_kind in (("packed", "packed"), (_row_pitched(space, 2 * b * k), _row_pitched(depth, 4 * k))):
                for dev in (device, portable_device):
                    desc = run_case(dev, rng, dmlvk.SpaceToDepth1Desc, data_type, b, order, in_kind, out_kind,
                                    shape=space, tuning=low)
                    kern = desc.kernel(dev.capabilities, tuning=low)
                    assert kern.shader == "depth_space_rows" and C(kern)["BLOCK_ROW_MAJOR"] == 1, kern
        d2s = dmlvk.DepthToSpace1Desc(TensorDesc(data_type, depth), TensorDesc(data_type, space), b, order)
        assert not row_major(d2s, **low)
    space = (1, 2, 8, 8 * k)
    s2d2 = dmlvk.SpaceToDepth1Desc(TensorDesc(data_type, space), TensorDesc(data_type, (1, 8, 4, 4 * k)), 2,
                                   DepthSpaceOrder.COLUMN_ROW_DEPTH)
    assert not row_major(s2d2, **low)
    if eb >= 4:                         # staged chunks keep their order
        low["ROWS_STAGED_S2D_ABOVE"] = 0
        staged = dmlvk.SpaceToDepth1Desc(TensorDesc(data_type, (1, 2, 9, 48)), TensorDesc(data_type, (1, 18, 3, 16)), 3,
                                         DepthSpaceOrder.COLUMN_ROW_DEPTH)
        kern = staged.kernel(device.capabilities, tuning=low)
        assert kern.variant == "rows.staged" and C(kern)["BLOCK_ROW_MAJOR"] == 0, kern


def _nhwc_gapped(sizes, pixel_pad, row_pad, image_pad):
    """Unit C stride with gaps after every pixel, row and image (element counts)."""
    n, c, h, w = sizes
    px = c + pixel_pad
    row = w * px + row_pad
    return (h * row + image_pad, 1, row, px)


@pytest.mark.parametrize("data_type", [DataType.UINT8, DataType.FLOAT16, DataType.FLOAT32, DataType.FLOAT64],
                         ids=lambda t: t.name)
@pytest.mark.parametrize("b", [3, 5, 6])
def test_rows_path_chunks_of_other_block_sizes(device, rng, data_type, b):
    """Block sizes whose chunks cannot be 16 or 32 bytes (3, 5, 6) move 8- or 4-byte pieces into
    chunks of under 8 words; packed and row-pitched layouts (gaps intact), against the reference."""
    eb = data_type.bits // 8
    taken = 0
    for d2s, desc_cls in ((True, dmlvk.DepthToSpace1Desc), (False, dmlvk.SpaceToDepth1Desc)):
        for order in ORDERS:
            for w in (8, 4, 5):
                depth = (2, 2 * b * b, 3, w)
                space = (2, 2, 3 * b, w * b)
                shape, out_sizes = (depth, space) if d2s else (space, depth)
                pad = 8 * b * 8     # a multiple of every piece count times b
                for in_kind, out_kind in (("packed", "packed"), (_row_pitched(shape, pad), _row_pitched(out_sizes, 2 * pad))):
                    desc = run_case(device, rng, desc_cls, data_type, b, order, in_kind, out_kind, shape=shape)
                    k = desc.kernel()
                    fits = any(pb % eb == 0 and pb // 4 * b < 8 and w % (pb // eb) == 0 for pb in (8, 4))
                    assert (k.shader == "depth_space_rows") == fits, (desc, k)
                    taken += fits
    possible = any(pb % eb == 0 and pb // 4 * b < 8 for pb in (8, 4))    # float64 B = 5, 6: too wide
    assert taken >= 8 if possible else taken == 0


@pytest.mark.parametrize("eb", [1, 2, 4, 8])
def test_channel_last_path_with_gaps(device, rng, eb):
    """NHWC tensors with gaps after pixels, rows and images keep the channel-last path where every
    pixel starts on a whole vector (always, for 4- and 8-byte elements); the gaps of the output are
    left as they were."""
    dt = {1: DataType.UINT8, 2: DataType.FLOAT16, 4: DataType.FLOAT32, 8: DataType.INT64}[eb]
    taken = 0
    for desc_cls in (dmlvk.DepthToSpace1Desc, dmlvk.SpaceToDepth1Desc):
        d2s = desc_cls is dmlvk.DepthToSpace1Desc
        for order in ORDERS:
            for b in (2, 3):
                oc = 16
                shape = (2, oc * b * b, 3, 4) if d2s else (2, oc, 3 * b, 4 * b)
                out_sizes = (2, oc, 3 * b, 4 * b) if d2s else (2, oc * b * b, 3, 4)
                for pads in ((16, 32, 48), (1, 0, 3)):
                    desc = run_case(device, rng, desc_cls, dt, b, order, _nhwc_gapped(shape, *pads),
                                    _nhwc_gapped(out_sizes, *pads), shape=shape)
                    shader = desc.kernel(device.capabilities).shader
                    assert (shader == "depth_space_nhwc") == (pads[0] == 16 or eb >= 4), (desc, shader)
                    taken += shader == "depth_space_nhwc"
    assert taken == (8 if eb < 4 else 16)


@pytest.mark.parametrize("data_type", [DataType.UINT8, DataType.FLOAT16, DataType.FLOAT32, DataType.FLOAT64],
                         ids=lambda t: t.name)
def test_rows_path_staged_chunks_across_workgroups(device, rng, data_type):
    """Chunks that are not 16-byte vectors are staged in shared memory a subgroup at a time:
    depth-to-space's always, space-to-depth's of 4- and 8-byte elements from a packed input (of
    more than ROWS_STAGED_S2D_ABOVE bytes; here of any size).
    Hundreds of chunks, a partial last workgroup, gaps between rows intact. Packed space sides
    move as runs of 16-byte vectors and a tail of words: rows of one 8-byte or one 4-byte piece
    give 273 chunks of 6 or 3 words, so the last run's word count is not a multiple of 4."""
    eb = data_type.bits // 8
    s2d = dmlvk.SpaceToDepth1Desc(TensorDesc(data_type, (1, 7, 39, 48)), TensorDesc(data_type, (1, 63, 13, 16)), 3,
                                  DepthSpaceOrder.DEPTH_COLUMN_ROW)
    assert C(s2d.kernel())["STAGED"] == 0                # small: each invocation loads its own chunk
    low = {"ROWS_STAGED_S2D_ABOVE": 0}
    widths = [16, max(1, 8 // eb)] + ([4 // eb] if eb <= 4 else [])
    for d2s, desc_cls in ((True, dmlvk.DepthToSpace1Desc), (False, dmlvk.SpaceToDepth1Desc)):
        for order in ORDERS:
            for w in widths:
                depth, space = (1, 9 * 7, 13, w), (1, 7, 39, 3 * w)
                shape, out_sizes = (depth, space) if d2s else (space, depth)
                for in_kind, out_kind in (("packed", "packed"), (_row_pitched(shape, 48), _row_pitched(out_sizes, 96))):
                    desc = run_case(device, rng, desc_cls, data_type, 3, order, in_kind, out_kind, shape=shape,
                                    tuning=low)
                    k = desc.kernel(tuning=low)
                    assert k.shader == "depth_space_rows" and k.count > 256, k
                    assert k.count % 256 if w == 16 else k.count == 273, k
                    packed = (out_kind if d2s else in_kind) == "packed"      # the space side
                    staged = d2s or (eb >= 4 and packed)
                    assert C(k)["STAGED"] == staged and C(k)["SUBGROUP_STAGED"] == staged, k
                    # a packed space side moves as runs of 16-byte vectors (FLAT), one with gaps
                    # chunk by chunk
                    assert C(k)["FLAT"] == (staged and packed), k


@pytest.mark.parametrize("eb", [1, 2])
def test_channel_last_dcr_runs_of_narrow_pixels(device, rng, eb):
    """DEPTH_COLUMN_ROW on packed NHWC tensors whose space-side pixels are narrower than a vector:
    a contiguous run is a block row of BLOCK such pixels, so both operators move whole vectors of
    BLOCK * C * element bytes (up to 16), not one pixel's bytes; runs narrower than 16 bytes go
    through shared-memory tiles (move_tiled) unless tiles are off; against the reference."""
    dt = {1: DataType.UINT8, 2: DataType.FLOAT16}[eb]
    order = DepthSpaceOrder.DEPTH_COLUMN_ROW
    for desc_cls in (dmlvk.DepthToSpace1Desc, dmlvk.SpaceToDepth1Desc):
        d2s = desc_cls is dmlvk.DepthToSpace1Desc
        for b, cs in ((2, 2), (4, 1), (4, 2), (2, 4), (4, 4)):
            if cs * eb > 4:
                continue
            depth, space = (2, cs * b * b, 3, 8), (2, cs, 3 * b, 8 * b)
            shape, out_sizes = (depth, space) if d2s else (space, depth)
            for tiled in (True, False):
                tuning = {} if tiled else {"nhwc.tiled": False}
                desc = run_case(device, rng, desc_cls, dt, b, order, _nhwc_gapped(shape, 0, 0, 0),
                                _nhwc_gapped(out_sizes, 0, 0, 0), shape=shape, tuning=tuning)
                k = desc.kernel(device.capabilities, tuning=tuning)
                vec = min(16, b * cs * eb)
                if tiled and vec < 16:
                    assert k.variant == "nhwc.tiled", (desc, k)
                else:
                    assert k.shader == "depth_space_nhwc" and C(k)["VEC_BYTES"] == vec and k.variant != "nhwc.tiled", (desc, k)


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: o.name)
@pytest.mark.parametrize("eb", [1, 2, 4])
def test_channel_last_row_segments(device, rng, eb, order):
    """Depth-to-space into abutting output pixels whose BLOCK-pixel row segments are 16 bytes
    moves one input pixel per invocation, its output as BLOCK row segments (move_blocks with SEG),
    both orders: B = 2 and 4, packed and with gaps after input pixels and output rows; against the
    reference, gaps intact, and the same as the paths without segments."""
    dt = {1: DataType.UINT8, 2: DataType.FLOAT16, 4: DataType.FLOAT32}[eb]
    taken = 0
    for b in (2, 3, 4):
        for cs in (1, 2, 3, 4, 8):
            shape, out_sizes = (2, cs * b * b, 3, 8), (2, cs, 3 * b, 8 * b)
            segments = b * cs * eb == 16
            for gaps in (False, True):
                kinds = (_nhwc_gapped(shape, 16 * gaps, 0, 0), _nhwc_gapped(out_sizes, 0, 64 * gaps, 0))
                desc = run_case(device, rng, dmlvk.DepthToSpace1Desc, dt, b, order, *kinds, shape=shape)
                k = desc.kernel(device.capabilities)
                assert (k.variant == "nhwc.segments") == segments, (desc, k)
                if segments:
                    taken += 1
                    assert (C(k)["VEC_BYTES"], C(k)["BLOCKS"], C(k)["SEG"]) == (16, 1, cs) and k.count == 2 * 3 * 8, k
                    other = desc.kernel(device.capabilities, tuning={"nhwc.segments": False})
                    assert other.variant != "nhwc.segments"
                    run_case(device, rng, dmlvk.DepthToSpace1Desc, dt, b, order, *kinds, shape=shape,
                             tuning={"nhwc.segments": False})
    assert taken == 4, taken


@pytest.mark.parametrize("eb", [1, 2])
def test_channel_last_crd_staged(device, rng, eb):
    """COLUMN_ROW_DEPTH of 1- and 2-byte elements with abutting space-side pixels goes through
    shared-memory tiles of space-side rows (move_staged) where it measured faster: 1-byte elements
    but for odd-B depth-to-space, 2-byte ones with B = 2 and depth-to-space with B = 4 (16-byte
    output row segments take move_blocks); with an odd B the depth side goes through the tile
    too, in tiles wide enough for a unit an invocation; with an even B and 16-byte vectors the
    vectors' words rotate between tile and memory. Several tiles a row with a partial last one,
    packed and with gaps after space-side rows and depth-side pixels; against the reference, gaps
    intact, and the same as the paths without tiles."""
    dt = {1: DataType.UINT8, 2: DataType.FLOAT16}[eb]
    order = DepthSpaceOrder.COLUMN_ROW_DEPTH
    tile_bytes = TABLE.tuning["STAGED_TILE_BYTES"]
    taken = ragged = rotated = filled = 0
    for desc_cls in (dmlvk.SpaceToDepth1Desc, dmlvk.DepthToSpace1Desc):
        d2s = desc_cls is dmlvk.DepthToSpace1Desc
        for b in (2, 3, 4):
            for cs in (2, 4, 8, 12, 160):       # 160: pixels wider than a tile's bytes
                wd = 3 + tile_bytes // (b * b * cs * eb)        # past one tile
                for gaps in (False, True):
                    space_sizes, depth_sizes = (2, cs, 2 * b, wd * b), (2, cs * b * b, 2, wd)
                    space = (space_sizes, _nhwc_gapped(space_sizes, 0, 64 * gaps, 0))   # pixels abut
                    depth = (depth_sizes, _nhwc_gapped(depth_sizes, 16 * gaps, 0, 0))   # gaps after pixels
                    (shape, in_strides), (_, out_strides) = (depth, space) if d2s else (space, depth)
                    desc = run_case(device, rng, desc_cls, dt, b, order, in_strides, out_strides, shape=shape)
                    k = desc.kernel(device.capabilities)
                    segments = d2s and b * cs * eb == 16
                    whole = cs * eb % 4 == 0
                    wins = TABLE["nhwc.staged"].wins.test(desc)          # the rows' rules
                    lanes = not segments and TABLE["nhwc.lanes"].wins.test(desc) and runs(desc, "nhwc.lanes")
                    assert (k.variant == "nhwc.lanes") == lanes, (desc, k)
                    assert (k.variant == "nhwc.staged") == (wins and whole and not segments and not lanes), (desc, k)
                    if k.variant != "nhwc.staged":
                        continue
                    taken += 1
                    xt = P(k)["tile_pixels"]
                    ragged += wd > xt and wd % xt != 0
                    # the space side's rows, and with an odd B the depth side's pixels
                    assert k.count % k.local_size == 0 and C(k)["TILE_WORDS"] * 4 <= max(tile_bytes * 3 // 2, b * b * cs * eb + 4 * b) * (1 + b % 2)
                    assert C(k)["DEPTH_TILE"] == b % 2, k
                    # even B with 16-byte vectors: rows whole vectors apart, their words rotated;
                    # else rows an odd number of words apart
                    row_words = xt * b * cs * eb // 4
                    rotate = b % 2 == 0 and C(k)["VEC_BYTES"] == 16
                    assert C(k)["ROTATE"] == rotate and P(k)["tile_pitch"] == (row_words if rotate else row_words | 1), k
                    rotated += rotate
                    # odd B, where wide enough: a unit (a space-side word) for every invocation
                    if b % 2 and wd * cs * eb >= 4 * k.local_size:
                        assert xt * cs * eb >= 4 * k.local_size, k
                        filled += 1
                    no_tiles = {"nhwc.staged": False}
                    assert desc.kernel(device.capabilities, tuning=no_tiles).variant != "nhwc.staged"
                    run_case(device, rng, desc_cls, dt, b, order, in_strides, out_strides, shape=shape, tuning=no_tiles)
    # uint8: the packed B = 4 space-to-depth cases of 4 and 8 channels and the B = 3 one of 8
    # channels take depth_space_lanes.comp instead (two of them rotated)
    assert taken == (33 if eb == 1 else 26) and ragged >= 6, (taken, ragged)
    assert rotated == (18 if eb == 1 else 22) and filled == (2 if eb == 1 else 0), (rotated, filled)
    # the odd-B cases it does not take, forced: the depth side through the tile, both directions
    forced = 0
    for desc_cls in (dmlvk.SpaceToDepth1Desc, dmlvk.DepthToSpace1Desc):
        for cs in (4, 8):
            for gaps in (False, True):
                space_sizes, depth_sizes = (2, cs, 6, 3 * 70), (2, cs * 9, 2, 70)
                space = (space_sizes, _nhwc_gapped(space_sizes, 0, 64 * gaps, 0))
                depth = (depth_sizes, _nhwc_gapped(depth_sizes, 16 * gaps, 0, 0))
                d2s = desc_cls is dmlvk.DepthToSpace1Desc
                (shape, in_strides), (_, out_strides) = (depth, space) if d2s else (space, depth)
                desc = run_case(device, rng, desc_cls, dt, 3, order, in_strides, out_strides, shape=shape,
                                force="nhwc.staged")
                k = desc.kernel(device.capabilities, force="nhwc.staged")
                forced += k.variant == "nhwc.staged" and C(k)["DEPTH_TILE"] == 1
                assert P(k)["tile_pixels"] * cs * eb >= 4 * k.local_size, k      # a unit for every invocation
    assert forced == 8, forced


@pytest.mark.parametrize("eb", [1, 2, 4, 8])
def test_channel_last_tiles(device, rng, eb):
    """move_tiled (shared-memory tiles of XT depth-side pixels and their BLOCK space-side row
    segments) on every channel-last case it can take, forced: both operators, both orders, B = 2-4,
    space-side channels that fill whole vectors or not, rows of one tile, of several with a partial
    last one, packed and with gaps after pixels, rows and images; against the reference, gaps
    intact. Depth-to-space of 4-byte elements from pixels of 2^k >= 32 words swizzles the tile."""
    dt = {1: DataType.UINT8, 2: DataType.FLOAT16, 4: DataType.FLOAT32, 8: DataType.INT64}[eb]
    taken = ragged = swizzled = 0
    for desc_cls in (dmlvk.DepthToSpace1Desc, dmlvk.SpaceToDepth1Desc):
        d2s = desc_cls is dmlvk.DepthToSpace1Desc
        for order in ORDERS:
            for b in (2, 3, 4):
                for cs in (3, 4, 8):
                    per_tile = max(1, TABLE.tuning["TILED_BYTES"] // (cs * b * b * eb))
                    for wd in (5, per_tile + 5):
                        depth, space = (2, cs * b * b, 2, wd), (2, cs, 2 * b, wd * b)
                        shape, out_sizes = (depth, space) if d2s else (space, depth)
                        for pads in ((0, 0, 0), (8, 16, 4)):
                            strides = _nhwc_gapped(shape, *pads), _nhwc_gapped(out_sizes, pads[0] * 2, 0, 12)
                            desc = desc_cls(TensorDesc(dt, shape, strides[0]), TensorDesc(dt, out_sizes, strides[1]), b, order)
                            if not runs(desc, "nhwc.tiled", device):
                                continue
                            k = desc.kernel(device.capabilities, force="nhwc.tiled")
                            taken += 1
                            xt = P(k)["tile_pixels"]
                            ragged += wd % xt != 0 and wd > xt
                            assert k.count % k.local_size == 0 and C(k)["TILE_WORDS"] * 4 <= TABLE.tuning["TILED_MAX_BYTES"], k
                            words = cs * b * b * eb // 4
                            swizzle = d2s and eb == 4 and C(k)["VEC_BYTES"] == 16 and words >= 32 and words & (words - 1) == 0
                            assert C(k)["SWIZZLE"] == (words.bit_length() - 1 if swizzle else 0), k
                            swizzled += swizzle
                            run_case(device, rng, desc_cls, dt, b, order, *strides, shape=shape, force="nhwc.tiled")
    assert taken >= 90 and ragged >= 20 and swizzled == (24 if eb == 4 else 0), (taken, ragged, swizzled)


@pytest.mark.parametrize("dt", [DataType.FLOAT16, DataType.FLOAT32, DataType.FLOAT64], ids=lambda t: t.name)
def test_channel_last_dcr_input_order(device, rng, dt):
    """DEPTH_COLUMN_ROW depth-to-space through move_dcr runs in the input's order (IN_ORDER) for
    2-, 4- and 8-byte elements, float64 with B = 2 aside; B = 2, 3, 4, channel runs of one or
    more vectors, packed and with gaps after rows and images; against the reference, gaps intact,
    and the same with the output's order."""
    eb, order, taken = dt.bits // 8, DepthSpaceOrder.DEPTH_COLUMN_ROW, 0
    for b in (2, 3, 4):
        for oc in (16 // eb, 32 // eb):
            for gaps in (False, True):
                depth_sizes, space_sizes = (2, oc * b * b, 3, 5), (2, oc, 3 * b, 5 * b)
                ins = _nhwc_gapped(depth_sizes, 0, 8 * gaps, 24 * gaps)
                outs = _nhwc_gapped(space_sizes, 0, 16 * gaps, 8 * gaps)
                for in_order in (True, False):
                    tuning = {} if in_order else {"nhwc.input_order": False}
                    desc = run_case(device, rng, dmlvk.DepthToSpace1Desc, dt, b, order, ins, outs, shape=depth_sizes,
                                    tuning=tuning)
                    k = desc.kernel(device.capabilities, tuning=tuning)
                    assert k.variant in ("nhwc.direct", "nhwc.input_order"), (desc, k)
                    assert C(k)["IN_ORDER"] == (in_order and not (eb == 8 and b == 2)), k
                    taken += C(k)["IN_ORDER"]
    assert taken == (8 if eb == 8 else 12), taken


@pytest.mark.parametrize("dt", [DataType.UINT8, DataType.FLOAT16, DataType.FLOAT32, DataType.INT64],
                         ids=lambda t: t.name)
def test_channel_last_s2d_input_order(device, rng, dt):
    """DEPTH_COLUMN_ROW space-to-depth through move_dcr runs in the input's order where the input's
    pixels abut and a block row's run of B pixels is whole 32-byte sectors, of 64 bytes or more
    or with B = 2 (a vector may span input pixels of a run); B = 2, 3, 4, runs of 1 to 8 sectors
    and narrower, with gaps after rows and images, and after pixels (then in the output's order);
    against the reference, gaps intact, and the same with the output's order."""
    eb, order, taken = dt.bits // 8, DepthSpaceOrder.DEPTH_COLUMN_ROW, 0
    for b in (2, 3, 4):
        for cs in sorted({max(1, 4 // eb), 8 // eb if eb <= 8 else 1, 16 // eb, 32 // eb} - {0}):
            for pixel_gap, gaps in ((0, False), (0, True), (4, True)):
                space_sizes, depth_sizes = (2, cs, 3 * b, 5 * b), (2, cs * b * b, 3, 5)
                ins = _nhwc_gapped(space_sizes, pixel_gap, 8 * gaps, 24 * gaps)
                outs = _nhwc_gapped(depth_sizes, 0, 16 * gaps, 8 * gaps)
                run = b * cs * eb
                want = pixel_gap == 0 and run % 32 == 0 and (run >= 64 or b == 2)
                for in_order in (True, False):
                    tuning = {} if in_order else {"nhwc.input_order": False}
                    desc = run_case(device, rng, dmlvk.SpaceToDepth1Desc, dt, b, order, ins, outs, shape=space_sizes,
                                    tuning=tuning)
                    k = desc.kernel(device.capabilities, tuning=tuning)
                    if k.variant not in ("nhwc.direct", "nhwc.input_order"):
                        continue                                    # lanes or tiles
                    assert C(k)["IN_ORDER"] == (want and in_order), (desc, k)
                    taken += C(k)["IN_ORDER"]
    assert taken >= 4, taken


@pytest.mark.parametrize("dt", [DataType.UINT8, DataType.FLOAT16], ids=lambda t: t.name)
def test_channel_last_lanes(device, rng, dt):
    """depth_space_lanes.comp (a depth-side pixel per invocation, stores through the subgroup's
    slice of shared memory), taken wherever it applies: both operators and orders, B = 2, 3, 4,
    channel counts whose row segments are whole 8-byte vectors, pixels up to
    LANES_MAX_PIXEL_BYTES; rows of 1 to 300 depth-side pixels (partial subgroups and workgroups,
    several workgroups a row); packed, and with gaps after rows and images (kept intact); against
    the reference. Pixels with gaps, too-wide pixels and unaligned rows take other kernels."""
    eb = dt.bits // 8
    taken, locals_ = 0, set()
    for desc_cls in (dmlvk.SpaceToDepth1Desc, dmlvk.DepthToSpace1Desc):
        d2s = desc_cls is dmlvk.DepthToSpace1Desc
        for order in DepthSpaceOrder:
            for b in (2, 3, 4):
                for cs in sorted({8 // eb, 16 // eb, 4, 24 // eb}):
                    if b * cs * eb % 8 or b * b * cs * eb > TABLE.tuning["LANES_MAX_PIXEL_BYTES"]:
                        continue
                    wd = int(rng.choice([1, 5, 37, 128, 300]))
                    gaps = bool(rng.integers(0, 2))
                    space_sizes, depth_sizes = (2, cs, 2 * b, wd * b), (2, cs * b * b, 2, wd)
                    space = (space_sizes, _nhwc_gapped(space_sizes, 0, 8 * gaps, 16 * gaps))
                    depth = (depth_sizes, _nhwc_gapped(depth_sizes, 0, 24 * gaps, 8 * gaps))
                    (shape, in_strides), (_, out_strides) = (depth, space) if d2s else (space, depth)
                    desc = run_case(device, rng, desc_cls, dt, b, order, in_strides, out_strides, shape=shape,
                                    force="nhwc.lanes")
                    k = desc.kernel(device.capabilities, force="nhwc.lanes")
                    assert k.shader == "depth_space_lanes", (desc, k)
                    taken += 1
                    locals_.add(k.local_size)
    assert taken >= 20 and locals_ == {64, 128}, (taken, locals_)      # 64: pixels over 128 bytes
    # where it does not apply (space-to-depth, B = 3, COLUMN_ROW_DEPTH)
    for c, pixel_pad, row_pad, why in ((8, 8, 0, "gaps between pixels"), (80, 0, 0, "pixels wider than LANES_MAX_PIXEL_BYTES"),
                                       (8, 0, 1, "rows not 8-byte aligned")):
        space_sizes, depth_sizes = (1, c, 9, 36), (1, c * 9, 3, 12)
        desc = dmlvk.SpaceToDepth1Desc(TensorDesc(dt, space_sizes, _nhwc_gapped(space_sizes, pixel_pad, row_pad, 0)),
                                       TensorDesc(dt, depth_sizes, _nhwc_gapped(depth_sizes, 0, 0, 0)), 3,
                                       DepthSpaceOrder.COLUMN_ROW_DEPTH)
        assert not runs(desc, "nhwc.lanes", device), why


def test_channel_last_tiles_where_they_win(device):
    """The measured choices (nhwc.tiled, nhwc.lanes): depth-to-space into output pixels with gaps,
    uint8 B = 3 DEPTH_COLUMN_ROW depth-to-space (runs narrower than 16 bytes) and COLUMN_ROW_DEPTH
    depth-to-space of 4- and 8-byte elements (float32 B = 2 aside) take tiles; uint8
    space-to-depth with B = 3 and COLUMN_ROW_DEPTH B = 4, uint8 COLUMN_ROW_DEPTH depth-to-space
    with B = 3 and DEPTH_COLUMN_ROW with B = 2, and float16 COLUMN_ROW_DEPTH space-to-depth with
    B = 3 take depth_space_lanes.comp;
    the benchmark's other channel-last cases keep the direct kernels."""
    from dmlvk_lab.cases import depth_space_cases, depth_space_desc
    tiles, lanes = set(), set()
    for case in depth_space_cases([64 << 20]):
        _, d2s, dt, b, order, _, kind = case
        if not kind.startswith("nhwc"):
            continue
        k = depth_space_desc(case).kernel(device.capabilities)
        if k.shader == "depth_space_nhwc" and C(k)["BLOCKS"] == 3:
            tiles.add((d2s, dt.bits // 8, b, order.name[:3], kind))
        if k.shader == "depth_space_lanes":
            lanes.add((d2s, dt.bits // 8, b, order.name[:3], kind))
    crd = {(True, eb, b, "COL", "nhwc") for eb in (4, 8) for b in (2, 3, 4)} - {(True, 4, 2, "COL", "nhwc")}
    dcr = {(True, 1, 3, "DEP", "nhwc")}
    gaps = {(True, eb, 2, o, "nhwc_gapped") for eb in (1, 4) for o in ("DEP", "COL")}
    assert tiles == crd | dcr | gaps, sorted(tiles ^ (crd | dcr | gaps))
    want = {(False, 1, 3, o, "nhwc") for o in ("DEP", "COL")} | {(False, 1, 4, "COL", "nhwc"), (True, 1, 3, "COL", "nhwc"),
                                                                 (True, 1, 2, "DEP", "nhwc"), (False, 2, 3, "COL", "nhwc")}
    assert lanes == want, sorted(lanes ^ want)
