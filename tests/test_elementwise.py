"""ELEMENT_WISE_ADD, ELEMENT_WISE_MULTIPLY and ELEMENT_WISE_CLIP (dmlvk/ops/elementwise.py): every
type, rank and layout (broadcasting strides of 0, outputs permuted with gaps) against
dmlvk.reference.element_wise and numpy, the arithmetic DirectML was measured to use, in place, and
the validation rules with the feature levels' type and rank tables. DirectML itself checks the same
under Wine (tests/test_directml.py)."""
import numpy as np
import pytest

from dmlvk import (DataType, ElementWiseAddDesc, ElementWiseClipDesc, ElementWiseMultiplyDesc, FeatureLevel,
                   TensorDesc)
from dmlvk import reference
from harness import check_validation, element_mask, padded, strided_view

F32, F16 = DataType.FLOAT32, DataType.FLOAT16
TYPES = [F32, F16, DataType.INT32, DataType.UINT32, DataType.INT16, DataType.UINT16, DataType.INT8, DataType.UINT8,
         DataType.INT64, DataType.UINT64]


def _strides(rng, sizes, gaps: bool, broadcast: bool = False):
    out, acc = [0] * len(sizes), 1
    for d in (rng.permutation(len(sizes)) if gaps else range(len(sizes) - 1, -1, -1)):
        out[d] = 0 if broadcast and rng.integers(0, 2) else acc
        acc *= sizes[d] + int(gaps and rng.integers(0, 2))
    return tuple(out)


def _fill(rng, dt, t: TensorDesc) -> np.ndarray:
    buf = rng.integers(0, 256, max(t.total_bytes, 4), dtype=np.uint8)
    if dt in (F32, F16):
        view = strided_view(buf, dt.numpy_dtype, t.sizes, t.effective_strides)
        scale = rng.choice([1.0, 100.0, 3e4], t.sizes)
        with np.errstate(over="ignore"):                      # float16 infinities too
            view[...] = (rng.standard_normal(t.sizes) * scale).astype(dt.numpy_dtype)
    return buf


def case(rng, dt, kind: str):
    rank = int(rng.integers(1, 9))
    sizes = [int(s) for s in rng.integers(1, 4, rank)]
    gaps = bool(rng.integers(0, 2))
    a = TensorDesc(dt, sizes, _strides(rng, sizes, gaps))
    out = TensorDesc(dt, sizes, _strides(rng, sizes, not gaps))
    if kind == "clip":
        lo, hi = sorted(float(v) for v in rng.uniform(-300, 300, 2))
        sb = None if rng.integers(0, 3) == 0 or dt in (DataType.INT64, DataType.UINT64) else \
            (float(rng.uniform(-3, 3)), float(rng.uniform(-9, 9)))
        return ElementWiseClipDesc(a, out, sb, lo, hi)
    b = TensorDesc(dt, sizes, _strides(rng, sizes, gaps, broadcast=True))
    return (ElementWiseAddDesc if kind == "add" else ElementWiseMultiplyDesc)(a, b, out)


def expected(desc, views):
    kind = {"ELEMENT_WISE_ADD": "add", "ELEMENT_WISE_MULTIPLY": "multiply"}.get(desc.operator_type.name, "clip")
    if kind == "clip":
        return reference.element_wise("clip", views[0], scale_bias=desc.scale_bias, lo=desc.min, hi=desc.max)
    return reference.element_wise(kind, views[0], views[1])


@pytest.mark.parametrize("kind", ["add", "multiply", "clip"])
@pytest.mark.parametrize("data_type", TYPES, ids=lambda t: t.name.lower())
def test_every_type_rank_and_layout_is_the_references(device, rng, data_type, kind):
    """Ranks 1 to 8, inputs packed or permuted with gaps (B broadcast by strides of 0), outputs
    permuted: every element the reference's, the bytes between them untouched."""
    nbytes = data_type.bits // 8
    for trial in range(6):
        desc = case(rng, data_type, kind)
        ins = [t for t in (getattr(desc, n, None) for n in ("a_tensor", "b_tensor", "input_tensor")) if t is not None]
        bufs = [_fill(rng, data_type, t) for t in ins]
        out = desc.output_tensor
        y0 = rng.integers(0, 256, max(out.total_bytes, 4), dtype=np.uint8)
        y = y0.copy()
        device.create_operator(desc).execute(bufs, [y])
        views = [np.array(strided_view(b, data_type.numpy_dtype, t.sizes, t.effective_strides)) for b, t in zip(bufs, ins)]
        got = strided_view(y, data_type.numpy_dtype, out.sizes, out.effective_strides)
        want = expected(desc, views)
        u = f"u{nbytes}"
        assert np.array_equal(got.view(u), want.view(u)), (trial, desc)
        gaps = ~element_mask(y.size, nbytes, out.sizes, out.effective_strides)
        assert np.array_equal(y[gaps], y0[gaps]), trial


def test_the_arithmetic_measured_against_directml(device):
    """float32 is numpy's; float16 rounds toward zero but past 65504 gives infinity; integers wrap,
    64-bit ones too; CLIP keeps a NaN as Max, lets Min win where Min > Max, truncates integer bounds
    toward zero, rounds float16 bounds to nearest, and takes integers under a ScaleBias through float32
    (truncated), an identity ScaleBias keeping int32 values past 2^24 exact."""
    def run(desc, *arrays):
        y = np.zeros(max(desc.output_tensor.total_bytes, 4), np.uint8)
        device.create_operator(desc).execute([padded(a) for a in arrays], [y])
        t = desc.output_tensor
        return y[:t.element_count * t.element_bytes].view(t.data_type.numpy_dtype)

    t = lambda dt, n: TensorDesc(dt, (n,))
    x32 = np.array([1e30, 0.1, -7.5, np.inf], np.float32)
    with np.errstate(over="ignore"):
        assert np.array_equal(run(ElementWiseMultiplyDesc.of(t(F32, 4), t(F32, 4)), x32, x32), x32 * x32)
    h = np.array([65504, 65504, 1, 3], np.float16)
    g = np.array([8, -65504, 2 ** -12, 1 / 3], np.float16)
    got = run(ElementWiseAddDesc.of(t(F16, 4), t(F16, 4)), h, g)
    assert got.tolist()[:3] == [np.inf, 0.0, 1.0] and got[3] == np.float16(3.332)  # 3.3333 toward zero
    i8 = np.array([127, -128, 100], np.int8)
    assert run(ElementWiseAddDesc.of(t(DataType.INT8, 3), t(DataType.INT8, 3)), i8, i8).tolist() == [-2, 0, -56]
    u64 = np.array([2 ** 64 - 1, 2 ** 40 + 3], np.uint64)
    assert run(ElementWiseMultiplyDesc.of(t(DataType.UINT64, 2), t(DataType.UINT64, 2)), u64, u64).tolist() == \
        [1, ((2 ** 40 + 3) ** 2) % 2 ** 64]
    assert run(ElementWiseAddDesc.of(t(DataType.INT64, 2), t(DataType.INT64, 2)), np.array([2 ** 63 - 1, -5], np.int64),
               np.array([1, 2], np.int64)).tolist() == [-2 ** 63, -3]
    assert np.array_equal(run(ElementWiseClipDesc.of(t(F32, 4), -2.0, 3.0), np.array([np.nan, 1, -5, np.inf], np.float32)),
                          np.array([3, 1, -2, 3], np.float32))
    assert run(ElementWiseClipDesc.of(t(F32, 2), 3.0, -2.0), np.array([0, 9], np.float32)).tolist() == [3, 3]
    assert run(ElementWiseClipDesc.of(t(F16, 2), -100.3, 70.7), np.array([-200, 80], np.float16)).tolist() == \
        [-100.3125, 70.6875]
    i32 = np.array([16777217, -16777217, 2 ** 31 - 1, 5], np.int32)
    assert run(ElementWiseClipDesc.of(t(DataType.INT32, 4), -7.5, 7.9), i32).tolist() == [7, -7, 7, 5]
    assert run(ElementWiseClipDesc.of(t(DataType.INT32, 4), -1e9, 1e9, (1.0, 0.0)), i32).tolist() == \
        [16777217, -16777217, 10 ** 9, 5]
    u8 = np.array([0, 3, 5, 200, 255, 9], np.uint8)
    assert run(ElementWiseClipDesc.of(t(DataType.UINT8, 6), 3.7, 7.2, (0.5, 0.25)), u8).tolist() == [3, 3, 3, 7, 7, 4]
    assert run(ElementWiseClipDesc.of(t(DataType.UINT8, 6), 3.7, 300.0), u8).tolist() == [3, 3, 5, 200, 255, 9]


def test_in_place(device):
    """The output bound to A's own Buffer (laid out alike): A + B written over A."""
    a = np.arange(8, dtype=np.float32)
    desc = ElementWiseAddDesc.of(TensorDesc(F32, (8,)), TensorDesc(F32, (8,)))
    op = device.create_operator(desc)
    from dmlvk import Buffer
    buf_a, buf_b = Buffer(device, 32), Buffer(device, 32)
    buf_a.write(a)
    buf_b.write(np.full(8, 0.5, np.float32))
    op.execute([buf_a, buf_b], [buf_a])
    assert np.array_equal(buf_a.read().view(np.float32), a + 0.5)


def test_validation():
    t = lambda sizes, dt=F32, strides=None: TensorDesc(dt, sizes, strides)
    add = ElementWiseAddDesc(t((1, 2, 3, 4)), t((1, 2, 3, 4)), t((1, 2, 3, 4)))
    check_validation(add, FeatureLevel.FL_1_0, None)
    check_validation(ElementWiseAddDesc(t((1, 2, 3, 4)), t((1, 2, 3, 4), F16), t((1, 2, 3, 4))), FeatureLevel.FL_6_4,
                     "Mismatched tensor data types")
    check_validation(ElementWiseAddDesc(t((1, 2, 3, 4)), t((1, 1, 3, 4), strides=(0, 0, 4, 1)), t((1, 2, 3, 4))),
                     FeatureLevel.FL_6_4, "expected")                   # broadcasting is strides, not Sizes
    check_validation(ElementWiseAddDesc(t((1, 2, 3, 4)), t((1, 2, 3, 4), strides=(0, 0, 4, 1)), t((1, 2, 3, 4))),
                     FeatureLevel.FL_6_4, None)
    check_validation(ElementWiseAddDesc(t((1, 2, 3, 4)), t((1, 2, 3, 4)), t((2, 3, 4))), FeatureLevel.FL_6_4,
                     r"Sizes \[2, 3, 4\]; expected")
    five = ElementWiseMultiplyDesc(t((1, 1, 2, 3, 4)), t((1, 1, 2, 3, 4)), t((1, 1, 2, 3, 4)))
    check_validation(five, FeatureLevel.FL_1_0, None)
    two = ElementWiseMultiplyDesc(t((3, 4)), t((3, 4)), t((3, 4)))
    check_validation(two, FeatureLevel.FL_2_1, "DimensionCount 2")
    check_validation(two, FeatureLevel.FL_3_0, None)
    eight = lambda dt: ElementWiseAddDesc(t((3, 4), dt), t((3, 4), dt), t((3, 4), dt))
    check_validation(eight(DataType.INT32), FeatureLevel.FL_2_0, "INT32")
    check_validation(eight(DataType.INT32), FeatureLevel.FL_3_0, None)
    check_validation(eight(DataType.UINT64), FeatureLevel.FL_4_0, "UINT64")
    check_validation(eight(DataType.UINT64), FeatureLevel.FL_4_1, None)
    check_validation(eight(DataType.INT8), FeatureLevel.FL_5_0, "INT8")
    check_validation(eight(DataType.INT8), FeatureLevel.FL_5_1, None)
    check_validation(eight(DataType.FLOAT64), FeatureLevel.FL_6_4, "FLOAT64")
    clip = lambda dt, sb=None, sizes=(1, 2, 3, 4): ElementWiseClipDesc(t(sizes, dt), t(sizes, dt), sb, 0.0, 5.0)
    check_validation(clip(F32), FeatureLevel.FL_1_0, None)
    check_validation(clip(F32, sizes=(1, 1, 2, 3, 4)), FeatureLevel.FL_2_1, "DimensionCount 5")
    check_validation(clip(DataType.INT8), FeatureLevel.FL_2_0, "INT8")
    check_validation(clip(DataType.INT8), FeatureLevel.FL_2_1, None)
    check_validation(clip(DataType.INT64), FeatureLevel.FL_4_1, "INT64")
    check_validation(clip(DataType.INT64), FeatureLevel.FL_5_0, None)
    check_validation(clip(DataType.INT64, (1.0, 0.0)), FeatureLevel.FL_6_4, None)
    check_validation(clip(DataType.UINT64, (2.0, 1.0)), FeatureLevel.FL_6_4, "64-bit integers take no ScaleBias")
    check_validation(clip(DataType.INT32, (2.0, 1.0)), FeatureLevel.FL_6_4, None)
    with pytest.raises(TypeError):
        ElementWiseClipDesc(t((2, 3)), t((2, 3)), None, "0", 5.0).validate(FeatureLevel.FL_6_4)
    with pytest.raises(TypeError):
        ElementWiseClipDesc(t((2, 3)), t((2, 3)), (1.0,), 0.0, 5.0).validate(FeatureLevel.FL_6_4)
