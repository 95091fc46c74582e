"""conv.coopmat.halo.pair: two convolutions, a first layer of one input channel and the 3x3 layer that
alone reads it, as one kernel (ConvolutionPairOperator; the ONNX runner's QLinearConv -> QLinearConv).
Bit-exact against the reference applied twice and against the two operators run one after the other,
the cooperative matrices emulated where the device has none (lavapipe in CI)."""
import dataclasses

import numpy as np
import pytest

import dmlvk
from dmlvk import DataType, QuantizedLinearConvolutionDesc as Q, TensorDesc, reference
from dmlvk.enums import TensorFlags
from dmlvk.ops.quantized_conv import small_tensor_bytes
from dmlvk.ops.quantized_conv.pair import SECOND
from dmlvk.ops.quantized_conv.variants import TABLE, pair_plan
from dmlvk.onnx import InferenceSession
from dmlvk_lab import onnx_models as models
from dmlvk_lab.oracles import random_ints, run_onnxruntime

OWNED = (2, 3, 5)                  # a convolution's filter and zero points: OWNED_BY_DML
# the pair where it runs at all (PAIR_MAX_POSITIONS is 0: chosen only where a caller asks for it)
PAIR_ON = {"PAIR_MAX_POSITIONS": 1 << 20}
PAIR_OWNED = OWNED + tuple(SECOND + s for s in OWNED)


@pytest.fixture(scope="module")
def pair_device():
    """The device, its cooperative matrices emulated where it has none (lavapipe), conv.dot left out
    (so that the layers compiled alone take the cooperative-matrix kernels too) and the pair on."""
    dev = dmlvk.Device()
    if (16, 16, 32) not in dev.capabilities.cooperative_matrix("int8", "int8", "int32"):
        dev.capabilities = dev.capabilities.with_emulated_cooperative_matrix()
    if not dev.capabilities.integer_dot_product:
        pytest.skip(f"{dev.name} offers no shaderIntegerDotProduct (the pair's first layer needs it)")
    with dev.variants(tuning={"conv.dot": False, "conv.dot.nhwc": False, **PAIR_ON}):
        yield dev


def _zero_points(rng, dt, m, distinct):
    """Per-channel zero points: random (the window sums needed), or the value the int8 shift removes."""
    if distinct:
        return random_ints(rng, dt, (m,))
    return np.full(m, 0 if np.dtype(dt) == np.int8 else 128, dt)


def _case(rng, types, n, h, w, k1, pads1, m1, m2, pads2, distinct, out_kind):
    """(first, second, the first's raw bindings, the second's (past its input), the input, the expected
    output): random operands (the second's input zero point and scale its own, not the first's output's)."""
    x_dt, w1_dt, y1_dt, w2_dt, y2_dt = types
    D = DataType.from_numpy
    x = random_ints(rng, x_dt, (n, 1, h, w))
    w1 = random_ints(rng, w1_dt, (m1, 1) + k1)
    xzp1, wzp1, yzp1 = random_ints(rng, x_dt, ()), _zero_points(rng, w1_dt, m1, distinct), random_ints(rng, y1_dt, ())
    ws1, b1 = rng.uniform(0.002, 0.05, m1).astype(np.float32), rng.integers(-3000, 3000, m1).astype(np.int32)
    g1 = dict(strides=(1, 1), dilations=(1, 1), start_padding=pads1[:2], end_padding=pads1[2:])
    y1 = reference.quantized_linear_convolution(x, 0.02, xzp1, w1, ws1, wzp1, b1, 0.05, yzp1, np.dtype(y1_dt), **g1)
    _, _, h2, w2 = y1.shape
    w2t = random_ints(rng, w2_dt, (m2, m1, 3, 3))
    xzp2, wzp2, yzp2 = random_ints(rng, y1_dt, ()), _zero_points(rng, w2_dt, m2, distinct), random_ints(rng, y2_dt, ())
    ws2, b2 = rng.uniform(0.002, 0.05, m2).astype(np.float32), rng.integers(-3000, 3000, m2).astype(np.int32)
    g2 = dict(strides=(1, 1), dilations=(1, 1), start_padding=pads2[:2], end_padding=pads2[2:])
    want = reference.quantized_linear_convolution(y1, 0.04, xzp2, w2t, ws2, wzp2, b2, 0.3, yzp2, np.dtype(y2_dt), **g2)
    common = dict(input_zero_point=True, filter_zero_point=True, bias=True, output_zero_point=True,
                  owned_constants=True)
    first = Q.of(TensorDesc(D(x_dt), x.shape), TensorDesc(D(w1_dt), w1.shape), filter_scale_count=m1,
                 output_data_type=D(y1_dt), **common, **g1)
    second = Q.of(TensorDesc(D(y1_dt), y1.shape, (h2 * w2 * m1, 1, w2 * m1, m1)), TensorDesc(D(w2_dt), w2t.shape),
                  filter_scale_count=m2, output_data_type=D(y2_dt), **common, **g2)
    _, _, oh, ow = want.shape
    strides = {"packed": None, "nhwc": (oh * ow * m2, 1, ow * m2, m2),
               "nhwc_words": (oh * ow * (m2 + 4), 1, ow * (m2 + 4), m2 + 4)}[out_kind]
    second = dataclasses.replace(second, output_tensor=TensorDesc(D(y2_dt), want.shape, strides))
    b = lambda a: small_tensor_bytes(np.ascontiguousarray(a))
    raw1 = [b(x), b(np.float32(0.02)), b(xzp1.reshape(-1)), b(w1), b(ws1), b(wzp1), b(b1), b(np.float32(0.05)),
            b(yzp1.reshape(-1))]
    raw2 = [b(np.float32(0.04)), b(xzp2.reshape(-1)), b(w2t), b(ws2), b(wzp2), b(b2), b(np.float32(0.3)),
            b(yzp2.reshape(-1))]
    return first, second, raw1, raw2, want


def _run(device, op, raw, owned, out_desc) -> np.ndarray:
    """The operator initialized with raw's owned slots, executed over Buffers of the others."""
    op.initialize([a if i in owned else None for i, a in enumerate(raw)])
    out = device.buffer(out_desc.total_bytes)
    op.execute([None if i in owned or a is None else device.upload(a) for i, a in enumerate(raw)], [out])
    return out.numpy(np.uint8, (out_desc.total_bytes,))


def _read(raw: np.ndarray, desc, dtype, shape) -> np.ndarray:
    return np.lib.stride_tricks.as_strided(raw.view(dtype), shape, desc.effective_strides)


TYPES = [(np.uint8, np.int8, np.uint8, np.int8, np.uint8), (np.int8, np.uint8, np.int8, np.uint8, np.int8),
         (np.uint8, np.uint8, np.int8, np.int8, np.uint8)]


@pytest.mark.parametrize("lanes", [False, True], ids=["dot", "lanes"])
@pytest.mark.parametrize("types", TYPES, ids=lambda t: "x".join(np.dtype(d).name for d in t))
def test_pair_exact(pair_device, rng, types, lanes):
    """The pair against the reference applied twice and against the two layers compiled alone (the
    first's output written, the second reading it channels-last): 5x5, 3x4 and 1x1 first layers of 32
    channels (64 where the device's shared memory holds the window), the window sums of both layers
    needed or compiled out, paddings that keep or shrink the grids (tiles cut by the image's last rows
    and columns), two images, the second's output packed NCHW or channels-last (16 channels or four a
    store); the first layer on packed dot products and (PAIR_LANES) on the cooperative matrices, each
    subgroup's B tile gathered from the window, requantized in the accumulators' lanes."""
    # n, h, w, first's kernel, its padding, m1, m2, the second's padding, distinct zero points, output
    cases = [(1, 12, 40, (5, 5), (2, 2, 2, 2), 32, 32, (1, 1, 1, 1), False, "nhwc"),
             (2, 19, 70, (5, 5), (2, 2, 2, 2), 32, 32, (1, 1, 1, 1), True, "packed"),
             (1, 9, 35, (3, 4), (1, 0, 2, 1), 32, 20, (0, 1, 1, 1), True, "nhwc_words"),
             (2, 8, 33, (1, 1), (0, 0, 0, 0), 32, 16, (1, 1, 0, 0), True, "nhwc"),
             (1, 17, 36, (5, 5), (2, 2, 2, 2), 64, 32, (1, 1, 1, 1), True, "nhwc")]
    ran = 0
    for n, h, w, k1, pads1, m1, m2, pads2, distinct, out_kind in cases:
        first, second, raw1, raw2, want = _case(rng, types, n, h, w, k1, pads1, m1, m2, pads2, distinct, out_kind)
        with pair_device.variants(tuning={"PAIR_LANES": lanes, **PAIR_ON}):
            pair = first.compile_pair(pair_device, second)
        if pair is None:
            # only the 64-channel window may not fit (lavapipe: 32 KiB of shared memory)
            assert m1 == 64 and pair_device.capabilities.max_shared_memory < 49152
            continue
        ran += 1
        assert [k.variant for k in pair.kernels] == ["conv.coopmat.halo.pair"]
        assert TABLE["conv.coopmat.halo.pair"].constants(pair.kernels[0])["LANES"] == int(lanes)
        got = _read(_run(pair_device, pair, raw1 + raw2, PAIR_OWNED, second.output_tensor), second.output_tensor,
                    want.dtype, want.shape)
        assert np.array_equal(got, want), (n, h, w, k1, m1, m2, out_kind)
        # the two layers alone: the first's output channels-last, as the runner plans it otherwise
        _, m, h2, w2 = first.output_tensor.sizes
        first_cl = dataclasses.replace(first, output_tensor=TensorDesc(
            first.output_tensor.data_type, first.output_tensor.sizes, (h2 * w2 * m, 1, w2 * m, m)))
        mid = _run(pair_device, pair_device.create_operator(first_cl), raw1, OWNED, first_cl.output_tensor)
        two = pair_device.create_operator(second)
        assert two.kernels[-1].variant == "conv.coopmat.halo"
        alone = _run(pair_device, two, [mid] + raw2, OWNED, second.output_tensor)
        assert np.array_equal(_read(alone, second.output_tensor, want.dtype, want.shape), want)
    assert ran >= len(cases) - 1


def test_pair_plan_where_it_runs(pair_device, rng):
    """pair_plan: None by default (PAIR_MAX_POSITIONS 0); where it runs at all, None where the first
    layer has two input channels, a stride or dilation of 2, or a
    filter past 32 taps; where the second has groups or reads another type than the first writes;
    where the first's output has more than PAIR_MAX_POSITIONS positions (the boundary: 12 x 40); where
    the variant is left out; and compile_pair None where the filter is bound at execution."""
    types = TYPES[0]
    first, second, _, _, _ = _case(rng, types, 1, 12, 40, (5, 5), (2, 2, 2, 2), 32, 32, (1, 1, 1, 1), False, "nhwc")
    sel = lambda **tuning: TABLE.selection(pair_device.capabilities, tuning=dict(PAIR_ON, **tuning, **{"conv.dot": False}))
    assert pair_plan(first, second, sel()) is not None
    assert pair_plan(first, second, TABLE.selection(pair_device.capabilities)) is None     # by default
    assert pair_plan(first, second, sel(PAIR_MAX_POSITIONS=12 * 40)) is not None
    assert pair_plan(first, second, sel(PAIR_MAX_POSITIONS=12 * 40 - 1)) is None
    assert pair_plan(first, second, sel(**{"conv.coopmat.halo.pair": False})) is None
    for change in (dict(strides=(1, 2)), dict(dilations=(2, 1)), dict(group_count=2)):
        other = dataclasses.replace(first, **change)
        assert pair_plan(other, second, sel()) is None, change
    two_channels = dataclasses.replace(first, input_tensor=TensorDesc(DataType.UINT8, (1, 2, 12, 40)),
                                       filter_tensor=TensorDesc(DataType.INT8, (32, 2, 5, 5)))
    assert pair_plan(two_channels, second, sel()) is None
    wide = dataclasses.replace(first, filter_tensor=TensorDesc(DataType.INT8, (32, 1, 5, 7)),
                               end_padding=(2, 4))
    assert pair_plan(wide, second, sel()) is None                               # 35 taps
    signed_in = dataclasses.replace(second, input_tensor=dataclasses.replace(second.input_tensor,
                                                                             data_type=DataType.INT8))
    assert pair_plan(first, signed_in, sel()) is None
    grouped = dataclasses.replace(second, filter_tensor=TensorDesc(DataType.INT8, (32, 16, 3, 3)), group_count=2)
    assert pair_plan(first, grouped, sel()) is None
    bound = dataclasses.replace(first, filter_tensor=dataclasses.replace(first.filter_tensor, flags=TensorFlags.NONE))
    assert bound.compile_pair(pair_device, second) is None


@pytest.mark.parametrize("widths", [(32, 32), (32, 16)])
def test_runner_fuses_the_first_two_layers(pair_device, widths):
    """The ONNX runner's ESPCN (first layers of 32 channels, which the emulation's 32 KiB of shared memory
    holds): QuantizeLinear, the pair, the last layer with the DepthToSpace and DequantizeLinear folded
    in, where the pair is on; equal to onnxruntime's output, and to the sessions without the pair (by
    default, or the variant left out)."""
    model = models.quantize(models.espcn(2, *widths), models.calibration_frames())
    x = np.concatenate(models.calibration_frames(2, 13, 40, seed=5))
    want = run_onnxruntime(model, [("x", x)])
    apart = ["conv.dot", "conv.coopmat.halo", "conv.dot.float"]
    for tuning, variants in ((PAIR_ON, ["conv.coopmat.halo.pair", "conv.dot.float"]), ({}, apart),
                             ({"conv.coopmat.halo.pair": False, **PAIR_ON}, apart)):
        with pair_device.variants(tuning=dict(tuning, DOT_ON_CPU=True)):
            session = InferenceSession(model, device=pair_device)
            got, = session.run(None, {"x": x})
        assert np.array_equal(got, want), tuning
        _, dispatches, _ = session.device_work({"x": x})
        assert [k.variant for k, _ in dispatches if k.variant.startswith("conv.")] == variants


def test_benchmark_counts_both_layers_operations(pair_device, rng):
    """The model benchmark's operations of the pair's dispatch (bench_layers.dispatch_ops): 2 per
    multiply-add of both layers, each layer's once (not the first layer's window positions computed
    twice by neighbouring tiles)."""
    from dmlvk_lab.bench_layers import dispatch_ops
    first, second, _, _, _ = _case(rng, TYPES[0], 2, 12, 40, (5, 5), (2, 2, 2, 2), 32, 16, (1, 1, 1, 1), False, "nhwc")
    pair = first.compile_pair(pair_device, second)
    alone = pair_device.create_operator(second).kernels[-1]
    assert dispatch_ops(alone) == 2 * 2 * 16 * 12 * 40 * 32 * 9
    assert dispatch_ops(pair.kernels[-1]) == dispatch_ops(alone) + 2 * 2 * 32 * 12 * 40 * 25


def test_runner_pair_at_its_boundaries(pair_device):
    """The runner's pair on both sides of its conditions, against onnxruntime: fused where the first
    layer's output has PAIR_MAX_POSITIONS positions, two layers where it has one more; two layers where
    the first layer's output is a graph output too (another reader), both outputs equal."""
    import onnx
    import onnxruntime as ort
    model = models.quantize(models.espcn(2, 32, 32), models.calibration_frames())
    x = np.concatenate(models.calibration_frames(2, 13, 40, seed=6))
    positions = 2 * 13 * 40
    run = lambda m: ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    want = run(model)
    convs = lambda s: [k.variant for k, _ in s.device_work({"x": x})[1] if k.variant.startswith("conv.")]
    for most, fused in ((positions, True), (positions - 1, False)):
        with pair_device.variants(tuning={"PAIR_MAX_POSITIONS": most, "DOT_ON_CPU": True}):
            session = InferenceSession(model, device=pair_device)
            got = session.run(None, {"x": x})
        assert np.array_equal(got[0], want[0]), most
        assert ("conv.coopmat.halo.pair" in convs(session)) == fused, (most, convs(session))
    # the first layer's output read by the graph's caller too
    first_out = next(n for n in model.graph.node if n.op_type == "QLinearConv").output[0]
    both = onnx.ModelProto()
    both.CopyFrom(model)
    both.graph.output.append(onnx.helper.make_tensor_value_info(first_out, onnx.TensorProto.UINT8, None))
    want = run(both)
    with pair_device.variants(tuning={"DOT_ON_CPU": True, **PAIR_ON}):
        session = InferenceSession(both, device=pair_device)
        got = session.run(None, {"x": x})
    assert len(got) == 2 and all(np.array_equal(g, w) for g, w in zip(got, want))
    assert "conv.coopmat.halo.pair" not in convs(session)
