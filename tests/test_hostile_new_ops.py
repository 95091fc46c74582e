"""Hostile descriptions of ELEMENT_WISE_QUANTIZED_LINEAR_ADD, JOIN and TILE: valid random ones with one
or two fields pushed to edges (sizes, strides, totals, types, flags, axis, repeats). Each must end in a
clear error (ValidationError naming the operator, or a ValueError/TypeError with a message) or, where
accepted, in the reference's result with the output's other bytes untouched; never a crash."""
import numpy as np
import pytest

from dmlvk import DataType, JoinDesc, TensorDesc, TensorFlags, TileDesc, ValidationError, reference
from dmlvk.ops.quantized_add import ElementWiseQuantizedLinearAddDesc as AddDesc
from harness import element_mask, strided_view

EDGE = [0, 1, 2, 3, 2**31 - 1, 2**31, 2**32 - 1, 2**32, -1]
MAX_RUN_BYTES = 1 << 16


def _tensor(rng, dt, sizes):
    return {"dt": dt, "sizes": list(sizes), "strides": None, "total": None, "flags": 0}


def _mutate(rng, t: dict) -> None:
    what = int(rng.integers(0, 6))
    edge = int(EDGE[rng.integers(0, len(EDGE))])
    if what == 0:
        t["sizes"][int(rng.integers(0, len(t["sizes"])))] = edge
    elif what == 1:
        t["strides"] = list(t["strides"] or [1] * len(t["sizes"]))
        t["strides"][int(rng.integers(0, len(t["sizes"])))] = edge
    elif what == 2:
        t["total"] = int(rng.choice([0, 2, 4, 6, 2**31, 2**32 + 4]))
    elif what == 3:
        t["dt"] = int(rng.integers(0, 16))
    elif what == 4:
        t["flags"] = int(rng.choice([1, 4]))
    else:
        t["sizes"] = t["sizes"][:-1] if len(t["sizes"]) > 1 else t["sizes"] + [1]
        t["strides"] = None


def _desc(t):
    return None if t is None else TensorDesc(t["dt"], t["sizes"], t["strides"], t["total"], 0, t["flags"])


def _case(rng, kind):
    rank = int(rng.integers(1, 5))
    sizes = [int(s) for s in rng.integers(1, 4, rank)]
    u8 = int(DataType.UINT8)
    if kind == "add":
        one = [1] * rank
        ts = {k: _tensor(rng, int(DataType.FLOAT32) if "s" in k else u8, sizes if k in "abo" else one)
              for k in ("a", "as", "az", "b", "bs", "bz", "os", "oz", "o")}
        make = lambda t: AddDesc(*[_desc(t[k]) for k in ("a", "as", "az", "b", "bs", "bz", "os", "oz", "o")])
    elif kind == "join":
        axis = int(rng.integers(0, rank))
        ts = {"i0": _tensor(rng, u8, sizes), "i1": _tensor(rng, u8, sizes)}
        out = list(sizes)
        out[axis] *= 2
        ts["o"] = _tensor(rng, u8, out)
        ts["axis"] = axis
        make = lambda t: JoinDesc([_desc(t["i0"]), _desc(t["i1"])], _desc(t["o"]), t["axis"])
    else:
        reps = [int(r) for r in rng.integers(1, 3, rank)]
        ts = {"i": _tensor(rng, u8, sizes), "o": _tensor(rng, u8, [s * r for s, r in zip(sizes, reps)]), "r": reps}
        make = lambda t: TileDesc(_desc(t["i"]), _desc(t["o"]), t["r"])
    for _ in range(int(rng.integers(0, 3))):
        key = [k for k in ts if isinstance(ts[k], dict)][int(rng.integers(0, sum(isinstance(v, dict) for v in ts.values())))]
        if rng.integers(0, 6) == 0 and kind == "join":
            ts["axis"] = int(EDGE[rng.integers(0, len(EDGE))])
        elif rng.integers(0, 6) == 0 and kind == "tile":
            ts["r"] = [int(EDGE[rng.integers(0, len(EDGE))])] + ts["r"][1:]
        else:
            _mutate(rng, ts[key])
    return make(ts)


def _reference(desc, bufs):
    view = lambda buf, t: strided_view(buf, np.dtype(t.data_type.numpy_dtype), t.sizes, t.effective_strides)
    if isinstance(desc, JoinDesc):
        return np.concatenate([view(b, t) for b, t in zip(bufs, desc.input_tensors)], desc.axis)
    if isinstance(desc, TileDesc):
        return np.tile(view(bufs[0], desc.input_tensor), desc.repeats)
    ts = desc.tensors()
    val = lambda k: None if ts[k] is None else view(bufs[k], ts[k]).reshape(-1)[0]
    return reference.quantized_linear_add(view(bufs[0], ts[0]), val(1), val(2), view(bufs[3], ts[3]), val(4), val(5),
                                          val(6), val(7), np.dtype(ts[8].data_type.numpy_dtype))


@pytest.mark.parametrize("kind", ["add", "join", "tile"])
def test_hostile_descriptions_end_in_a_clear_error_or_the_reference_result(device, rng, kind):
    tally = {"rejected": 0, "ran": 0}
    for _ in range(150):
        try:
            desc = _case(rng, kind)
            op = device.create_operator(desc)
        except (ValidationError, ValueError, TypeError) as e:
            assert str(e), type(e)
            if isinstance(e, ValidationError):
                assert e.args[0].startswith("DML_OPERATOR_"), e
            tally["rejected"] += 1
            continue
        ins = list(desc.input_tensors) if kind == "join" else [desc.input_tensor] if kind == "tile" else \
            list(desc.tensors()[:8])
        out = desc.output_tensor
        if max([t.total_bytes for t in ins if t is not None] + [out.total_bytes]) > MAX_RUN_BYTES:
            continue
        bufs = [None if t is None else rng.integers(0, 256, max(t.total_bytes, 4), dtype=np.uint8) for t in ins]
        if kind == "add":        # scales in a sensible range: the reference and the table agree on any
            for k in (1, 4, 6):
                bufs[k][:4] = np.float32(rng.uniform(0.005, 0.05)).reshape(1).view(np.uint8)
        y0 = rng.integers(0, 256, max(out.total_bytes, 4), dtype=np.uint8)
        y = y0.copy()
        owned = [t is not None and bool(t.flags & TensorFlags.OWNED_BY_DML) for t in ins]
        if any(owned):                # OWNED_BY_DML inputs: bound once at initialization
            op.initialize([b if o else None for b, o in zip(bufs, owned)])
        op.execute([None if o else b for b, o in zip(bufs, owned)], [y])
        got = strided_view(y, np.dtype(out.data_type.numpy_dtype), out.sizes, out.effective_strides)
        assert np.array_equal(got, _reference(desc, bufs)), desc
        nbytes = out.data_type.bits // 8
        gaps = ~element_mask(y.size, nbytes, out.sizes, out.effective_strides)
        assert np.array_equal(y[gaps], y0[gaps]), desc
        tally["ran"] += 1
    assert tally["rejected"] > 10 and tally["ran"] > 20, tally
