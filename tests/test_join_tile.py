"""JOIN and TILE (dmlvk/ops/join_tile.py): DirectML's documented examples, every data type, rank and
layout against numpy (np.concatenate, np.tile; the output's gaps untouched), and the validation
rules with the feature levels' type and rank tables."""
import numpy as np
import pytest

from dmlvk import DataType, FeatureLevel, JoinDesc, TensorDesc, TileDesc
from harness import check_validation, element_mask, padded, strided_view

F32, U8 = DataType.FLOAT32, DataType.UINT8
TYPES = [t for t in DataType if t not in (DataType.UNKNOWN, DataType.UINT4, DataType.INT4)]



def _run(device, desc, inputs, out_bytes=None):
    op = device.create_operator(desc)
    out = desc.output_tensor
    y = np.zeros(out.total_bytes if out_bytes is None else out_bytes.size, np.uint8) if out_bytes is None \
        else out_bytes.copy()
    op.execute([padded(a) for a in inputs], [y])
    return y


def test_directml_documented_examples(device):
    """JOIN: {1,1,2,3} and {1,1,2,4} on axis 3; three {1,1,2,2} on axes 1, 2 and 3. TILE: [[1,2],[3,4]]
    by [1, 2], and {1,1,2,3} by {1,1,3,3}."""
    a = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    b = np.arange(10, 18, dtype=np.float32).reshape(1, 1, 2, 4)
    d = JoinDesc.of([TensorDesc(F32, a.shape), TensorDesc(F32, b.shape)], 3)
    assert d.output_tensor.sizes == (1, 1, 2, 7)
    assert np.array_equal(_run(device, d, [a, b])[:56].view(np.float32).reshape(1, 1, 2, 7), np.concatenate([a, b], 3))
    parts = [np.full((1, 1, 2, 2), k, np.float32) + np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2) for k in (0, 10, 20)]
    for axis in (1, 2, 3):
        d = JoinDesc.of([TensorDesc(F32, (1, 1, 2, 2))] * 3, axis)
        got = _run(device, d, parts)[:48].view(np.float32).reshape(d.output_tensor.sizes)
        assert np.array_equal(got, np.concatenate(parts, axis))
    m = np.array([[1, 2], [3, 4]], np.float32)
    d = TileDesc.of(TensorDesc(F32, (2, 2)), [1, 2])
    assert np.array_equal(_run(device, d, [m])[:32].view(np.float32).reshape(2, 4), [[1, 2, 1, 2], [3, 4, 3, 4]])
    x = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    d = TileDesc.of(TensorDesc(F32, x.shape), [1, 1, 3, 3])
    assert np.array_equal(_run(device, d, [x])[:216].view(np.float32).reshape(1, 1, 6, 9), np.tile(x, (1, 1, 3, 3)))


def _strides(rng, sizes, gaps: bool, broadcast: bool = False):
    out, acc = [0] * len(sizes), 1
    for d in (rng.permutation(len(sizes)) if gaps else range(len(sizes) - 1, -1, -1)):
        out[d] = 0 if broadcast and sizes[d] == 1 else acc
        acc *= sizes[d] + int(gaps and rng.integers(0, 2))
    return tuple(out)


@pytest.mark.parametrize("data_type", TYPES, ids=lambda t: t.name.lower())
def test_every_type_rank_and_layout_is_numpys(device, rng, data_type):
    """Ranks 1 to 8, inputs and outputs packed or permuted with gaps: JOIN of 1-3 inputs on a random
    axis is np.concatenate, TILE by random repeats is np.tile; bytes between the output's elements
    untouched."""
    nbytes = data_type.bits // 8
    for trial in range(8):
        rank = 1 + trial
        axis = int(rng.integers(0, rank))
        base = [int(s) for s in rng.integers(1, 4, rank)]
        shapes = []
        for _ in range(int(rng.integers(1, 4))):
            s = list(base)
            s[axis] = int(rng.integers(1, 4))
            shapes.append(tuple(s))
        ins = [TensorDesc(data_type, s, _strides(rng, s, trial % 2 == 1)) for s in shapes]
        bufs = [rng.integers(0, 256, t.total_bytes, dtype=np.uint8) for t in ins]
        out_sizes = list(base)
        out_sizes[axis] = sum(s[axis] for s in shapes)
        out = TensorDesc(data_type, out_sizes, _strides(rng, out_sizes, trial % 2 == 0))
        y0 = rng.integers(0, 256, out.total_bytes, dtype=np.uint8)
        y = _run(device, JoinDesc(ins, out, axis), bufs, y0)
        view = lambda buf, t: strided_view(buf, np.dtype(f"u{nbytes}"), t.sizes, t.effective_strides)
        want = np.concatenate([view(b, t) for b, t in zip(bufs, ins)], axis)
        assert np.array_equal(view(y, out), want), ("join", rank)
        gaps = ~element_mask(y.size, nbytes, out.sizes, out.effective_strides)
        assert np.array_equal(y[gaps], y0[gaps]), ("join gaps", rank)

        repeats = [int(r) for r in rng.integers(1, 3, rank)]
        inp = TensorDesc(data_type, base, _strides(rng, base, trial % 2 == 1, broadcast=True))
        xb = rng.integers(0, 256, max(inp.total_bytes, 4), dtype=np.uint8)
        tiled = [s * r for s, r in zip(base, repeats)]
        out = TensorDesc(data_type, tiled, _strides(rng, tiled, trial % 2 == 0))
        y0 = rng.integers(0, 256, out.total_bytes, dtype=np.uint8)
        y = _run(device, TileDesc(inp, out, repeats), [xb], y0)
        assert np.array_equal(view(y, out), np.tile(view(xb, inp), repeats)), ("tile", rank)
        gaps = ~element_mask(y.size, nbytes, out.sizes, out.effective_strides)
        assert np.array_equal(y[gaps], y0[gaps]), ("tile gaps", rank)



def test_join_validation():
    t = lambda sizes, dt=F32: TensorDesc(dt, sizes)
    ok = JoinDesc([t((1, 2, 3, 4)), t((1, 5, 3, 4))], t((1, 7, 3, 4)), 1)
    check_validation(ok, FeatureLevel.FL_1_0, None)
    check_validation(JoinDesc([], t((1, 7, 3, 4)), 1), FeatureLevel.FL_6_4, "InputCount is 0")
    check_validation(JoinDesc([t((1, 2, 3, 4), U8), t((1, 5, 3, 4))], t((1, 7, 3, 4)), 1), FeatureLevel.FL_6_4,
           "Mismatched tensor data types")
    check_validation(JoinDesc([t((1, 2, 3, 4)), t((1, 5, 3))], t((1, 7, 3, 4)), 1), FeatureLevel.FL_6_4, "DimensionCount 3")
    check_validation(JoinDesc([t((1, 2, 3, 4)), t((1, 5, 3, 4))], t((1, 7, 3, 4)), 4), FeatureLevel.FL_6_4, "Axis is 4")
    check_validation(JoinDesc([t((1, 2, 3, 4)), t((1, 5, 2, 4))], t((1, 7, 3, 4)), 1), FeatureLevel.FL_6_4, "off the axis 1")
    check_validation(JoinDesc([t((1, 2, 3, 4)), t((1, 5, 3, 4))], t((1, 8, 3, 4)), 1), FeatureLevel.FL_6_4, "sum to 7")
    u8 = JoinDesc([t((1, 2, 3, 4), U8)], t((1, 2, 3, 4), U8), 0)
    check_validation(u8, FeatureLevel.FL_2_0, "UINT8, which is not supported at")
    check_validation(u8, FeatureLevel.FL_2_1, None)
    f64 = JoinDesc([t((2, 3), DataType.FLOAT64)], t((2, 3), DataType.FLOAT64), 0)
    check_validation(f64, FeatureLevel.FL_4_0, "FLOAT64")
    check_validation(f64, FeatureLevel.FL_4_1, None)
    five = JoinDesc([t((1, 1, 2, 3, 4))], t((1, 1, 2, 3, 4)), 4)
    check_validation(five, FeatureLevel.FL_2_1, "DimensionCount 5")
    check_validation(five, FeatureLevel.FL_3_0, None)
    check_validation(JoinDesc([t((2, 3))], t((2, 3)), 1), FeatureLevel.FL_3_0, "DimensionCount 2")
    with pytest.raises(TypeError):
        JoinDesc(t((1, 2, 3, 4)), t((1, 2, 3, 4)), 0)


def test_tile_validation():
    t = lambda sizes, dt=F32: TensorDesc(dt, sizes)
    check_validation(TileDesc(t((1, 1, 2, 3)), t((1, 1, 6, 9)), (1, 1, 3, 3)), FeatureLevel.FL_1_0, None)
    check_validation(TileDesc(t((1, 1, 2, 3)), t((1, 1, 6, 9), U8), (1, 1, 3, 3)), FeatureLevel.FL_6_4, "Mismatched")
    check_validation(TileDesc(t((1, 1, 2, 3)), t((1, 1, 6, 9)), (1, 3, 3)), FeatureLevel.FL_6_4, "RepeatsCount is 3")
    check_validation(TileDesc(t((1, 1, 2, 3)), t((1, 1, 0, 9)), (1, 1, 0, 3)), FeatureLevel.FL_6_4, "every size must be")
    check_validation(TileDesc(t((1, 1, 2, 3)), t((1, 1, 2, 9)), (1, 1, 0, 3)), FeatureLevel.FL_6_4, "Repeats")
    check_validation(TileDesc(t((1, 1, 2, 3)), t((1, 1, 6, 6)), (1, 1, 3, 3)), FeatureLevel.FL_6_4, "Sizes times Repeats")
    i32 = TileDesc(t((1, 1, 2, 3), DataType.INT32), t((1, 1, 2, 3), DataType.INT32), (1, 1, 1, 1))
    check_validation(i32, FeatureLevel.FL_2_0, "INT32")
    check_validation(i32, FeatureLevel.FL_2_1, None)
    f64 = TileDesc(t((2, 3), DataType.FLOAT64), t((2, 3), DataType.FLOAT64), (1, 1))
    check_validation(f64, FeatureLevel.FL_4_0, "FLOAT64")
    check_validation(f64, FeatureLevel.FL_4_1, None)              # as the release DirectML (the spec's table lists none)
    check_validation(TileDesc(t((2, 3)), t((2, 3)), (1, 1)), FeatureLevel.FL_3_0, "DimensionCount 2")
    check_validation(TileDesc(t((2, 3)), t((2, 3)), (1, 1)), FeatureLevel.FL_3_1, None)
