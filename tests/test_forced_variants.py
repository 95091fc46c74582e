"""Every variant of every operator forced over random descriptions, on the device the suite runs on
(lavapipe, SwiftShader, a GPU): each either runs the description exactly as dmlvk.reference does, or
refuses it with a ValueError naming the variant (one that cannot run the layout, or whose
requirements the device does not keep). Forcing never runs a kernel outside what its variant is
correct within (dmlvk/ops/variants.py: Selection.usable). Each variant must run at least one of the
descriptions wherever the device offers what it requires."""
import dataclasses

import numpy as np
import onnx
import onnx.numpy_helper
import pytest

import dmlvk
from dmlvk import DataType, reference
from dmlvk.ops import depth_space, quantized_conv
from dmlvk_lab.oracles import one_node_model, random_case, random_ints, random_window
from test_depth_space import ALL_TYPES, ORDERS, run_case

TRIES, ENOUGH = 60, 3
D2S = (dmlvk.DepthToSpace1Desc, dmlvk.SpaceToDepth1Desc, dmlvk.DepthToSpaceDesc, dmlvk.SpaceToDepthDesc)
LAYOUTS = [("packed", "packed"), ("nhwc", "nhwc"), ("padded", "packed"), ("nhwc", "nhwc_padded"),
           ("permuted", "permuted"), ("broadcast", "padded"), ("nhwc", "nonnested")]


def _offered(table, name, caps) -> bool:
    """Whether the device offers what the variant requires (for the 8/16-bit stores, one of the two
    storage features its need names)."""
    if name == "element.narrow_stores":
        return caps.storage_8bit or caps.storage_16bit
    return all(caps.offers(f) for f in table[name].requires)


def _refused(e: ValueError, name: str) -> bool:
    return name in str(e) and ("cannot run" in str(e) or "needs" in str(e))


@pytest.mark.parametrize("name", [v.name for v in depth_space.TABLE if depth_space.TABLE.owns(v.name)])
def test_depth_space_variant_forced(device, rng, name):
    ran = 0
    for _ in range(TRIES):
        desc_cls = D2S[int(rng.integers(0, 4))]
        d2s = desc_cls in (dmlvk.DepthToSpace1Desc, dmlvk.DepthToSpaceDesc)
        b = int(rng.choice([2, 2, 3, 4, 5]))
        dt = ALL_TYPES[int(rng.integers(0, len(ALL_TYPES)))]
        eb = dt.bits // 8
        # half the time, B-pixel rows of 16 bytes (the channel-last segment and lane kernels)
        cs = 16 // (b * eb) if 16 % (b * eb) == 0 and rng.random() < 0.5 else int(rng.choice([1, 2, 3, 4, 8, 16]))
        n, h, w = int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.choice([1, 2, 4, 5, 8]))
        shape = (n, cs * b * b, h, w) if d2s else (n, cs, h * b, w * b)
        order = ORDERS[int(rng.integers(0, 2))] if desc_cls in D2S[:2] else ORDERS[0]
        try:
            run_case(device, rng, desc_cls, dt, b, order, *LAYOUTS[int(rng.integers(0, len(LAYOUTS)))],
                     shape=shape, force=name)
        except ValueError as e:
            assert _refused(e, name), e
            continue
        ran += 1
        if ran == ENOUGH:
            break
    if _offered(depth_space.TABLE, name, device.capabilities):
        assert ran > 0, f"{name} ran none of {TRIES} random descriptions"


@pytest.fixture(scope="module")
def conv_device():
    """The device, with the cooperative matrices emulated where it lists none, so that the
    cooperative-matrix variants run everywhere (as in tests/test_qconv_paths.py)."""
    dev = dmlvk.Device()
    if (16, 16, 32) not in dev.capabilities.cooperative_matrix("int8", "int8", "int32"):
        dev.capabilities = dev.capabilities.with_emulated_cooperative_matrix()
    return dev


def _conv_case(rng, x_dt, w_dt, cg=None):
    """random_case's convolutions, or (half the time) one with enough channels for the
    cooperative-matrix kernels, or a narrow one-channel 5x5 layer (the row-tile and narrow kernels).
    cg: always the second kind, with these input channels a group."""
    kind = 0.5 if cg is not None else rng.random()
    if kind < 0.5:
        return random_case(rng, x_dt, w_dt, np.uint8, w_range=None)
    if kind < 0.8:
        cg, mg = cg or int(rng.integers(8, 40)), int(rng.integers(4, 70))
        (kh, kw), dil, p0, p1, h, w = random_window(rng, 10)
        strides = tuple(int(v) for v in rng.integers(1, 3, 2))
        if rng.random() < 0.5:          # stride and dilation 1 (the row-tile kernel)
            strides, dil = (1, 1), (1, 1)
    else:                               # word-aligned rows (the depthwise rows kernels)
        k = int(rng.choice([3, 5]))
        cg, mg, kh, kw, dil, p0, p1, h, w = 1, int(rng.choice([1, 16, 32])), k, k, (1, 1), (k // 2,) * 2, (k // 2,) * 2, 6, 8
        strides = (1, 1)
    groups = int(rng.choice([1, 1, 2]))
    if cg == 1 and mg == 1:             # depthwise
        groups = int(rng.choice([4, 8]))
    n, m = int(rng.integers(1, 3)), mg * groups
    x, wt = random_ints(rng, x_dt, (n, cg * groups, h, w)), random_ints(rng, w_dt, (m, cg, kh, kw))
    args = (x, np.float32(0.02), random_ints(rng, x_dt, ()), wt, rng.uniform(0.001, 0.05, m).astype(np.float32),
            random_ints(rng, w_dt, (m,)), rng.integers(-5000, 5000, m).astype(np.int32), np.float32(0.7),
            random_ints(rng, np.uint8, ()))
    return args, dict(strides=strides, dilations=dil, start_padding=p0, end_padding=p1, group_count=groups), np.dtype(np.uint8)


CONV = [v.name for v in quantized_conv.TABLE if quantized_conv.TABLE.owns(v.name)]


def _channels_last_input_call(device, args, kwargs, y_dt, force):
    """quantized_linear_convolution's result with the input bound channels-last (NHWC strides), its
    operator forced to a variant."""
    op, inputs, out, result = quantized_conv.prepare_call(*args, **kwargs, output_dtype=y_dt, device=device)
    x = args[0]
    n, c, h, w = x.shape
    desc = dataclasses.replace(op.desc, input_tensor=dmlvk.TensorDesc(op.desc.input_tensor.data_type, x.shape,
                                                                      (h * w * c, 1, w * c, c)))
    inputs = [np.ascontiguousarray(x.transpose(0, 2, 3, 1)).reshape(-1)] + inputs[1:]
    device.create_operator(desc, force=force).execute(inputs=inputs, outputs=[out])
    return result()


@pytest.mark.parametrize("name", [n for n in CONV if not n.startswith("integer.")])
def test_convolution_variant_forced(conv_device, rng, name):
    ran = 0
    for _ in range(TRIES // 2):
        x_dt, w_dt = [(np.uint8, np.int8), (np.uint8, np.uint8), (np.int8, np.int8)][int(rng.integers(0, 3))]
        channels_last = name in quantized_conv.routines.READS_CHANNELS_LAST    # variants of channels-last inputs
        args, kwargs, y_dt = _conv_case(rng, x_dt, w_dt, cg=32 if channels_last else None)
        try:
            if channels_last:
                got = _channels_last_input_call(conv_device, args, kwargs, y_dt, name)
            else:
                with conv_device.variants(force=name):
                    got = dmlvk.quantized_linear_convolution(*args, **kwargs, output_dtype=y_dt, device=conv_device)
        except ValueError as e:
            assert _refused(e, name), e
            continue
        assert np.array_equal(got, reference.quantized_linear_convolution(*args, y_dt, **kwargs)), (name, kwargs)
        ran += 1
        if ran == ENOUGH:
            break
    if _offered(quantized_conv.TABLE, name, conv_device.capabilities):
        assert ran > 0, f"{name} ran none of the random convolutions"


@pytest.mark.parametrize("name", [n for n in CONV if n.startswith("integer.")])
def test_conv_integer_variant_forced(device, rng, name):
    # ONNX ConvInteger (int32 accumulators), the runner's one use of these variants
    from dmlvk.onnx import InferenceSession
    ran = 0
    for _ in range(TRIES // 4):
        (x, _, xzp, wt, _, wzp, _, _, _), kwargs, _ = random_case(rng, np.uint8, np.uint8, np.uint8,
                                                                 per_channel=False)
        if kwargs["group_count"] != 1:
            continue
        wzp = wzp[:1].reshape(()) if wzp is not None else None
        pads = list(kwargs["start_padding"]) + list(kwargs["end_padding"])
        model = one_node_model("ConvInteger", [("x", x), ("w", wt), ("xzp", xzp), ("wzp", wzp)], np.int32, 10,
                               strides=list(kwargs["strides"]), dilations=list(kwargs["dilations"]), pads=pads)
        for name_, value in (("w", wt), ("xzp", xzp), ("wzp", wzp)):     # the constants as initializers
            if value is not None:
                model.graph.initializer.append(onnx.numpy_helper.from_array(np.asarray(value), name_))
                model.graph.input.remove(next(i for i in model.graph.input if i.name == name_))
        try:
            with device.variants(force=name):
                got = InferenceSession(model, device=device).run(None, {"x": x})[0]
        except ValueError as e:
            assert _refused(e, name), e
            continue
        kw = {k: v for k, v in kwargs.items() if k != "group_count"}
        expected = reference.conv_integer_accumulators(x, xzp, wt, wzp, **kw)
        assert np.array_equal(got, expected), (name, kwargs)
        ran += 1
        if ran == ENOUGH:
            break
    assert ran > 0, f"{name} ran none of the random convolutions"


@pytest.mark.parametrize("name", ["nhwc.lanes", "nhwc.staged"])
def test_forcing_keeps_the_element_size_limit(device, rng, name):
    # Their shaders move 1- and 2-byte elements (depth_space_lanes.comp's 4 / EB elements a word):
    # forced onto 8-byte ones they once ran and gave wrong results.
    for dt in (DataType.FLOAT64, DataType.INT64, DataType.FLOAT32):
        with pytest.raises(ValueError, match=f"{name}.*(1- or 2-byte elements|cannot run)"):
            run_case(device, rng, dmlvk.DepthToSpace1Desc, dt, 2, ORDERS[1], "nhwc", "nhwc",
                     shape=(1, 16, 2, 4), force=name)


def test_workgroup_limits_are_checked(device):
    caps = dataclasses.replace(device.capabilities, max_workgroup_invocations=256)
    desc = dmlvk.DepthToSpace1Desc.of(dmlvk.TensorDesc(DataType.UINT8, (1, 16, 8, 16)), 2, 0)
    with pytest.raises(ValueError, match="ROWS_LOCAL=512.*maxComputeWorkGroupInvocations 256"):
        desc.kernel(caps, tuning={"ROWS_LOCAL": 512})
    assert desc.kernel(caps, tuning={"ROWS_LOCAL": 256}).local_size == 256
    small = dataclasses.replace(caps, max_workgroup_invocations=128)
    assert desc.kernel(small).local_size <= 128          # the table's 256 within the device's limit
    conv = quantized_conv.TABLE
    with pytest.raises(ValueError, match="conv.gemm cannot run on this device: it needs workgroups of 256"):
        dmlvk.QuantizedLinearConvolutionDesc.of(dmlvk.TensorDesc(DataType.UINT8, (1, 16, 8, 8)),
                                                dmlvk.TensorDesc(DataType.INT8, (16, 16, 3, 3))).plan(small, force="conv.gemm")
    assert conv["conv.gemm"].needs == ()               # the workgroup limit is every kernel's


@pytest.fixture(scope="module")
def small_device():
    """The device as a device with Vulkan's least limits would be: 128 invocations a workgroup, 16 KiB
    of shared memory, 128 bytes of push constants."""
    dev = dmlvk.Device()
    caps = dev.capabilities
    dev.capabilities = dataclasses.replace(
        caps, max_workgroup_invocations=min(128, caps.max_workgroup_invocations or 128),
        max_shared_memory=min(16384, caps.max_shared_memory or 16384),
        max_push_constants=min(128, caps.max_push_constants or 128))
    return dev


def test_every_operator_runs_within_the_least_limits(small_device, rng):
    dev, caps = small_device, small_device.capabilities
    for i in range(24):
        desc_cls = D2S[i % 4]
        d2s = desc_cls in (dmlvk.DepthToSpace1Desc, dmlvk.DepthToSpaceDesc)
        b, dt = int(rng.choice([2, 3, 4])), ALL_TYPES[i % len(ALL_TYPES)]
        shape = (1, 4 * b * b, 3, 8) if d2s else (1, 4, 3 * b, 8 * b)
        desc = run_case(dev, rng, desc_cls, dt, b, ORDERS[i % 2] if i % 4 < 2 else ORDERS[0],
                        *LAYOUTS[i % len(LAYOUTS)], shape=shape)
        assert desc.kernel(caps).local_size <= 128
    for _ in range(12):
        args, kwargs, y_dt = _conv_case(rng, np.uint8, np.int8)
        got = dmlvk.quantized_linear_convolution(*args, **kwargs, output_dtype=y_dt, device=dev)
        assert np.array_equal(got, reference.quantized_linear_convolution(*args, y_dt, **kwargs)), kwargs


def test_subgroup_sizes_decide_the_subgroup_kernels():
    # Argued for subgroups of 64 (AMD's wave64), which no device here has: the variants that use
    # subgroups declare what they need of them (their rows' needs), and the choice keeps it.
    from dmlvk.runtime.capabilities import Capabilities, SUBGROUP_SHUFFLE
    base = Capabilities(features=frozenset({SUBGROUP_SHUFFLE, "storageBuffer8BitAccess"}), subgroup_size=32)
    # uint8 space-to-depth B = 3, channel-last, 8 channels: the lanes kernel with 64 invocations
    nhwc = lambda n, c, h, w: dmlvk.TensorDesc(DataType.UINT8, (n, c, h, w), (c * h * w, 1, c * w, c))
    wide = dmlvk.SpaceToDepth1Desc(nhwc(1, 8, 6, 96), nhwc(1, 72, 2, 32), 3, 1)
    k = wide.kernel(base, tuning={"LANES_LOCAL": 64})
    assert k.variant == "nhwc.lanes" and k.local_size == 64
    at64 = dataclasses.replace(base, subgroup_size=64)
    assert wide.kernel(at64, tuning={"LANES_LOCAL": 64}).variant == "nhwc.lanes"
    at128 = dataclasses.replace(base, subgroup_size=128)     # a partial subgroup: not chosen
    assert wide.kernel(at128, tuning={"LANES_LOCAL": 64}).variant != "nhwc.lanes"
    with pytest.raises(ValueError, match="whole subgroups"):
        wide.kernel(at128, force="nhwc.lanes", tuning={"LANES_LOCAL": 64})
    pairs = dmlvk.DepthToSpace1Desc.of(dmlvk.TensorDesc(DataType.UINT8, (1, 16, 8, 64)), 4, 0)
    assert pairs.kernel(dataclasses.replace(base, subgroup_size=64)).variant == "rows.paired"
    assert pairs.kernel(dataclasses.replace(base, subgroup_size=1)).variant == "rows"
