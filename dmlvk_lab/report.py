"""Portability report against DirectML, device by device:

    python -m dmlvk_lab report [--device N|all] [--out DIR] [--cases N] [--seed S]

For each selected Vulkan device: DirectML's documented examples, ONNX's node conformance cases,
randomised differential runs against onnxruntime and onnx.reference, the validation matrix of
spec section 5 at every feature level, the choices made where DirectML's behaviour is unconfirmed,
DirectML itself (its answer to each rule, and its output buffers compared byte for byte) where
dmlvk_lab/directml's oracle is set up, and a performance summary when benchmarks/ holds a benchmark of
that device. Writes
DIR/report-<device>.{md,html,json} and PNG charts (the HTML embeds them: one self-contained file)."""
from __future__ import annotations

import argparse
import base64
import datetime
import html
import json
import pickle
import sys
import traceback
from pathlib import Path
from typing import List, Optional

import numpy as np

from .cases import ort_weight_range
from .common import short
from .common import Progress, bench_results, prog, slug
from .portability import COMPARED

DS_TYPES = ["float32", "float16", "float64", "uint8", "int8", "int16", "int32", "int64"]
QC_TYPES = [("uint8", "uint8", "uint8"), ("uint8", "int8", "uint8"), ("int8", "int8", "int8")]


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.itemsize}") if a.dtype.kind == "f" else a


# ---- sections -----------------------------------------------------------------------------------

def examples(device) -> list:
    import dmlvk
    from .common import run_depth_space_example
    from .examples import depth_space_examples, qconv_examples
    rows = []
    for ex in depth_space_examples():
        got = run_depth_space_example(device, ex)
        rows.append((ex, got))
    for ex in qconv_examples():
        rows.append((ex, dmlvk.quantized_linear_convolution(*ex.args, **ex.kwargs, device=device)))
    return [{"name": ex.name, "source": ex.source, "expected": short(ex.expected), "got": short(got),
             "match": bool(got.dtype == ex.expected.dtype and np.array_equal(got, ex.expected))} for ex, got in rows]


def node_cases(device) -> list:
    import dmlvk
    from .oracles import attributes, onnx_node_cases
    rows = []
    for name, (model, ins, outs) in sorted(onnx_node_cases().items()):
        node = model.graph.node[0]
        attrs = attributes(node)
        row = {"name": name, "op": node.op_type, "path": "dmlvk on the device"}
        if node.op_type in ("DepthToSpace", "SpaceToDepth"):
            fn = dmlvk.depth_to_space if node.op_type == "DepthToSpace" else dmlvk.space_to_depth
            got = fn(ins[0], attrs["blocksize"], attrs.get("mode", b"DCR").decode(), device=device)
        elif node.op_type == "QLinearConv":
            x, xs, xzp, w, ws, wzp, ys, yzp = ins[:8]
            got = dmlvk.quantized_linear_convolution(x, xs.astype(np.float32), xzp, w, ws, wzp,
                                                     ins[8] if len(ins) > 8 else None, ys, yzp, device=device)
        else:   # ConvInteger: the integer core, run on the device with unit scales and a uint8 output
            x, w = ins[0], ins[1]
            xzp = ins[2] if len(ins) > 2 else np.zeros((), x.dtype)
            kw = {"strides": tuple(attrs.get("strides", (1, 1))), "dilations": tuple(attrs.get("dilations", (1, 1))),
                  "group_count": attrs.get("group", 1)}
            pads = attrs.get("pads", (0, 0, 0, 0))
            kw.update(start_padding=tuple(pads[:2]), end_padding=tuple(pads[2:]))
            if outs[0].min() < 0 or outs[0].max() > 255:
                rows.append({**row, "match": None, "note": "accumulators outside 0..255: not expressible "
                                                            "through an 8-bit output"})
                continue
            wzp = ins[3].reshape(-1) if len(ins) > 3 else None
            got = dmlvk.quantized_linear_convolution(x, 1.0, xzp.reshape(()), w, np.float32(1.0), wzp, None, 1.0,
                                                     np.uint8(0), **kw, device=device).astype(np.int32)
            row["path"] = "dmlvk on the device (unit scales, uint8 output)"
        row["match"] = bool(got.shape == outs[0].shape and np.array_equal(_bits(got), _bits(outs[0].astype(got.dtype))))
        row["note"] = ""
        rows.append(row)
    return rows


class Tally:
    """Agreement counts of one (oracle, operator, data type) row."""

    def __init__(self, oracle: str, op: str, dtype: str, tolerance: int = 0):
        self.row = {"oracle": oracle, "operator": op, "data_type": dtype, "cases": 0, "elements": 0,
                    "exact_elements": 0, "max_abs_diff": 0, "tolerance": tolerance, "first_failure": None}

    def add(self, got: np.ndarray, want: np.ndarray, case: str) -> None:
        r = self.row
        r["cases"] += 1
        r["elements"] += int(want.size)
        if got.shape != want.shape:
            diff_exact, diff = 0, float("inf")
        else:
            same = _bits(got) == _bits(want.astype(got.dtype))
            diff_exact = int(same.sum())
            diff = 0 if diff_exact == want.size else (
                float(np.nanmax(np.abs(got.astype(np.float64) - want.astype(np.float64))))
                if got.dtype.kind != "f" else float("nan"))
        r["exact_elements"] += diff_exact
        r["max_abs_diff"] = max(r["max_abs_diff"], diff) if diff == diff else r["max_abs_diff"]
        if diff_exact != want.size and (diff != diff or diff > r["tolerance"]) and r["first_failure"] is None:
            r["first_failure"] = {"case": case, "expected": want.ravel().tolist()[:64], "got": got.ravel().tolist()[:64]}


def _random(rng, dtype, shape):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)


def differential(device, cases: int, seed: int, progress: Progress) -> list:
    import dmlvk
    from .oracles import (one_node_model, onnx_qlinearconv_model, random_case, run_onnx_reference,
                          run_onnxruntime)
    from dmlvk.reference import quantized_linear_convolution as ref_qconv
    rng = np.random.default_rng(seed)
    tallies = {}

    unsupported = set()

    class _Skip:
        def add(self, *a):
            pass

    def tally(oracle, op, dtype, tol=0):
        if (oracle, op, dtype) in unsupported:
            return _Skip()
        return tallies.setdefault((oracle, op, dtype), Tally(oracle, op, dtype, tol))

    def ort(model, feeds, key):
        """onnxruntime's output, or None (remembered) where it has no kernel for the type."""
        if key in unsupported:
            return None
        try:
            return run_onnxruntime(model, feeds)
        except Exception as e:
            if "NOT_IMPLEMENTED" not in str(e):
                raise
            unsupported.add(key)
            return None

    per_type = max(1, cases // len(DS_TYPES))
    for dtype in DS_TYPES:
        for i in range(per_type):
            b = int(rng.integers(1, 5))
            n, cs, h, w = (int(v) for v in rng.integers(1, 4, 4))
            x = _random(rng, dtype, (n, cs * b * b, h, w))
            y = _random(rng, dtype, (n, cs, h * b, w * b))
            for mode in ("DCR", "CRD"):
                got = dmlvk.depth_to_space(x, b, mode, device=device)
                case = f"DepthToSpace blocksize={b} mode={mode} input {x.shape} {dtype}"
                m = one_node_model("DepthToSpace", [("x", x)], dtype, 13, blocksize=b, mode=mode)
                want = ort(m, [("x", x)], ("onnxruntime", "DEPTH_TO_SPACE1", dtype))
                if want is not None:
                    tally("onnxruntime", "DEPTH_TO_SPACE1", dtype).add(got, want, case)
                m = one_node_model("DepthToSpace", [("x", x)], dtype, 28, blocksize=b, mode=mode)
                tally("onnx.reference", "DEPTH_TO_SPACE1", dtype).add(got, run_onnx_reference(m, [("x", x)]), case)
                got = dmlvk.space_to_depth(y, b, mode, device=device)
                case = f"SpaceToDepth blocksize={b} mode={mode} input {y.shape} {dtype}"
                if mode == "DCR":   # onnxruntime's SpaceToDepth is DCR only
                    m = one_node_model("SpaceToDepth", [("x", y)], dtype, 13, blocksize=b)
                    want = ort(m, [("x", y)], ("onnxruntime", "SPACE_TO_DEPTH1", dtype))
                    if want is not None:
                        tally("onnxruntime", "SPACE_TO_DEPTH1", dtype).add(got, want, case)
                m = one_node_model("SpaceToDepth", [("x", y)], dtype, 28, blocksize=b, mode=mode)
                tally("onnx.reference", "SPACE_TO_DEPTH1", dtype).add(got, run_onnx_reference(m, [("x", y)]), case)
            progress.step(f"depth/space {dtype}")

    per_type = max(1, cases // len(QC_TYPES))
    for types in QC_TYPES:
        name = {"uint8": "u8", "int8": "s8"}
        label = " x ".join(name[t] for t in types[:2]) + " -> " + name[types[2]]
        w_range = ort_weight_range(*types[:2])             # cases.py: onnxruntime's u8 x s8 rule
        for i in range(per_type):
            args, kwargs, y_dt = random_case(rng, *(np.dtype(t) for t in types), per_channel=bool(i % 2),
                                             w_range=w_range)
            got = dmlvk.quantized_linear_convolution(*args, **kwargs, device=device)
            case = f"QLinearConv x {args[0].shape} w {args[3].shape} {kwargs} {label}"
            model, feeds = onnx_qlinearconv_model(args, kwargs, y_dt)
            tally("onnxruntime", "QUANTIZED_LINEAR_CONVOLUTION", label).add(got, run_onnxruntime(model, feeds), case)
            # onnx.reference computes the product in float64: +-1 at ties is expected
            tally("onnx.reference", "QUANTIZED_LINEAR_CONVOLUTION", label, tol=1).add(
                got, run_onnx_reference(model, feeds), case)
            tally("dmlvk.reference", "QUANTIZED_LINEAR_CONVOLUTION", label).add(got, ref_qconv(*args, y_dt, **kwargs), case)
            progress.step(f"qlinearconv {label}")
    rows = [t.row for t in tallies.values()]
    for oracle, op, dtype in sorted(unsupported):
        rows.append({"oracle": oracle, "operator": op, "data_type": dtype, "cases": 0, "elements": 0,
                     "exact_elements": 0, "max_abs_diff": 0, "tolerance": 0, "first_failure": None,
                     "note": "the oracle has no kernel for this type"})
    return rows


def directml_answers(cases: int, seed: int) -> dict:
    """DirectML's own answers, asked once for every device (dmlvk_lab/directml): the validation
    matrix's rules at FL 6_4, 4 x `cases` fuzzed descriptions, and `cases` executions whose output
    buffers each device's are compared with (directml_section)."""
    from .directml import compare, oracle
    from .conformance import RULES
    why = oracle.missing()
    if why:
        return {"ran": False, "why": why}
    dml = oracle.DirectML.find()
    rules = compare.rule_rows(dml, RULES)
    descs = compare.fuzzed(4 * cases, seed)
    tally, wrong = compare.validation_tally(descs, dml.run([oracle.Case(d) for d in descs]))
    runs = compare.execution_cases(cases, seed)
    d = dml.device
    return {"ran": True, "label": oracle.LABEL,
            "device": {"create_hr": d.create_hr, "max_feature_level": f"0x{d.max_feature_level:x}",
                       "supported_types": sorted(t.name for t in d.supported_types)},
            "rules": rules, "fuzzed": {"cases": len(descs), "seed": seed, "tally": tally,
                                       "unexplained": len(wrong), "first_unexplained": wrong[:3]},
            "_runs": (runs, dml.run(runs))}


def load_answers(path: Path) -> dict:
    """Answers written by --directml-save (a pickle of dmlvk's own tools: load only files you made)."""
    return pickle.loads(path.read_bytes())


def directml_section(device, answers: dict) -> dict:
    """The report's DirectML section for one device: DirectML's answers, and this device's output
    buffers compared with DirectML's byte for byte per operator and type."""
    out = {k: v for k, v in answers.items() if not k.startswith("_")}
    if answers.get("ran"):
        from .directml import compare
        out["executions"] = compare.execution_rows(device, *answers["_runs"])
    return out


def validation() -> list:
    from .conformance import RULES, evaluate
    return [evaluate(r) for r in RULES]


def choices(device, exs: list) -> list:
    """Spec 9: what dmlvk does where DirectML's behaviour is unconfirmed, and the evidence."""
    import dmlvk
    from dmlvk.reference import quantized_linear_convolution as ref_qconv
    vec_c = [e for e in exs if e["name"].startswith("Vector C")]
    # 40000 x (255 x -127) plus a bias near -2^31 leaves the int32 range: it must wrap
    c = 40000
    args = (np.full((1, c, 1, 1), 255, np.uint8), 1.0, np.uint8(0), np.full((1, c, 1, 1), -127, np.int8),
            np.float32(1e-9), np.int8(0), np.array([-(2 ** 31) + 5], np.int32), 1.0, np.int8(0))
    got = dmlvk.quantized_linear_convolution(*args, device=device)
    want = ref_qconv(*args, np.int8)
    return [
        {"item": "9.1 Requantization rounding",
         "choice": "float32 multiplier xs*ws/ys (ONNX Runtime's arithmetic), round half to even, then the zero point",
         "evidence": "; ".join(f"{e['name']}: got {e['got']}, {'matches' if e['match'] else 'DIFFERS'}" for e in vec_c)
                     + "; bit exact against onnxruntime in the differential section"},
        {"item": "9.2 Accumulator", "choice": "int32 with wraparound",
         "evidence": f"40000 x (255 x -127) plus bias -2^31+5, multiplier 1e-9: the device gives {int(got.ravel()[0])}, "
                     f"the wrapping reference {int(want.ravel()[0])} "
                     f"({'equal' if np.array_equal(got, want) else 'DIFFERENT'}; without wrapping it would be -3)"},
        {"item": "9.3 NaN/Inf/0 scales", "choice": "not checked (data is not visible at creation); results undefined",
         "evidence": "as DirectML documents for 0"},
        {"item": "9.4 Low-rank scales, rank-3 tensors",
         "choice": "rank 1: M along axis 0, else axis 1; a rank-3 tensor is {N, C, 1, W} with DimensionCount 1 or 2",
         "evidence": "validation matrix rows 5.3.4"},
        {"item": "9.5 Shape, BlockSize, Order, overlap, size%4 checks",
         "choice": "shapes, BlockSize and Order rejected at creation; overlap and totals that are not whole "
                   "words as the release DirectML (measured), all rejected with Device(debug=True)",
         "evidence": "validation matrix rows; section 7 where DirectML ran"},
        {"item": "Elements past TotalTensorSizeInBytes",
         "choice": "rejected at creation: every element must lie inside the tensor's bytes (extents in exact integers)",
         "evidence": "DMLCalcBufferTensorSize sums the last offset in 32 bits, so huge strides can give a tiny "
                     "total; DirectML's behaviour is undefined there. Validation matrix row 5.1.6"},
        {"item": "9.6 Data-type support", "choice": "every type of the feature-level tables is supported on every "
                   "device; Device(type_support=\"directml\") follows DirectML's per-device answer",
         "evidence": "dmlvk moves bits in 32-bit words and needs no optional Vulkan feature; DirectML under vkd3d "
                     "reports no 16-bit types without typed UAV loads of additional formats (tests/test_directml.py)"},
    ]


def perf_summary(device_name: str) -> Optional[dict]:
    b = bench_results(device_name)
    if b is None:
        return None
    big = [r for r in b["depth_space"] if r["bytes"] >= 64 << 20 and r["layout"] == "packed"]
    out = {"files": b["files"], "date": max(b["dates"])}
    if big:
        pct = [r["pct_of_copy"] for r in big]
        out["depth_space"] = {"cases": len(big), "min_pct_of_copy": min(pct), "median_pct_of_copy": float(np.median(pct)),
                              "median_gbps": float(np.median([r["gbps"] for r in big]))}
    out["conv"] = [{"layer": r["layer"], "tops": r["tops"]} for r in b["conv"]]
    out["overhead_us"] = b["runtime"].get("paths", {}).get("device_buffers", {}).get("best_us")
    return out


# ---- output -------------------------------------------------------------------------------------

def charts(rep: dict, out_dir: Path, stem: str) -> List[Path]:
    """The device's column of the portability matrix as a heat map."""
    from .portability import heat_map, merged
    p = heat_map(merged([rep]), out_dir / f"{stem}-agreement.png")
    return [p] if p else []


def _pct(a: int, b: int) -> str:
    return f"{100.0 * a / b:.1f} %" if b else "n/a"


def tables(rep: dict) -> list:
    """(title, intro, header, rows) of every table: the markdown and the HTML render the same."""
    t = []
    ex = rep["examples"]
    t.append(("1. DirectML's documented examples", f"{sum(e['match'] for e in ex)} of {len(ex)} match.",
              ["example", "source", "expected", "got", "match"],
              [[e["name"], e["source"], e["expected"], e["got"], "yes" if e["match"] else "NO"] for e in ex]))
    nc = rep["node_cases"]
    run = [n for n in nc if n["match"] is not None]
    t.append(("2. ONNX node conformance cases", f"{sum(n['match'] for n in run)} of {len(run)} applicable cases match.",
              ["case", "operator", "path", "match", "note"],
              [[n["name"], n["op"], n["path"], "n/a" if n["match"] is None else "yes" if n["match"] else "NO", n["note"]]
               for n in nc]))
    df = rep["differential"]
    t.append(("3. Randomised differential runs",
              f"{sum(r['cases'] for r in df)} runs, {sum(r['elements'] for r in df)} elements compared; "
              "onnx.reference computes QLinearConv's product in float64, so +-1 at ties is within its tolerance.",
              ["oracle", "operator", "data type", "cases", "elements", "bit exact", "largest difference",
               "first failure / note"],
              [[r["oracle"], r["operator"], r["data_type"], r["cases"], r["elements"],
                _pct(r["exact_elements"], r["elements"]), r["max_abs_diff"],
                r.get("note") or ("" if r["first_failure"] is None else r["first_failure"]["case"])] for r in df]))
    va = rep["validation"]
    levels = [c["level"].replace("DML_FEATURE_LEVEL_", "") for c in va[0]["cells"]] if va else []
    t.append(("4. Validation matrix (spec 5), per feature level",
              f"{sum(v['agrees'] for v in va if v['basis'] in ('documented', 'measured on DirectML'))} of "
              f"{sum(v['basis'] in ('documented', 'measured on DirectML') for v in va)} rules DirectML documents "
              f"or was measured to follow (release DirectML 1.15.4) give its outcome at "
              f"every level; {sum(v['basis'] not in ('documented', 'measured on DirectML') for v in va)} rows are dmlvk's choices where DirectML's "
              "behaviour is unconfirmed (they agree by definition). R = rejected (ValidationError), A = accepted; "
              "a mark ! where dmlvk differs from the expected outcome.",
              ["rule", "description", "basis"] + levels,
              [[v["rule"], v["what"], v["basis"]] + [("A" if c["accepted"] else "R") + ("" if c["agrees"] else " !")
                                                     for c in v["cells"]] for v in va]))
    t.append(("5. Choices where DirectML's behaviour is unconfirmed (spec 9)", "",
              ["item", "dmlvk's choice", "evidence"], [[c["item"], c["choice"], c["evidence"]] for c in rep["choices"]]))
    p = rep.get("performance")
    if p:
        rows = []
        if "depth_space" in p:
            d = p["depth_space"]
            rows.append(["depth/space, >= 64 MiB", f"{d['cases']} cases: min {d['min_pct_of_copy']:.1f} %, "
                         f"median {d['median_pct_of_copy']:.1f} % of the same-run copy, median {d['median_gbps']:.0f} GB/s"])
        rows += [[c["layer"], f"{c['tops']:.3g} TOPS"] for c in p["conv"]]
        if p.get("overhead_us"):
            rows.append(["per call, device buffers", f"{p['overhead_us']:.0f} us"])
        t.append(("6. Performance summary", f"From {', '.join(p.get('files') or [p.get('file', '')])} (latest {p['date']}).", ["measure", "value"], rows))
    else:
        t.append(("6. Performance summary", "No benchmark of this device in benchmarks/ (python -m dmlvk_lab bench).",
                  ["measure", "value"], []))
    return t + directml_tables(rep.get("directml"))


def _rule_mark(r: dict) -> str:
    if r["agrees"] is None:
        return "n/a"
    return "yes" if r["agrees"] else f"kept: {r['divergence']}" if r["divergence"] else "NO"


def directml_tables(d: Optional[dict]) -> list:
    """Sections 7 and 8: DirectML itself (absent from reports made before it could run)."""
    if not d:
        return []
    if not d["ran"]:
        return [("7. DirectML itself", f"Not run here: {d['why']}", ["rule"], [])]
    f, rules, ex = d["fuzzed"], d["rules"], d["executions"]
    tally = ", ".join(f"{v} {k}" for k, v in f["tally"].items() if v)
    intro = (f"{d['label']}. Its debug layer (DirectML.Debug.dll, DML_CREATE_DEVICE_FLAG_DEBUG) is not reachable "
             f"here: Device(debug=True)'s rules are compared with the documentation only (section 4). "
             f"Each rule of section 4 at FL 6_4: {sum(r['agrees'] is True for r in rules)} of "
             f"{sum(r['agrees'] is not None for r in rules)} agree, the others are divergences dmlvk keeps (README). "
             f"{f['cases']} fuzzed descriptions (seed {f['seed']}): {tally}; {f['unexplained']} unexplained.")
    t = [("7. DirectML itself: validation rules at FL 6_4", intro,
          ["rule", "description", "basis", "DirectML", "dmlvk", "agree"],
          [[r["rule"], r["what"], r["basis"], r["directml"], r["dmlvk"], _rule_mark(r)] for r in rules])]
    t.append(("8. DirectML itself: output buffers per operator and type",
              f"{sum(r['equal'] for r in ex)} of {sum(r['cases'] for r in ex)} executions give DirectML's output "
              f"buffer (gap bytes included) byte for byte; {sum(r['named'] for r in ex)} differ where a named "
              f"divergence says they may; DirectML failed to execute {sum(r['directml_failed'] for r in ex)}.",
              ["operator", "data type", "cases", "byte equal", "named divergence", "differ", "DirectML failed",
               "first difference"],
              [[r["operator"], r["data_type"], r["cases"], r["equal"], r["named"], r["differ"], r["directml_failed"],
                r["first_difference"] or ""] for r in ex]))
    return t


def directml_agrees(d: Optional[dict]) -> Optional[bool]:
    """None where DirectML did not run; else whether it agrees, kept divergences aside."""
    if not d or not d["ran"]:
        return None
    from .conformance import DIVERGES
    return (all(r["agrees"] is not False or (r["divergence"] and r["basis"] == DIVERGES) for r in d["rules"])
            and not d["fuzzed"]["unexplained"] and not any(r["differ"] for r in d["executions"]))


def summary(rep: dict) -> dict:
    ex, nc, df, va = rep["examples"], rep["node_cases"], rep["differential"], rep["validation"]
    ort = [r for r in df if r["oracle"] == "onnxruntime"]
    documented = [v for v in va if v["basis"] in ("documented", "measured on DirectML")]
    dml = rep.get("directml")
    ok = (all(e["match"] for e in ex) and all(n["match"] is not False for n in nc)
          and not any(r["first_failure"] for r in df) and all(v["agrees"] for v in va)
          and directml_agrees(dml) is not False)
    return {
        "all_agree": ok,
        "directml": _directml_summary(dml),
        "examples": f"{sum(e['match'] for e in ex)}/{len(ex)}",
        "node_cases": f"{sum(bool(n['match']) for n in nc if n['match'] is not None)}/"
                      f"{sum(n['match'] is not None for n in nc)}",
        "onnxruntime_bit_exact": _pct(sum(r["exact_elements"] for r in ort), sum(r["elements"] for r in ort)),
        # rules DirectML documents, against its documented outcome; the others are dmlvk's choices
        # where DirectML's behaviour is unconfirmed (they agree by definition: listed, not counted)
        "validation_documented_agreeing": f"{sum(v['agrees'] for v in documented)}/{len(documented)}",
        "validation_choices": len(va) - len(documented),
    }


def _directml_summary(d: Optional[dict]) -> str:
    if not d:
        return "not run"
    if not d["ran"]:
        return f"not run ({d['why']})"
    rules, ex = [r for r in d["rules"] if r["agrees"] is not None], d["executions"]
    return (f"{sum(r['agrees'] for r in rules)}/{len(rules)} validation rules and "
            f"{d['fuzzed']['tally']['agree']}/{d['fuzzed']['cases']} fuzzed descriptions agree (the rest are named "
            f"divergences: {d['fuzzed']['unexplained']} unexplained), {sum(r['equal'] for r in ex)}/"
            f"{sum(r['cases'] for r in ex)} executions byte equal{' (' + str(sum(r['named'] for r in ex)) + ' named divergence)' if any(r['named'] for r in ex) else ''}")


def _summary_text(s: dict) -> str:
    return (f"DirectML itself: {s.get('directml', 'not run')}. Documented examples {s['examples']} match, ONNX node cases {s['node_cases']}, bit exact against "
            f"onnxruntime {s['onnxruntime_bit_exact']}, validation rules documented by or measured on DirectML "
            f"{s['validation_documented_agreeing']} agree; {s['validation_choices']} more rules are dmlvk's choices "
            f"where DirectML's behaviour is unconfirmed or deliberately differs (section 4, basis column; section 5).")


def markdown(rep: dict) -> str:
    d = rep["device"]
    s = rep["summary"]
    out = [f"# dmlvk portability report: {d['name']}", "",
           f"{rep['date']}; {d['type']} device, driver {d['driver']}, Vulkan {d['api_version']}; "
           f"{rep['cases']} random cases per family, seed {rep['seed']}.", "",
           COMPARED, "",
           f"**{_summary_text(s)}**", ""]
    if rep.get("charts"):
        out += [f"![agreement]({Path(c).name})" for c in rep["charts"]] + [""]
    for title, intro, head, rows in tables(rep):
        out += [f"## {title}", ""] + ([intro, ""] if intro else [])
        if rows:
            out += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
            out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
            out.append("")
    failures = [r for r in rep["differential"] if r["first_failure"]]
    for r in failures:
        f = r["first_failure"]
        out += [f"### First failing case: {r['oracle']} {r['operator']} {r['data_type']}", "", f"`{f['case']}`", "",
                f"expected {f['expected']}", "", f"got {f['got']}", ""]
    return "\n".join(out)


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1400px}
table{border-collapse:collapse;margin:0.5em 0 1.5em;font-size:13px}th,td{border:1px solid #bbb;padding:3px 7px;text-align:left}
th{background:#eef}td.ok{background:#e4f6e4}td.bad{background:#fbd8d8}.summary{font-size:15px;padding:0.6em;background:#f4f4f4}
img{max-width:100%;border:1px solid #ddd}"""


def html_page(rep: dict, images: List[Path]) -> str:
    d, s = rep["device"], rep["summary"]
    e = html.escape
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>dmlvk report: {e(d['name'])}</title>",
             f"<style>{_CSS}</style></head><body>",
             f"<h1>dmlvk portability report: {e(d['name'])}</h1>",
             f"<p>{e(rep['date'])}; {e(d['type'])} device, driver {e(d['driver'])}, Vulkan {e(d['api_version'])}; "
             f"{rep['cases']} random cases per family, seed {rep['seed']}.</p>",
             f"<p id='compared'>{e(COMPARED)}</p>",
             f"<p class='summary' id='summary'><b>{e(_summary_text(s))}</b></p>"]
    for img in images:
        data = base64.b64encode(img.read_bytes()).decode()
        parts.append(f"<p><img alt='{e(img.stem)}' src='data:image/png;base64,{data}'></p>")
    for title, intro, head, rows in tables(rep):
        parts.append(f"<h2>{e(title)}</h2>" + (f"<p>{e(intro)}</p>" if intro else ""))
        if rows:
            parts.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>")
            for r in rows:
                cells = []
                for c in r:
                    c = str(c)
                    cls = " class='ok'" if c in ("yes", "A", "R") else " class='bad'" if c in ("NO",) or c.endswith("!") else ""
                    cells.append(f"<td{cls}>{e(c)}</td>")
                parts.append("<tr>" + "".join(cells) + "</tr>")
            parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)


# ---- driver -------------------------------------------------------------------------------------

def report_device(index: int, cases: int, seed: int, answers: Optional[dict] = None) -> dict:
    import dmlvk
    device = dmlvk.Device(index)
    info = device.info
    progress = Progress(len(DS_TYPES) * max(1, cases // len(DS_TYPES)) + len(QC_TYPES) * max(1, cases // len(QC_TYPES)) + 3,
                        f"report {info.name.split(' (')[0][:32]}")
    rep = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
           "device": {"name": info.name, "type": info.device_type, "driver": f"{info.driver_name} {info.driver_info}",
                      "api_version": info.api_version, "index": index},
           "cases": cases, "seed": seed}
    rep["examples"] = examples(device)
    progress.step("examples")
    rep["node_cases"] = node_cases(device)
    progress.step("ONNX node cases")
    rep["differential"] = differential(device, cases, seed, progress)
    rep["validation"] = validation()
    progress.step("validation matrix")
    rep["choices"] = choices(device, rep["examples"])
    if answers is not None:
        rep["directml"] = directml_section(device, answers)
    rep["performance"] = perf_summary(info.name)
    rep["summary"] = summary(rep)
    return rep


def write(rep: dict, out_dir: Path) -> List[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"report-{slug(rep['device']['name'])}"
    images = charts(rep, out_dir, stem)
    rep["charts"] = [p.name for p in images]
    paths = [out_dir / f"{stem}.json", out_dir / f"{stem}.md", out_dir / f"{stem}.html"]
    paths[0].write_text(json.dumps(rep, indent=1, default=str))
    paths[1].write_text(markdown(rep))
    paths[2].write_text(html_page(rep, images))
    return paths + images


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog=prog("report"),
        description="Portability report against DirectML (DirectML itself where its oracle is set up, its "
                    "documented behaviour and examples), ONNX's "
                    "conformance cases, ONNX Runtime and onnx.reference, per Vulkan device, and one page over "
                    "several devices. Exit status: 0 all agree, 1 a disagreement, 2 a usage or environment error.")
    ap.add_argument("--device", default=None, help="device index or 'all' (default: $DMLVK_DEVICE or 0)")
    ap.add_argument("--out", default="reports", help="output folder (default: reports)")
    ap.add_argument("--cases", type=int, default=120, help="random cases per operator family (default 120)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument("--directml", choices=("auto", "off"), default="auto",
                    help="compare with DirectML itself where its oracle is set up (ci/directml.sh; default auto)")
    ap.add_argument("--directml-save", metavar="PICKLE",
                    help="also write DirectML's answers (descriptions, buffers, its outputs) to this file")
    ap.add_argument("--directml-load", metavar="PICKLE",
                    help="compare with DirectML's answers saved by --directml-save (e.g. on a machine without Wine)")
    ap.add_argument("--rerender", metavar="JSON", help="rewrite the markdown, HTML and charts of a report's JSON")
    ap.add_argument("--merge", nargs="+", metavar="JSON",
                    help="one portability page (report-all.*) from per-device report JSONs, e.g. made on other machines")
    a = ap.parse_args(argv)
    if a.rerender:
        rep = json.loads(Path(a.rerender).read_text())
        for p in write(rep, Path(a.out)):
            print(p)
        return 0
    if a.merge:
        from . import portability
        reps = []
        for path in a.merge:
            rep = json.loads(Path(path).read_text())
            rep["summary"] = summary(rep)        # recomputed: older reports carry older summaries
            reps.append(rep)
        for p in portability.write(reps, Path(a.out)):
            print(p)
        page = portability.merged(reps)
        print(page["headline"])
        return 0 if all(r["summary"]["all_agree"] for r in reps) else 1
    if a.cases < 1:
        ap.error("--cases must be at least 1")
    import os
    import dmlvk
    count = len(dmlvk.devices())
    if a.device == "all":
        indices = list(range(count))
    else:
        try:
            indices = [int(a.device if a.device is not None else os.environ.get("DMLVK_DEVICE", "0") or 0)]
        except ValueError:
            ap.error("--device takes a device index or 'all'")
        if not 0 <= indices[0] < count:
            ap.error(f"device {indices[0]} does not exist; {count} Vulkan device(s) present")
    status, reps = 0, []
    if a.directml_load:
        answers = load_answers(Path(a.directml_load))
    elif a.directml == "auto":
        answers = directml_answers(a.cases, a.seed)
    else:
        answers = {"ran": False, "why": "--directml off"}
    if a.directml_save and answers["ran"]:
        Path(a.directml_save).write_bytes(pickle.dumps(answers))
    if not answers["ran"]:
        print(f"DirectML itself: not run ({answers['why']})", file=sys.stderr)
    for i in indices:
        try:
            rep = report_device(i, a.cases, a.seed, answers)
        except Exception:   # one device failing must not hide the others' reports
            traceback.print_exc()
            status = 1
            continue
        for p in write(rep, Path(a.out)):
            print(p)
        reps.append(rep)
        print(f"{rep['device']['name']}: {_summary_text(rep['summary'])}")
        status |= 0 if rep["summary"]["all_agree"] else 1
    if a.device == "all" and reps:
        from . import portability
        for p in portability.write(reps, Path(a.out)):
            print(p)
    return status
