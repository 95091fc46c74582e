"""A fuzzer over operator descriptions: python -m dmlvk_lab.fuzz [--cases N] [--seed S] [--chunk C].

Each case starts from a valid random description of one of the five operators and mutates none,
one or two of its fields (sizes, strides, total sizes, data types, flags, feature level, block size,
order, convolution members, absent tensors) toward the hostile: huge, zero, wrapping, negative,
wrongly typed. A case must end in a ValidationError that names the field at fault, a
ValueError/TypeError (DeviceLimitError included) with a message, or a result equal to
dmlvk.reference bit for bit, with the output's gap bytes untouched. Cases run in child processes in
chunks, so a crash or a hang is counted and its case printed."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import List, Optional

import numpy as np

from .cases import random_description

EDGE = [0, 1, 2, 3, 2**31 - 1, 2**31, 2**32 - 1, 2**32, -1]
BLOCK_EDGE = [2**16, 2**16 + 1, 46341, 2**31 - 3, 2**31 + 1, 2**31 + 3, 2**32 - 3]
MAX_RUN_BYTES = 1 << 20          # accepted descriptions larger than this are validated, not run
FIELDS = ("'Input'", "'Output'", "'Filter'", "'InputScale'", "'InputZeroPoint'", "'FilterScale'",
          "'FilterZeroPoint'", "'Bias'", "'OutputScale'", "'OutputZeroPoint'", "BlockSize", "Order",
          "GroupCount", "DimensionCount", "Strides", "Dilations", "StartPadding", "EndPadding",
          "DML_FEATURE_LEVEL", "feature level")


# ---- generation -----------------------------------------------------------------------------------

def generate(rng) -> dict:
    """A valid random description (cases.random_description, as plain data), then 0-2 hostile
    mutations."""
    case = random_description(rng)
    for _ in range(int(rng.integers(0, 3))):
        _mutate(rng, case)
    return case


def _mutate(rng, case) -> None:
    from dmlvk.tensor import calc_buffer_tensor_size
    names = [k for k, v in case["tensors"].items() if v is not None]
    t = case["tensors"][names[rng.integers(0, len(names))]]
    what = rng.integers(0, 12)
    edge = lambda: int(EDGE[rng.integers(0, len(EDGE))])
    if what == 0:
        t["sizes"][rng.integers(0, len(t["sizes"]))] = edge()
    elif what in (1, 2):
        t["strides"] = list(t["strides"] or [1] * len(t["sizes"]))
        t["strides"][rng.integers(0, len(t["sizes"]))] = edge()
    elif what == 3:     # a few bytes past the minimum (not whole words), or an edge
        t["total"] = (calc_buffer_tensor_size(t["dt"], t["sizes"], t["strides"]) + int(rng.integers(1, 8))
                      if rng.integers(0, 2) else int(rng.choice([0, 2, 4, 6, 2**31, 2**32 + 4])))
    elif what == 4:
        t["dt"] = int(rng.integers(0, 20))
    elif what == 5:
        t["flags"] = int(rng.choice([1, 4]))
    elif what == 6:
        t["sizes"] = t["sizes"][:int(rng.integers(1, 4))] if rng.integers(0, 2) else t["sizes"] + [1] * int(rng.integers(1, 6))
        t["strides"] = None
    elif what == 7:
        case["level"] = int(rng.choice([0x1000, 0x2000, 0x2100, 0x3000, 0x4000, 0x5100, 0x6400]))
    elif case["family"] != "conv":
        if what in (8, 9):
            # an edge, or a block size whose square passes 32 bits (2^31 + 1 squares to 1 there)
            case["block"] = edge() if rng.integers(0, 3) else int(rng.choice(BLOCK_EDGE))
        else:
            case["order"] = int(rng.choice([0, 1, 2, -1]))
    else:
        key = ["strides", "dilations", "start", "end", "groups"][rng.integers(0, 5)]
        if key == "groups":
            case["groups"] = edge()
        elif rng.integers(0, 4) == 0:
            case[key] = case[key][:1] + [1] * int(rng.integers(0, 3))
        else:
            case[key][rng.integers(0, len(case[key]))] = edge()
        if what == 11 and rng.integers(0, 2):
            name = ["InputZeroPoint", "FilterZeroPoint", "Bias", "OutputZeroPoint", "Input"][rng.integers(0, 5)]
            case["tensors"][name] = None


# ---- running ------------------------------------------------------------------------------------

def description(case):
    """The dmlvk description of a case (TypeError/ValueError for malformed Python values)."""
    import dmlvk
    from dmlvk.tensor import TensorDesc
    td = lambda t: None if t is None else TensorDesc(t["dt"], t["sizes"], t["strides"], t["total"], 0, t["flags"])
    t = {k: td(v) for k, v in case["tensors"].items()}
    f = case["family"]
    if f == "conv":
        order = ["Input", "InputScale", "InputZeroPoint", "Filter", "FilterScale", "FilterZeroPoint", "Bias",
                 "OutputScale", "OutputZeroPoint", "Output"]
        return dmlvk.QuantizedLinearConvolutionDesc(*[t[k] for k in order], case["strides"], case["dilations"],
                                                    case["start"], case["end"], case["groups"])
    cls = {"d2s": dmlvk.DepthToSpaceDesc, "s2d": dmlvk.SpaceToDepthDesc, "d2s1": dmlvk.DepthToSpace1Desc,
           "s2d1": dmlvk.SpaceToDepth1Desc}[f]
    args = [t["Input"], t["Output"], case["block"]] + ([case["order"]] if f.endswith("1") else [])
    return cls(*args)


def _view(buf: np.ndarray, desc) -> np.ndarray:
    dt = desc.data_type.numpy_dtype
    whole = buf[:buf.size // dt.itemsize * dt.itemsize]        # a total need not be whole elements
    return np.lib.stride_tricks.as_strided(whole.view(dt), desc.sizes, tuple(s * dt.itemsize for s in desc.effective_strides))


def run_case(case, devices: dict, rng) -> str:
    """'rejected: ...', 'limit: ...', 'ok', 'large' (valid, not run) or 'WRONG: ...'."""
    import dmlvk
    from dmlvk import reference
    from dmlvk.enums import FeatureLevel
    from dmlvk.tensor import has_overlap
    try:
        desc = description(case)
        level = FeatureLevel(case["level"])
        dev = devices.get(level) or devices.setdefault(level, dmlvk.Device(feature_level=level))
        op = dev.create_operator(desc)
    except dmlvk.ValidationError as e:
        msg = str(e)
        return "rejected" if any(f in msg for f in FIELDS) else f"WRONG: unnamed field: {msg}"
    except (TypeError, ValueError) as e:     # DeviceLimitError is a ValueError
        return f"limit: {type(e).__name__}" if str(e) else f"WRONG: empty {type(e).__name__}"
    descs = op.input_descs + op.output_descs
    if sum(d.total_bytes for d in descs if d is not None) > MAX_RUN_BYTES:
        return "large"
    bufs = [None if d is None else rng.integers(0, 256, d.total_bytes, dtype=np.uint8) for d in descs]
    if case["family"] == "conv":
        for i in (1, 4, 7):              # scales: finite, positive
            if bufs[i] is not None:
                n = bufs[i].size // 4
                bufs[i][:4 * n].view(np.float32)[:] = rng.uniform(0.001, 0.05, n)
    before = bufs[-1].copy()
    owned = [d is not None and bool(d.flags & 1) for d in op.input_descs]     # OWNED_BY_DML
    if any(owned):
        op.initialize([b if o else None for b, o in zip(bufs, owned)])
    op.execute([None if o else b for b, o in zip(bufs, owned)], bufs[-1:])
    out = descs[-1]
    got = _view(bufs[-1], out)
    if case["family"] == "conv":
        v = lambda i: None if descs[i] is None else _view(bufs[i], descs[i]).reshape(-1)
        x, w = _view(bufs[0], descs[0]), _view(bufs[3], descs[3])
        four = lambda a: a if a.ndim == 4 else a.reshape(a.shape[0], a.shape[1], 1, a.shape[2])
        d = desc
        pair = lambda vals, fill: tuple(vals[:2]) if len(vals) >= 2 else (fill,) + tuple(vals)
        grid = four(np.empty(out.sizes, np.uint8)).shape[2:]
        want = reference.quantized_linear_convolution(
            four(x), v(1)[0], None if v(2) is None else v(2)[0], four(w), v(4), v(5), v(6), v(7)[0],
            None if v(8) is None else v(8)[0], out.data_type.numpy_dtype,
            strides=pair(d.strides, 1), dilations=pair(d.dilations, 1), start_padding=pair(d.start_padding, 0),
            end_padding=pair(d.end_padding, 0), group_count=d.group_count, output_size=grid).reshape(out.sizes)
    else:
        fn = reference.depth_to_space if desc.depth_to_space else reference.space_to_depth
        want = fn(_view(bufs[0], descs[0]), desc.block_size, desc.effective_order)
    bits = lambda a: np.ascontiguousarray(a).view(np.uint8)
    # An output whose elements share memory (accepted, as by the release DirectML) holds one of the
    # racing values there: only the bytes outside its elements are checked.
    overlapping = has_overlap(out.sizes, out.effective_strides) is not False
    if not overlapping and not np.array_equal(bits(got), bits(want)):
        return "WRONG: result differs from dmlvk.reference"
    mask = np.zeros(out.total_bytes, bool)
    offsets = np.zeros(1, np.int64)
    for s, st in zip(out.sizes, out.effective_strides):
        offsets = (offsets[:, None] + np.arange(s, dtype=np.int64)[None, :] * st).ravel()
    for k in range(out.element_bytes):
        mask[offsets * out.element_bytes + k] = True
    if not np.array_equal(bufs[-1][~mask], before[~mask]):
        return "WRONG: bytes outside the output's elements changed"
    return "ok"


def _child(first: int, count: int, seed: int) -> int:
    """Run cases first..first+count-1 of a seed, one JSON line each (after a 'start' line)."""
    devices = {}
    for i in range(first, first + count):
        rng = np.random.default_rng([seed, i])
        case = generate(rng)
        print(json.dumps({"start": i}), flush=True)
        outcome = run_case(case, devices, rng)
        print(json.dumps({"case": i, "outcome": outcome}), flush=True)
    return 0


def fuzz(cases: int, seed: int, chunk: int = 100, timeout: float = 300.0, progress=None) -> dict:
    """Run the cases in child processes; returns the tally and the failures (with their cases)."""
    tally, failures = {}, []
    for first in range(0, cases, chunk):
        count = min(chunk, cases - first)
        cmd = [sys.executable, "-m", "dmlvk_lab.fuzz", "--child", str(first), str(count), "--seed", str(seed)]
        env = dict(os.environ)
        pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
            out, crashed = p.stdout, p.returncode != 0
            why = f"exit status {p.returncode}: {p.stderr.strip()[-500:]}"
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            crashed, why = True, f"no answer within {timeout:.0f} s (a hang)"
        done, last = set(), None
        for line in out.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if "start" in rec:
                last = rec["start"]
            else:
                done.add(rec["case"])
                kind = rec["outcome"].split(":")[0]
                tally[kind] = tally.get(kind, 0) + 1
                if kind == "WRONG":
                    failures.append({"case": rec["case"], "why": rec["outcome"],
                                     "description": generate(np.random.default_rng([seed, rec["case"]]))})
        if crashed:
            bad = last if last is not None and last not in done else first
            tally["crash or hang"] = tally.get("crash or hang", 0) + 1
            failures.append({"case": bad, "why": why,
                             "description": generate(np.random.default_rng([seed, bad]))})
            rest = [i for i in range(first, first + count) if i not in done and i != bad]
            if rest:   # the cases after the crash still run
                for i in rest:
                    r = subprocess.run([sys.executable, "-m", "dmlvk_lab.fuzz", "--child", str(i), "1", "--seed", str(seed)],
                                       capture_output=True, text=True, timeout=timeout, env=env)
                    recs = [json.loads(x) for x in r.stdout.splitlines() if x.startswith('{"case"')]
                    kind = recs[0]["outcome"].split(":")[0] if recs and r.returncode == 0 else "crash or hang"
                    tally[kind] = tally.get(kind, 0) + 1
                    if kind in ("WRONG", "crash or hang"):
                        failures.append({"case": i, "why": recs[0]["outcome"] if recs else r.stderr[-500:],
                                         "description": generate(np.random.default_rng([seed, i]))})
        if progress:
            progress(first + count, tally)
    return {"cases": cases, "seed": seed, "tally": tally, "failures": failures}


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dmlvk_lab.fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chunk", type=int, default=200, help="cases per child process (default 200)")
    ap.add_argument("--child", nargs=2, type=int, metavar=("FIRST", "COUNT"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        return _child(a.child[0], a.child[1], a.seed)
    t0 = time.time()
    res = fuzz(a.cases, a.seed, a.chunk, progress=lambda n, t: print(f"\r{n}/{a.cases} {t}", end="", file=sys.stderr))
    print(file=sys.stderr)
    print(json.dumps({k: res[k] for k in ("cases", "seed", "tally")}))
    for f in res["failures"][:20]:
        print(json.dumps(f))
    print(f"{time.time() - t0:.0f} s", file=sys.stderr)
    return 1 if res["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
