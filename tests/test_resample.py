"""RESAMPLE, RESAMPLE1, RESAMPLE2 and RESAMPLE3 (dmlvk/ops/resample.py): the pixel-centre examples
(nearest is a repeat, linear the textbook bilinear weights), every type, rank, version and layout
against dmlvk.reference.resample (the output's gaps untouched), infinities and NaN as DirectML
blends them, and the validation rules with the feature levels' type and rank tables. DirectML itself
checks the same under Wine (tests/test_directml.py)."""
import numpy as np
import pytest

from dmlvk import (AxisDirection, DataType, FeatureLevel, InterpolationMode, Resample1Desc, Resample2Desc,
                   Resample3Desc, ResampleDesc, TensorDesc, UnsupportedError)
from dmlvk import reference
from harness import check_validation, element_mask, padded, strided_view

F32, F16, U8, I8 = DataType.FLOAT32, DataType.FLOAT16, DataType.UINT8, DataType.INT8
NEAREST, LINEAR = InterpolationMode.NEAREST_NEIGHBOR, InterpolationMode.LINEAR
NUMPY = {F32: np.float32, F16: np.float16, U8: np.uint8, I8: np.int8}


def _run(device, desc, x, y0=None):
    op = device.create_operator(desc)
    y = np.zeros(desc.output_tensor.total_bytes, np.uint8) if y0 is None else y0.copy()
    op.execute([padded(x)], [y])
    return y


def _out(desc, y):
    t = desc.output_tensor
    return y[:t.element_count * t.element_bytes].view(NUMPY[t.data_type]).reshape(t.sizes)


def test_pixel_centres_nearest_repeats_and_linear_is_bilinear(device):
    """Scale 2 with pixel centres (RESAMPLE's own offsets): nearest repeats each element twice
    along each dimension; linear gives the textbook half-pixel weights 0.25 / 0.75, edges repeated."""
    x = np.array([[1, 2], [3, 4]], np.float32).reshape(1, 1, 2, 2)
    d = ResampleDesc.of(TensorDesc(F32, x.shape), [1, 1, 2, 2])
    assert d.output_tensor.sizes == (1, 1, 4, 4)
    assert np.array_equal(_out(d, _run(device, d, x)), x.repeat(2, 2).repeat(2, 3))
    d = ResampleDesc.of(TensorDesc(F32, x.shape), [1, 1, 2, 2], LINEAR)
    want = np.array([[1, 1.25, 1.75, 2], [1.5, 1.75, 2.25, 2.5], [2.5, 2.75, 3.25, 3.5], [3, 3.25, 3.75, 4]],
                    np.float32)
    assert np.array_equal(_out(d, _run(device, d, x))[0, 0], want)
    # RESAMPLE2 with corner offsets (0, 0) and DECREASING: floor(o / 2), the output's first element's
    # input; INCREASING: ceil(o / 2), clamped
    y = np.arange(5, dtype=np.float32)
    d = Resample2Desc.of(TensorDesc(F32, y.shape), [2], NEAREST, AxisDirection.DECREASING, [0], [0])
    assert _out(d, _run(device, d, y)).tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    d = Resample2Desc.of(TensorDesc(F32, y.shape), [2], NEAREST, AxisDirection.INCREASING, [0], [0])
    assert _out(d, _run(device, d, y)).tolist() == [0, 1, 1, 2, 2, 3, 3, 4, 4, 4]


def _strides(rng, sizes, gaps: bool):
    out, acc = [0] * len(sizes), 1
    for d in (rng.permutation(len(sizes)) if gaps else range(len(sizes) - 1, -1, -1)):
        out[d] = acc
        acc *= sizes[d] + int(gaps and rng.integers(0, 2))
    return tuple(out)


def _values(rng, dt, n):
    if dt in (U8, I8):
        return rng.integers(0, 256, n).astype(np.uint8).view(NUMPY[dt])
    return (rng.standard_normal(n) * 50).astype(NUMPY[dt])


def random_case(rng, dt, version, mode, offsets=(0.5, 0.0, 1.0, -0.5, None)):
    """A description of rank 1-4 with whole, halving and random scales, output sizes near
    floor(size x scale), offsets from `offsets` (None: random), random layouts."""
    rank = int(rng.integers(1, 5))
    shape = [int(s) for s in rng.integers(1, 6, rank)]
    scales, ipo, opo, out = [], [], [], []
    for i in shape:
        s = [float(rng.integers(1, 5)), 0.5, 1.5, float(np.float32(rng.uniform(0.3, 4)))][int(rng.integers(0, 4))]
        pick = lambda: (lambda v: float(np.float32(rng.uniform(-1, 1))) if v is None else v)(
            offsets[int(rng.integers(0, len(offsets)))])
        scales.append(s)
        ipo.append(pick())
        opo.append(pick())
        out.append(max(1, int(np.floor(np.float32(s) * i)) + int(rng.integers(-1, 2))))
    gaps = bool(rng.integers(0, 2))
    inp, outd = TensorDesc(dt, shape, _strides(rng, shape, gaps)), TensorDesc(dt, out, _strides(rng, out, not gaps))
    rounding = int(rng.integers(0, 2))
    if version == 0:
        return ResampleDesc(inp, outd, mode, tuple(scales))
    if version == 1:
        return Resample1Desc(inp, outd, mode, tuple(scales), tuple(ipo), tuple(opo))
    if version == 2:
        return Resample2Desc(inp, outd, mode, rounding, tuple(scales), tuple(ipo), tuple(opo))
    return Resample3Desc(inp, outd, mode, rounding, tuple(scales), tuple(ipo), tuple(opo), False)


def expected(desc, x):
    """dmlvk.reference.resample of the description on its input's logical elements x."""
    return reference.resample(x, desc.output_tensor.sizes, desc.scales, getattr(desc, "input_pixel_offsets", None),
                              getattr(desc, "output_pixel_offsets", None), desc.interpolation_mode == LINEAR,
                              desc.version, getattr(desc, "rounding_direction", 1) == AxisDirection.INCREASING)


@pytest.mark.parametrize("mode", [NEAREST, LINEAR], ids=["nearest", "linear"])
@pytest.mark.parametrize("data_type", [F32, F16, U8, I8], ids=lambda t: t.name.lower())
def test_every_type_rank_version_and_layout_is_the_references(device, rng, data_type, mode):
    """Four versions x 6 random descriptions: inputs and outputs packed or permuted with gaps, every
    output element the reference's, bytes between them untouched."""
    nbytes = data_type.bits // 8
    for trial in range(24):
        desc = random_case(rng, data_type, trial % 4, mode, offsets=(0.5, 0.0, 1.0, -0.5, None))
        inp, out = desc.input_tensor, desc.output_tensor
        buf = rng.integers(0, 256, inp.total_bytes, dtype=np.uint8)
        view_in = strided_view(buf, np.dtype(NUMPY[data_type]), inp.sizes, inp.effective_strides)
        view_in[...] = _values(rng, data_type, inp.element_count).reshape(inp.sizes)
        y0 = rng.integers(0, 256, out.total_bytes, dtype=np.uint8)
        y = _run(device, desc, buf, y0)
        got = strided_view(y, np.dtype(NUMPY[data_type]), out.sizes, out.effective_strides)
        want = expected(desc, np.array(view_in))
        assert np.array_equal(got.view(f"u{nbytes}"), want.view(f"u{nbytes}")), (trial, desc)
        gaps = ~element_mask(y.size, nbytes, out.sizes, out.effective_strides)
        assert np.array_equal(y[gaps], y0[gaps]), trial


def test_the_quirks_measured_against_directml(device):
    """What DirectML does that the documented formula alone does not say (measured under Wine):
    RESAMPLE and RESAMPLE1 of 8-bit types pick floor(x) where their float types pick floor(x + 0.5); linear blends
    v0 + (v1 - v0) * w, so an infinity next to its neighbour gives NaN even at weight 0, while a
    dimension of one element is not blended at all; 8-bit linear results are truncated."""
    x = np.arange(4, dtype=np.uint8)
    d8 = Resample1Desc.of(TensorDesc(U8, (4,)), [2], NEAREST, [0], [0])
    df = Resample1Desc.of(TensorDesc(F32, (4,)), [2], NEAREST, [0], [0])
    assert _out(d8, _run(device, d8, x)).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert _out(df, _run(device, df, x.astype(np.float32))).tolist() == [0, 1, 1, 2, 2, 3, 3, 3]
    d8 = ResampleDesc.of(TensorDesc(U8, (4,)), [2])
    df = ResampleDesc.of(TensorDesc(F32, (4,)), [2])
    assert _out(d8, _run(device, d8, x)).tolist() == [0, 0, 0, 1, 1, 2, 2, 3]
    assert _out(df, _run(device, df, x.astype(np.float32))).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    v = np.array([np.inf, 1, 2, -np.inf, np.nan, 3], np.float32)
    for shape in [(6,), (1, 6)]:
        d = Resample2Desc.of(TensorDesc(F32, shape), [1] * (len(shape) - 1) + [2], LINEAR, AxisDirection.DECREASING,
                             [0.5] * len(shape), [-0.5] * len(shape))
        got = _out(d, _run(device, d, v.reshape(shape))).reshape(-1)
        assert np.array_equal(got, np.array([np.nan, np.nan, np.nan, 1.25, 1.75, -np.inf, -np.inf] + [np.nan] * 4 + [3],
                                            np.float32), equal_nan=True), (shape, got)
    d = Resample1Desc.of(TensorDesc(U8, (2,)), [4], LINEAR, [0], [0])
    assert _out(d, _run(device, d, np.array([0, 7], np.uint8))).tolist() == [0, 1, 3, 5, 7, 7, 7, 7]
    d = Resample1Desc.of(TensorDesc(I8, (2,)), [4], LINEAR, [0], [0])
    assert _out(d, _run(device, d, np.array([0, -7], np.int8))).tolist() == [0, -1, -3, -5, -7, -7, -7, -7]


def test_antialiased(device):
    """RESAMPLE3's Antialiased changes nothing in nearest mode or where linear scales up; antialiased
    linear downscaling is refused at compile with UnsupportedError (not implemented)."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for mode, scales in [(NEAREST, [0.5, 0.5]), (LINEAR, [2.0, 1.5])]:
        plain = Resample3Desc.of(TensorDesc(F32, x.shape), scales, mode)
        aa = Resample3Desc.of(TensorDesc(F32, x.shape), scales, mode, antialiased=True)
        assert np.array_equal(_run(device, aa, x), _run(device, plain, x))
    with pytest.raises(UnsupportedError, match="antialiased linear downscaling"):
        device.create_operator(Resample3Desc.of(TensorDesc(F32, x.shape), [0.5, 1.0], LINEAR, antialiased=True))


def test_validation():
    t = lambda sizes, dt=F32: TensorDesc(dt, sizes)
    four = ResampleDesc(t((1, 1, 2, 3)), t((1, 1, 4, 6)), NEAREST, (1, 1, 2, 2))
    check_validation(four, FeatureLevel.FL_1_0, "RESAMPLE requires DML_FEATURE_LEVEL_2_0")
    check_validation(four, FeatureLevel.FL_2_0, None)
    one = Resample1Desc(t((1, 1, 2, 3)), t((1, 1, 4, 6)), NEAREST, (1, 1, 2, 2), (0.5,) * 4, (-0.5,) * 4)
    check_validation(one, FeatureLevel.FL_2_0, "RESAMPLE1 requires DML_FEATURE_LEVEL_2_1")
    check_validation(one, FeatureLevel.FL_2_1, None)
    two = Resample2Desc(t((2, 3)), t((4, 6)), LINEAR, 0, (2, 2), (0.5, 0.5), (-0.5, -0.5))
    check_validation(two, FeatureLevel.FL_5_0, "RESAMPLE2 requires DML_FEATURE_LEVEL_5_1")
    check_validation(two, FeatureLevel.FL_5_1, None)
    three = Resample3Desc(t((2, 3)), t((4, 6)), LINEAR, 0, (2, 2), (0.5, 0.5), (-0.5, -0.5), True)
    check_validation(three, FeatureLevel.FL_6_3, "RESAMPLE3 requires DML_FEATURE_LEVEL_6_4")
    check_validation(three, FeatureLevel.FL_6_4, None)
    check_validation(ResampleDesc(t((2, 3)), t((4, 6)), NEAREST, (2, 2)), FeatureLevel.FL_5_0, "DimensionCount 2")
    check_validation(ResampleDesc(t((2, 3)), t((4, 6)), NEAREST, (2, 2)), FeatureLevel.FL_5_1, None)
    check_validation(ResampleDesc(t((1, 1, 1, 2, 3)), t((1, 1, 1, 4, 6)), NEAREST, (1, 1, 1, 2, 2)),
                     FeatureLevel.FL_6_4, "DimensionCount 5")
    eight = Resample2Desc(t((2, 3), U8), t((4, 6), U8), NEAREST, 0, (2, 2), (0.5, 0.5), (-0.5, -0.5))
    check_validation(eight, FeatureLevel.FL_6_1, "UINT8, which is not supported at")
    check_validation(eight, FeatureLevel.FL_6_2, None)
    check_validation(Resample2Desc(t((2, 3), DataType.INT32), t((4, 6), DataType.INT32), NEAREST, 0, (2, 2),
                                   (0.5, 0.5), (-0.5, -0.5)), FeatureLevel.FL_6_4, "INT32")
    check_validation(Resample2Desc(t((2, 3)), t((4, 6), F16), NEAREST, 0, (2, 2), (0.5, 0.5), (-0.5, -0.5)),
                     FeatureLevel.FL_6_4, "Mismatched tensor data types")
    check_validation(Resample2Desc(t((2, 3)), t((4, 6, 1)), NEAREST, 0, (2, 2), (0.5, 0.5), (-0.5, -0.5)),
                     FeatureLevel.FL_6_4, "DimensionCount 3")
    check_validation(Resample2Desc(t((2, 3)), t((4, 6)), NEAREST, 0, (2, 2, 1), (0.5, 0.5), (-0.5, -0.5)),
                     FeatureLevel.FL_6_4, "DimensionCount is 3")
    check_validation(ResampleDesc(t((2, 3)), t((4, 6)), NEAREST, (2,)), FeatureLevel.FL_6_4, "ScaleCount is 1")
    check_validation(Resample1Desc(t((2, 3)), t((4, 6)), NEAREST, (2, 2), (0.5,), (-0.5, -0.5)), FeatureLevel.FL_6_4,
                     "DimensionCount is 1")
    check_validation(Resample1Desc(t((2, 3)), t((4, 6)), NEAREST, (2, 2), None, (-0.5, -0.5)), FeatureLevel.FL_6_4,
                     "InputPixelOffsets is null")
    check_validation(Resample2Desc(t((2, 3)), t((4, 6)), 2, 0, (2, 2), (0.5, 0.5), (-0.5, -0.5)), FeatureLevel.FL_6_4,
                     "InterpolationMode is 2")
    check_validation(Resample2Desc(t((2, 3)), t((4, 6)), NEAREST, 2, (2, 2), (0.5, 0.5), (-0.5, -0.5)),
                     FeatureLevel.FL_6_4, "RoundingDirection is 2")
    for bad in (0.0, -1.0, float("nan")):
        check_validation(Resample2Desc(t((2, 3)), t((4, 6)), NEAREST, 0, (2, bad), (0.5, 0.5), (-0.5, -0.5)),
                         FeatureLevel.FL_6_4, "Scales")
    check_validation(Resample2Desc(t((2, 3)), t((4, 6)), NEAREST, 0, (2, float("inf")), (0.5, 0.5), (-0.5, -0.5)),
                     FeatureLevel.FL_6_4, None)           # DirectML takes an infinite scale (measured)
    check_validation(Resample2Desc(t((2, 3)), t((7, 1)), NEAREST, 0, (2, 2), (0.5, 0.5), (-0.5, -0.5)),
                     FeatureLevel.FL_6_4, None)           # any output size
    with pytest.raises(TypeError):
        Resample2Desc(t((2, 3)), t((4, 6)), NEAREST, 0, ("2", 2), (0.5, 0.5), (-0.5, -0.5)).validate(FeatureLevel.FL_6_4)


def test_coordinate_tables_past_the_binding_limit_are_a_device_limit_error(device):
    """A dimension of more output elements than the device can bind table words for is refused at
    compile with DeviceLimitError, before any table is made (a table of 2^31 coordinates would take
    tens of GB of host memory)."""
    from dmlvk import DeviceLimitError
    words = device.info.max_storage_buffer_range // 4 + 1
    for mode, width in ((NEAREST, words), (LINEAR, words // 4 + 1)):
        d = Resample2Desc(TensorDesc(F32, (1, 1)), TensorDesc(F32, (1, width)), mode, 0, (1.0, 2.0), (0.5, 0.5),
                          (-0.5, -0.5))
        with pytest.raises(DeviceLimitError, match="coordinate tables"):
            device.create_operator(d)
