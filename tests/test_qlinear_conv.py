"""QUANTIZED_LINEAR_CONVOLUTION on the Vulkan device: documented vectors, ONNX's node case,
onnxruntime bit for bit, dmlvk.reference bit for bit where onnxruntime cannot go."""
import numpy as np
import pytest

import dmlvk
from dmlvk.ops.quantized_conv import prepare_call
from dmlvk import DataType, QuantizedLinearConvolutionDesc, TensorDesc, reference
from dmlvk_lab.cases import ort_weight_range
from dmlvk_lab.examples import qconv_examples
from dmlvk_lab.oracles import (onnx_node_cases, onnx_qlinearconv_model, random_case, random_ints, run_onnx_reference,
                           run_onnxruntime)


def ref(args, kwargs, y_dtype):
    return reference.quantized_linear_convolution(*args, y_dtype, **kwargs)


@pytest.mark.parametrize("ex", qconv_examples(), ids=lambda e: e.name)
def test_documented_vectors(device, ex):
    got = dmlvk.quantized_linear_convolution(*ex.args, **ex.kwargs, device=device)
    assert got.dtype == ex.expected.dtype and np.array_equal(got, ex.expected), got.ravel().tolist()
    assert np.array_equal(ref(ex.args, ex.kwargs, ex.expected.dtype), ex.expected)


def test_onnx_node_case(device):
    model, ins, outs = onnx_node_cases()["test_qlinearconv"]
    x, xs, xzp, w, ws, wzp, ys, yzp = ins
    got = dmlvk.quantized_linear_convolution(x, xs.astype(np.float32), xzp, w, ws, wzp, None, ys, yzp, device=device)
    assert np.array_equal(got, outs[0])


@pytest.mark.parametrize("types", [(np.uint8, np.uint8, np.uint8), (np.uint8, np.int8, np.uint8),
                                   (np.int8, np.int8, np.int8)],
                         ids=lambda t: "x".join(np.dtype(d).name for d in t))
@pytest.mark.parametrize("per_channel", [True, False], ids=["per-channel", "per-tensor"])
def test_against_onnxruntime(device, rng, types, per_channel):
    x_dt, w_dt, y_dt = types
    w_range = ort_weight_range(x_dt, w_dt)           # dmlvk_lab.cases: onnxruntime's u8 x s8 rule
    compared = 0
    for _ in range(12):
        args, kwargs, y_dtype = random_case(rng, x_dt, w_dt, y_dt, per_channel=per_channel, w_range=w_range)
        model, feeds = onnx_qlinearconv_model(args, kwargs, y_dtype)
        expected = run_onnxruntime(model, feeds)
        got = dmlvk.quantized_linear_convolution(*args, **kwargs, device=device)
        assert np.array_equal(got, expected), (kwargs, [a.shape if hasattr(a, "shape") else a for a in args])
        assert np.array_equal(ref(args, kwargs, y_dtype), expected)
        compared += got.size
    assert compared > 0


@pytest.mark.parametrize("types", [(np.int8, np.uint8, np.uint8), (np.int8, np.uint8, np.int8),
                                   (np.uint8, np.uint8, np.int8), (np.int8, np.int8, np.uint8),
                                   (np.uint8, np.int8, np.uint8), (np.uint8, np.int8, np.int8)],
                         ids=lambda t: "x".join(np.dtype(d).name for d in t))
def test_beyond_onnxruntime_against_reference(device, rng, types):
    # s8 x u8, output type unlike input type, distinct per-channel zero points, absent zero
    # points, full-range u8 x s8 filters: exact against the reference, +-1 against onnx.reference.
    for i in range(10):
        args, kwargs, y_dtype = random_case(rng, *types, equal_w_zp=False, zero_points=i % 3 != 0, bias=i % 2 == 0)
        got = dmlvk.quantized_linear_convolution(*args, **kwargs, output_dtype=y_dtype, device=device)
        assert np.array_equal(got, ref(args, kwargs, y_dtype)), kwargs
        if args[2] is not None and args[6] is not None:
            model, feeds = onnx_qlinearconv_model(args, kwargs, y_dtype)
            other = run_onnx_reference(model, feeds)
            assert np.abs(got.astype(int) - other.astype(int)).max() <= 1


@pytest.mark.parametrize("m", [2, 8], ids=["direct", "gemm"])
@pytest.mark.parametrize("devname", ["device", "portable_device"])
def test_saturation_and_int32_wraparound(request, devname, m):
    device = request.getfixturevalue(devname)     # on CPU devices the first takes the CPU kernel
    # 1x1 conv over 40000 channels of 255 * -127: the exact sum, -1.3e9, plus a bias near the int32
    # limit wraps; the output must follow int32 arithmetic, as the reference does. With 8 output
    # channels the implicit-GEMM shader runs, whose float32 partial sums must stay exact.
    c = 40000
    x = np.full((1, c, 1, 2), 255, np.uint8)
    x[0, :, 0, 1] = 0
    w = np.full((m, c, 1, 1), -127, np.int8)      # odd products: float32 sums past 2^24 would round
    bias = np.resize(np.array([-(2**31) + 5, 2**31 - 1], np.int32), m)
    for y_dt in (np.int8, np.uint8):
        args = (x, 1.0, np.uint8(0), w, np.resize(np.float32([1e-9, 1.0]), m), np.int8(0), bias, 1.0,
                np.zeros((), y_dt))
        got = dmlvk.quantized_linear_convolution(*args, device=device)
        assert np.array_equal(got, ref(args, {}, np.dtype(y_dt)))
    acc = reference.conv_integer_accumulators(x, 0, w, 0, bias)
    assert acc[0, 0, 0, 0] == np.int32(np.int64(-(2**31) + 5 - 255 * 127 * c + 2**32))


@pytest.mark.parametrize("devname", ["device", "portable_device"])
def test_gemm_partial_sums_stay_exact(request, devname, rng):
    device = request.getfixturevalue(devname)     # on CPU devices the first takes the CPU kernel
    # Partial sums that climb far past 2^24 and come back: the output is 100 only if the
    # accumulator is exact (multiplier 1, bias = 100 - the exact sum), so a float32 partial sum
    # kept past 256 products, or any rounding, shows.
    c, m = 4096, 8
    x = rng.integers(0, 256, (1, c, 1, 1), dtype=np.uint8)
    sign = np.where(np.arange(c) < c // 2, 1, -1).reshape(1, c, 1, 1)
    w = (sign * rng.integers(120, 128, (m, c, 1, 1))).astype(np.int8)
    acc = reference.conv_integer_accumulators(x, 0, w, 0).reshape(m)
    bias = (100 - acc).astype(np.int32)
    args = (x, 1.0, np.uint8(0), w, np.float32(1.0), np.int8(0), bias, 1.0, np.uint8(0))
    got = dmlvk.quantized_linear_convolution(*args, device=device)
    assert np.array_equal(got.reshape(m), np.full(m, 100, np.uint8)), got.reshape(m)


@pytest.mark.parametrize("m", [6, 20], ids=["direct", "gemm"])
def test_directml_level_strided_tensors(device, rng, m):
    """NHWC input and output, a padded filter, zero-stride scale and zero-point tensors as
    onnxruntime passes them, bound as host arrays and as device buffers."""
    n, c, h, w = 2, 4, 5, 6
    x = rng.integers(0, 256, (n, h, w, c), dtype=np.uint8)           # NHWC in memory
    wt = rng.integers(-128, 128, (m, c // 2, 3, 3), dtype=np.int8)
    w_padded = np.zeros((m, c // 2, 3, 4), np.int8)
    w_padded[..., :3] = wt
    scale_ws = rng.uniform(0.01, 0.02, m).astype(np.float32)
    zp_w = np.int8(3)
    bias = rng.integers(-300, 300, m).astype(np.int32)
    U8, I8, F32 = DataType.UINT8, DataType.INT8, DataType.FLOAT32
    scalar = lambda dt: TensorDesc(dt, (1, 1, 1, 1), (0, 0, 0, 0))
    oh, ow = 5, 3
    desc = QuantizedLinearConvolutionDesc(
        TensorDesc(U8, (n, c, h, w), (h * w * c, 1, w * c, c)), scalar(F32), scalar(U8),
        TensorDesc(I8, (m, c // 2, 3, 3), (c // 2 * 12, 12, 4, 1)), TensorDesc(F32, (1, m, 1, 1)),
        TensorDesc(I8, (1, m, 1, 1), (0, 0, 0, 0)), TensorDesc(DataType.INT32, (1, m, 1, 1)),
        scalar(F32), scalar(I8),
        TensorDesc(I8, (n, m, oh, ow), (oh * ow * m, 1, ow * m, m)),
        strides=(1, 2), dilations=(1, 1), start_padding=(1, 1), end_padding=(1, 0), group_count=2)
    op = device.create_operator(desc)
    assert desc.plan()[0][0].variant == ("conv.gemm" if m // 2 >= 8 else "conv.direct")
    f32 = lambda v: np.array([v], np.float32)
    bind = [x, f32(0.04), np.array([120, 0, 0, 0], np.uint8), w_padded, scale_ws,
            np.array([zp_w, 0, 0, 0], np.int8), bias, f32(0.3), np.array([-5, 0, 0, 0], np.int8)]
    out = np.zeros((n, oh, ow, m), np.int8)
    op.execute(inputs=bind, outputs=[out])
    expected = reference.quantized_linear_convolution(
        x.transpose(0, 3, 1, 2), 0.04, 120, wt, scale_ws, zp_w, bias, 0.3, -5, np.int8,
        strides=(1, 2), start_padding=(1, 1), end_padding=(1, 0), group_count=2)
    assert np.array_equal(out.transpose(0, 3, 1, 2), expected)
    buffers = [device.upload(b) for b in bind]
    out_buf = device.buffer(out.nbytes)
    op.execute(inputs=buffers, outputs=[out_buf])
    assert np.array_equal(out_buf.numpy(np.int8, out.shape), out)


def test_rank3_input_is_n_c_1_w(device, rng):
    x = rng.integers(0, 256, (2, 3, 9), dtype=np.uint8)
    w = rng.integers(-128, 128, (4, 3, 3), dtype=np.int8)
    U8, I8, F32 = DataType.UINT8, DataType.INT8, DataType.FLOAT32
    one = lambda dt: TensorDesc(dt, (1,))
    for dims in (1, 2):
        conv = dict(strides=(2,) * dims, dilations=(1,) * dims, start_padding=(0,) * (dims - 1) + (1,),
                    end_padding=(0,) * dims)
        desc = QuantizedLinearConvolutionDesc(
            TensorDesc(U8, x.shape), one(F32), one(U8), TensorDesc(I8, w.shape), one(F32), None, None,
            one(F32), None, TensorDesc(U8, (2, 4, 4)), **conv)
        op = device.create_operator(desc)
        out = np.zeros((2, 4, 4), np.uint8)
        x_bound = np.concatenate([x.reshape(-1), np.zeros(2, np.uint8)])    # whole words
        op.execute(inputs=[x_bound, np.float32([0.1]), np.array([7, 0, 0, 0], np.uint8), w, np.float32([0.02]),
                           None, None, np.float32([0.2]), None], outputs=[out])
        expected = reference.quantized_linear_convolution(
            x[:, :, None, :], 0.1, 7, w[:, :, None, :], 0.02, 0, None, 0.2, 0, np.uint8,
            strides=(1, 2), start_padding=(0, 1))
        assert np.array_equal(out, expected[:, :, 0, :])


def test_numpy_api_argument_errors(device):
    x = np.zeros((1, 2, 3, 3), np.uint8)
    w = np.zeros((2, 2, 1, 1), np.int8)
    call = lambda **kw: dmlvk.quantized_linear_convolution(**{**dict(
        input=x, input_scale=1.0, input_zero_point=None, filter=w, filter_scale=1.0, filter_zero_point=None,
        bias=None, output_scale=1.0, output_zero_point=np.uint8(0), device=device), **kw})
    assert call().shape == (1, 2, 3, 3)
    with pytest.raises(TypeError, match="input must be int8 or uint8"):
        call(input=x.astype(np.int16))
    with pytest.raises(ValueError, match="filter must be 4-D"):
        call(filter=w[0])
    with pytest.raises(TypeError, match="input_zero_point has dtype int8"):
        call(input_zero_point=np.int8(0))
    with pytest.raises(ValueError, match="does not fit uint8"):
        call(input_zero_point=300)
    with pytest.raises(ValueError, match="output_dtype is required"):
        call(output_zero_point=3)
    with pytest.raises(ValueError, match="conflicts"):
        call(output_dtype=np.int8)
    with pytest.raises(ValueError, match="filter_scale must hold 1 or 2"):
        call(filter_scale=np.float32([1, 2, 3]))
    with pytest.raises(TypeError, match="float32"):
        call(filter_scale=np.float64([1, 2]))
    with pytest.raises(TypeError, match="bias must be an int32"):
        call(bias=np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="input: .*not divisible by GroupCount 3"):
        call(group_count=3)
    with pytest.raises(ValueError, match="group_count: .*GroupCount is 0"):
        call(group_count=0)
    with pytest.raises(ValueError, match="strides: .*every stride must be at least 1"):
        call(strides=(0, 1))
    with pytest.raises(ValueError, match="filter: .*larger than the padded input"):
        call(filter=np.zeros((2, 2, 5, 1), np.int8))
    assert call(output_zero_point=3, output_dtype=np.int8).dtype == np.int8


def test_numpy_level_takes_array_likes_and_out(device):
    x = [[[[10, 20], [30, 40]]]]
    w = np.int8([[[[2]]]])
    args = (1.0, np.uint8(0), w, np.float32(1.0), None, None, 1.0, np.uint8(0))
    want = np.uint8([[[[20, 40], [60, 80]]]])
    assert np.array_equal(dmlvk.quantized_linear_convolution(np.uint8(x), *args, device=device), want)
    class Tensorish:                         # what a CPU tensor offers: __array__
        def __array__(self, dtype=None, copy=None):
            return np.uint8(x)
    assert np.array_equal(dmlvk.quantized_linear_convolution(Tensorish(), *args, device=device), want)
    out = np.empty((1, 1, 2, 2), np.uint8)
    assert dmlvk.quantized_linear_convolution(np.uint8(x), *args, device=device, out=out) is out
    assert np.array_equal(out, want)
    with pytest.raises(ValueError, match="out has shape"):
        dmlvk.quantized_linear_convolution(np.uint8(x), *args, device=device, out=np.empty((1, 1, 2, 3), np.uint8))


def test_cpu_kernel_equals_the_gemm_and_the_reference(device, portable_device, rng):
    """On CPU devices (lavapipe) groups of 8 or more output channels take qlinear_conv_cpu.comp
    (its filter packed per 16-channel tile); random shapes, groups, strides, dilations, padding,
    batches, channel counts that leave partial tiles and pixel counts that leave a partial
    workgroup, every type combination and per-channel filter zero points: equal to the reference
    and to the portable implicit GEMM."""
    taken = 0
    for case in range(24):
        g = int(rng.integers(1, 3))
        mg = int(rng.choice([8, 12, 16, 20, 33]))
        cg = int(rng.integers(1, 6))
        kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        n, h, w = int(rng.integers(1, 3)), int(rng.integers(kh + 2, 12)), int(rng.integers(kw + 2, 12))
        xt = np.uint8 if case % 2 else np.int8
        wt = np.int8 if case % 3 else np.uint8
        yt = np.uint8 if case % 4 < 2 else np.int8
        x = random_ints(rng, xt, (n, g * cg, h, w))
        filt = random_ints(rng, wt, (g * mg, cg, kh, kw))
        wzp = random_ints(rng, wt, g * mg) if case % 5 == 0 else wt(3)
        args = (x, np.float32(0.05), xt(7), filt, rng.uniform(0.001, 0.01, g * mg).astype(np.float32), wzp,
                rng.integers(-5000, 5000, g * mg).astype(np.int32), np.float32(0.4), yt(5))
        kwargs = dict(strides=(int(rng.integers(1, 3)), int(rng.integers(1, 3))),
                      dilations=(int(rng.integers(1, 3)), 1), start_padding=(int(rng.integers(0, 2)), 1),
                      end_padding=(1, int(rng.integers(0, 2))), group_count=g)
        want = reference.quantized_linear_convolution(*args, yt, **kwargs)
        op, inputs, out, finish = prepare_call(*args, **kwargs, output_dtype=None, device=device)
        op.execute(inputs, [out])
        got = finish()
        portable = dmlvk.quantized_linear_convolution(*args, **kwargs, device=portable_device)
        assert np.array_equal(got, want) and np.array_equal(portable, want), (case, kwargs, x.shape, filt.shape)
        taken += op.kernels[-1].shader == "qlinear_conv_cpu"
    if device.capabilities.device_type == "CPU":
        assert taken == 24


@pytest.mark.parametrize("mg", [5, 7])
def test_direct_kernel_takes_several_channel_tiles_per_group(portable_device, rng, mg):
    # The portable direct shader computes 4 output channels per invocation: a group of 5-7 output
    # channels spans two tiles, whose channels must land at the group's offset plus the tile's.
    x = rng.integers(0, 256, (2, 6, 5, 7), dtype=np.uint8)
    w = rng.integers(-128, 128, (2 * mg, 3, 3, 3), dtype=np.int8)
    args = (x, np.float32(0.02), np.uint8(100), w, rng.uniform(0.001, 0.01, 2 * mg).astype(np.float32), None,
            rng.integers(-500, 500, 2 * mg).astype(np.int32), np.float32(0.1), np.uint8(120))
    kw = dict(start_padding=(1, 1), end_padding=(1, 1), group_count=2)
    op = dmlvk.ops.quantized_conv.prepare_call(*args, **kw, strides=(1, 1), dilations=(1, 1), output_dtype=None,
                                               device=portable_device)[0]
    assert [k.shader for k in op.kernels] == ["qlinear_conv"]
    got = dmlvk.quantized_linear_convolution(*args, **kw, device=portable_device)
    assert np.array_equal(got, ref(args, kw, np.uint8))


def test_description_builders():
    """QuantizedLinearConvolutionDesc.of and DepthToSpace1Desc.of: the output from the operator's own
    formula, the small tensors as asked, the formula's rules checked once (ValidationError naming
    the member or tensor); the result validates as DirectML does."""
    from dmlvk import DepthToSpace1Desc, FeatureLevel
    from dmlvk.enums import TensorFlags
    from dmlvk.errors import ValidationError
    u8, s8 = DataType.UINT8, DataType.INT8
    d = QuantizedLinearConvolutionDesc.of(TensorDesc(u8, (2, 4, 9, 7)), TensorDesc(s8, (6, 2, 3, 3)),
                                          filter_scale_count=6, filter_zero_point=True, bias=True,
                                          output_data_type=s8, strides=(2, 1), start_padding=(1, 0),
                                          end_padding=(1, 0), group_count=2, owned_constants=True)
    assert d.output_tensor.sizes == (2, 6, 5, 5) and d.output_tensor.data_type == s8
    assert d.filter_scale_tensor.sizes == d.filter_zero_point_tensor.sizes == d.bias_tensor.sizes == (1, 6, 1, 1)
    assert d.input_zero_point_tensor is None and d.output_zero_point_tensor is None
    assert d.filter_tensor.flags & TensorFlags.OWNED_BY_DML and d.filter_zero_point_tensor.flags & TensorFlags.OWNED_BY_DML
    d.validate(FeatureLevel.FL_6_4, strict=True)
    integer = QuantizedLinearConvolutionDesc.of(TensorDesc(u8, (1, 1, 4, 4)), TensorDesc(u8, (1, 1, 2, 2)),
                                                int32_output=True)
    assert integer.int32_output and integer.output_tensor.data_type == DataType.INT32
    with pytest.raises(ValidationError, match="Strides .* at least 1") as e:
        QuantizedLinearConvolutionDesc.of(TensorDesc(u8, (1, 1, 4, 4)), TensorDesc(s8, (1, 1, 2, 2)), strides=(0, 1))
    assert e.value.member == "Strides"
    with pytest.raises(ValidationError, match="larger than the padded input") as e:
        QuantizedLinearConvolutionDesc.of(TensorDesc(u8, (1, 1, 4, 4)), TensorDesc(s8, (1, 1, 5, 2)))
    assert e.value.tensor == "Filter"
    with pytest.raises(TypeError, match="input must be a TensorDesc"):
        QuantizedLinearConvolutionDesc.of((1, 1, 4, 4), TensorDesc(s8, (1, 1, 2, 2)))
    d2s = DepthToSpace1Desc.of(TensorDesc(DataType.FLOAT16, (1, 8, 2, 3)), 2, 1)
    assert d2s.output_tensor == TensorDesc(DataType.FLOAT16, (1, 2, 4, 6)) and int(d2s.order) == 1
    with pytest.raises(ValidationError, match="not divisible by BlockSize") as e:
        DepthToSpace1Desc.of(TensorDesc(DataType.FLOAT16, (1, 8, 2, 3)), 3, 1)
    assert e.value.tensor == "Input"
