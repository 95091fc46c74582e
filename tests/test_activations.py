"""ACTIVATION_LEAKY_RELU and ACTIVATION_PARAMETERIZED_RELU (dmlvk/ops/activations.py): every float16
value and random float32 values against dmlvk.reference (x >= 0 ? x : a * x; float16 rounded once from
float32), integer PRelu's two's-complement products, per-channel slopes through 0 strides, ranks 1-8
and strided layouts, in-place execution, and the validation rules with the feature levels' tables."""
import numpy as np
import pytest

import dmlvk
from dmlvk import (ActivationLeakyReluDesc, ActivationParameterizedReluDesc, DataType, FeatureLevel, TensorDesc,
                   reference)
from harness import check_validation, element_mask, padded, strided_view

F16, F32, I8, I16, I32 = DataType.FLOAT16, DataType.FLOAT32, DataType.INT8, DataType.INT16, DataType.INT32



def test_every_float16_value_and_float32(device, rng):
    """LeakyRelu over all 65,536 float16 bit patterns (NaN stays NaN) for alphas that round, overflow
    and vanish, and over random float32 values; PRelu of float16 with a random slope per element."""
    h = np.arange(65536, dtype=np.uint16).view(np.float16)
    nan = np.isnan(h)
    for alpha in (0.01, 0.2, 1e-5, 3.7, -1.5):
        op = device.create_operator(ActivationLeakyReluDesc.of(TensorDesc(F16, h.shape), alpha))
        y = np.zeros(65536, np.float16)
        op.execute([h], [y])
        want = reference.parameterized_relu(h, np.float32(alpha))
        assert np.array_equal(y.view(np.uint16)[~nan], want.view(np.uint16)[~nan]), alpha
        assert np.isnan(y[nan]).all()
    slope = rng.standard_normal(65536).astype(np.float16)
    op = device.create_operator(ActivationParameterizedReluDesc.of(TensorDesc(F16, h.shape), TensorDesc(F16, h.shape)))
    y = np.zeros(65536, np.float16)
    op.execute([h, slope], [y])
    assert np.array_equal(y.view(np.uint16)[~nan], reference.parameterized_relu(h, slope).view(np.uint16)[~nan])
    x = (rng.standard_normal(100003) * 1e3).astype(np.float32)
    op = device.create_operator(ActivationLeakyReluDesc.of(TensorDesc(F32, x.shape), 0.2))
    y = np.zeros_like(x)
    op.execute([padded(x)], [y])
    assert np.array_equal(y, reference.parameterized_relu(x, np.float32(0.2)))


@pytest.mark.parametrize("data_type", [F32, F16, I32, I16, I8], ids=lambda t: t.name.lower())
def test_prelu_per_channel_any_rank_and_layout(device, rng, data_type):
    """PRelu with a slope per channel (0 strides on the other axes, as ONNX Runtime binds it), ranks 1-8,
    input and output permuted with gaps (the gaps' bytes untouched)."""
    npt = np.dtype(data_type.numpy_dtype)
    for rank in range(1, 9):
        sizes = tuple(int(s) for s in rng.integers(1, 4, rank))
        perm = rng.permutation(rank)

        def strides():
            out, acc = [0] * rank, 1
            for d in perm:
                out[d] = acc
                acc *= sizes[d] + int(rng.integers(0, 2))
            return tuple(out)

        axis = int(rng.integers(0, rank))
        slope_strides = tuple(1 if d == axis else 0 for d in range(rank))
        x_desc, y_desc = TensorDesc(data_type, sizes, strides()), TensorDesc(data_type, sizes, strides())
        s_desc = TensorDesc(data_type, sizes, slope_strides)
        xb = rng.integers(0, 256, x_desc.total_bytes, dtype=np.uint8)
        if npt.kind == "f":          # finite values (NaN payloads are the driver's)
            xb = padded((rng.standard_normal(x_desc.total_bytes // npt.itemsize) * 4).astype(npt))[:x_desc.total_bytes]
        sb = padded((rng.standard_normal(sizes[axis]) * 2).astype(npt) if npt.kind == "f"
                  else rng.integers(-5, 5, sizes[axis]).astype(npt))
        y0 = rng.integers(0, 256, y_desc.total_bytes, dtype=np.uint8)
        y = y0.copy()
        level = FeatureLevel.FL_6_4
        op = dmlvk.Device(feature_level=level).create_operator(ActivationParameterizedReluDesc(x_desc, s_desc, y_desc))
        op.execute([xb, sb], [y])
        x = strided_view(xb, npt, sizes, x_desc.effective_strides)
        s = strided_view(sb, npt, sizes, slope_strides)
        assert np.array_equal(strided_view(y, npt, sizes, y_desc.effective_strides).view(f"u{npt.itemsize}"),
                              reference.parameterized_relu(x, s).view(f"u{npt.itemsize}")), rank
        gaps = ~element_mask(y.size, npt.itemsize, sizes, y_desc.effective_strides)
        assert np.array_equal(y[gaps], y0[gaps]), rank


def test_in_place(device, rng):
    """The output bound to the input's own Buffer (or host array), laid out alike: computed in place;
    laid out otherwise, or overlapping part of it: refused."""
    x = rng.standard_normal(1001).astype(np.float32)
    want = reference.parameterized_relu(x, np.float32(0.1))
    desc = ActivationLeakyReluDesc.of(TensorDesc(F32, x.shape), 0.1)
    buf = device.upload(padded(x))
    device.create_operator(desc).execute([buf], [buf])
    assert np.array_equal(buf.read()[:x.nbytes].view(np.float32), want)
    host = x.copy()
    device.create_operator(desc).execute([host], [host])
    assert np.array_equal(host, want)
    whole = np.zeros(1002, np.float32)
    with pytest.raises(ValueError, match="overlaps input 0"):           # shifted by one element
        device.create_operator(desc).execute([whole[:1001]], [whole[1:]])
    strided = ActivationLeakyReluDesc(TensorDesc(F32, (1001,)), TensorDesc(F32, (1001,), (1,), 4 * 1001 + 4), 0.1)
    wide = device.upload(np.zeros(4008, np.uint8))
    with pytest.raises(ValueError, match="overlaps input 0"):           # laid out otherwise
        device.create_operator(strided).execute([wide], [wide])



def test_validation():
    t = lambda sizes, dt=F32, strides=None: TensorDesc(dt, sizes, strides)
    check_validation(ActivationLeakyReluDesc(t((1, 2, 3, 4)), t((1, 2, 3, 4)), 0.01), FeatureLevel.FL_1_0, None)
    check_validation(ActivationLeakyReluDesc(t((1, 2, 3, 4)), t((1, 2, 3, 4), F16), 0.01), FeatureLevel.FL_6_4, "Mismatched")
    check_validation(ActivationLeakyReluDesc(t((1, 2, 3, 4)), t((1, 2, 3, 5)), 0.01), FeatureLevel.FL_6_4, "'Output' has Sizes")
    check_validation(ActivationLeakyReluDesc(t((1, 2, 3, 4), I8), t((1, 2, 3, 4), I8), 0.01), FeatureLevel.FL_6_4, "INT8")
    check_validation(ActivationLeakyReluDesc(t((1, 1, 2, 3, 4)), t((1, 1, 2, 3, 4)), 0.01), FeatureLevel.FL_1_0, "DimensionCount 5")
    check_validation(ActivationLeakyReluDesc(t((1, 1, 2, 3, 4)), t((1, 1, 2, 3, 4)), 0.01), FeatureLevel.FL_2_0, None)
    check_validation(ActivationLeakyReluDesc(t((3, 4)), t((3, 4)), 0.01), FeatureLevel.FL_2_0, "DimensionCount 2")
    check_validation(ActivationLeakyReluDesc(t((3, 4)), t((3, 4)), 0.01), FeatureLevel.FL_3_0, None)
    with pytest.raises(TypeError):
        ActivationLeakyReluDesc(t((3, 4)), t((3, 4)), "0.1").validate(FeatureLevel.FL_6_4)
    p = lambda dt: ActivationParameterizedReluDesc(t((1, 2, 3, 4), dt), t((1, 2, 3, 4), dt), t((1, 2, 3, 4), dt))
    check_validation(p(I8), FeatureLevel.FL_5_0, "INT8")
    check_validation(p(I8), FeatureLevel.FL_5_1, None)
    check_validation(p(DataType.UINT8), FeatureLevel.FL_6_4, "UINT8")
    check_validation(ActivationParameterizedReluDesc(t((1, 2, 3, 4)), None, t((1, 2, 3, 4))), FeatureLevel.FL_6_4,
           "'Slope' is required")
    check_validation(ActivationParameterizedReluDesc(t((1, 2, 3, 4)), t((1, 2, 1, 1)), t((1, 2, 3, 4))), FeatureLevel.FL_6_4,
           "'Slope' has Sizes")
