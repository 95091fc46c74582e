"""One portability page for several devices: the matrix of every check of the per-device reports
(rows) against the devices (columns), with what DirectML documents for each row, a heat map of it,
and the committed benchmarks of those devices as charts.

    python -m dmlvk_lab report --device all          # every device here, one page
    python -m dmlvk_lab report --merge A.json B.json # per-device reports made on other machines"""
from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import List, Optional

import numpy as np

from .common import bench_results, pyplot, save_chart, slug

AGREE, DIFFER, NA = "agree", "differ", "n/a"
COMPARED = ("Compared with: DirectML itself where its oracle is set up (release DirectML 1.15.4 under Wine, its "
            "DXBC shaders through vkd3d on Mesa's lavapipe; its debug layer is not reachable), DirectML's documented "
            "behaviour (its documentation, documented examples and feature-level tables), ONNX's node conformance "
            "cases, ONNX Runtime and onnx.reference.")


def _level(fl) -> str:
    return str(fl).replace("DML_FEATURE_LEVEL_", "FL ").replace("_", ".")


def rows_of(rep: dict) -> List[dict]:
    """The checks of one device's report as matrix rows: section, item, DirectML's column, cell, detail."""
    out = []
    for e in rep["examples"]:
        out.append({"section": "DirectML's documented examples", "item": e["name"],
                    "directml": "documented output", "cell": AGREE if e["match"] else DIFFER, "detail": e["got"]})
    for n in rep["node_cases"]:
        cell = NA if n["match"] is None else AGREE if n["match"] else DIFFER
        out.append({"section": "ONNX node conformance cases", "item": n["name"],
                    "directml": "not documented (ONNX's expected output)", "cell": cell, "detail": n["note"]})
    for r in rep["differential"]:
        cell = NA if not r["elements"] else DIFFER if r["first_failure"] else AGREE
        out.append({"section": f"Differential runs against {r['oracle']}", "item": f"{r['operator']} {r['data_type']}",
                    "directml": "not documented (the oracle's output)", "cell": cell,
                    "detail": r.get("note") or f"{r['exact_elements']}/{r['elements']} bit exact"})
    d = rep.get("directml") or {}
    measured = {(r["rule"], r["what"]): r["directml"] for r in d.get("rules", [])}
    for v in rep["validation"]:
        if v["basis"] == "documented":
            acc = [c["level"] for c in v["cells"] if c["expected_accepted"]]
            dml = f"documented: accepted from {_level(acc[0])}" if acc else "documented: rejected"
        elif v["basis"].startswith("measured"):
            dml = "measured on the release DirectML"
        else:
            dml = "unconfirmed: dmlvk's choice" if "spec 9" in v["basis"] else "dmlvk's choice against DirectML"
        if (v["rule"], v["what"]) in measured:
            dml += f"; DirectML itself at FL 6.4: {measured[(v['rule'], v['what'])]}"
        out.append({"section": "Validation rules (spec 5), every feature level", "item": f"{v['rule']} {v['what']}",
                    "directml": dml, "cell": AGREE if v["agrees"] else DIFFER,
                    "detail": " ".join(("A" if c["accepted"] else "R") for c in v["cells"])})
    for r in d.get("executions", []):
        cell = NA if not r["cases"] else DIFFER if r["differ"] else AGREE
        out.append({"section": "Output buffers against DirectML itself", "item": f"{r['operator']} {r['data_type']}",
                    "directml": "DirectML's output bytes", "cell": cell,
                    "detail": f"{r['equal']}/{r['cases']} byte equal" + (f", {r['named']} named divergence" if r["named"] else "")})
    return out


def matrix(reps: List[dict]) -> dict:
    """Rows (section, item) in first-seen order, one cell per device, and the headline."""
    devices = [r["device"]["name"] for r in reps]
    rows, index = [], {}
    for col, rep in enumerate(reps):
        for r in rows_of(rep):
            key = (r["section"], r["item"])
            if key not in index:
                index[key] = len(rows)
                rows.append({"section": r["section"], "item": r["item"], "directml": r["directml"],
                             "cells": [NA] * len(reps), "details": [""] * len(reps)})
            row = rows[index[key]]
            row["cells"][col], row["details"][col] = r["cell"], r["detail"]
    for row in rows:
        ran = [c for c in row["cells"] if c != NA]
        row["devices_differ"] = len(set(ran)) > 1
    differ = [r for r in rows if DIFFER in r["cells"]]
    split = [r for r in rows if r["devices_differ"]]
    counts = {d: {k: sum(r["cells"][i] == k for r in rows) for k in (AGREE, DIFFER, NA)} for i, d in enumerate(devices)}
    if split:
        headline = (f"The devices differ from one another on {len(split)} row(s): "
                    + "; ".join(f"{r['section']}: {r['item']}" for r in split[:5]))
    elif differ:
        headline = f"Every device gives the same outcome on every row; {len(differ)} row(s) differ from the oracle on all."
    else:
        headline = (f"Every device gives the same outcome on every row, and every outcome agrees: "
                    f"{len(rows)} rows on {len(devices)} device(s).")
    return {"devices": devices, "rows": rows, "counts": counts, "headline": headline}


def _summary_lines(reps: List[dict]) -> List[str]:
    lines = []
    for rep in reps:
        s = rep["summary"]
        lines.append(f"{rep['device']['name']}: DirectML itself: {s.get('directml', 'not run')}; documented examples {s['examples']}, ONNX node cases {s['node_cases']}, "
                     f"bit exact against onnxruntime {s['onnxruntime_bit_exact']}, validation rules documented by or measured on "
                     f"DirectML {s['validation_documented_agreeing']} agree, {s['validation_choices']} more are "
                     f"dmlvk's choices where DirectML's behaviour is unconfirmed.")
    return lines


def merged(reps: List[dict]) -> dict:
    m = matrix(reps)
    return {"kind": "portability", "compared": COMPARED, "headline": m["headline"], "summary": _summary_lines(reps),
            "matrix": m, "reports": [{"device": r["device"], "date": r["date"], "cases": r["cases"], "seed": r["seed"],
                                      "summary": r["summary"], "performance": r.get("performance")} for r in reps]}


# ---- charts -------------------------------------------------------------------------------------

def heat_map(page: dict, out: Path) -> Optional[Path]:
    plt = pyplot()
    if plt is None:
        return None
    from matplotlib.colors import ListedColormap
    m = page["matrix"]
    rows = m["rows"]
    code = {AGREE: 0, DIFFER: 1, NA: 2}
    data = np.array([[code[c] for c in r["cells"]] for r in rows])
    fig, ax = plt.subplots(figsize=(2.2 + 1.6 * len(m["devices"]), 1.2 + 0.13 * len(rows)))
    ax.imshow(data, cmap=ListedColormap(["#3a3", "#d33", "#bbb"]), vmin=0, vmax=2, aspect="auto",
              interpolation="nearest")
    ax.set_xticks(range(len(m["devices"])))
    ax.set_xticklabels([d.split(" (")[0] for d in m["devices"]], fontsize=8)
    ax.xaxis.tick_top()
    ax.set_yticks(range(len(rows)))
    tag = lambda sec: ("doc" if sec.startswith("DirectML") else "onnx" if sec.startswith("ONNX")
                       else "rule" if sec.startswith("Validation") else sec.split()[-1].replace("onnxruntime", "ort"))
    ax.set_yticklabels([f"{tag(r['section'])}: {r['item'][:46]}" for r in rows], fontsize=4.5)
    fig.suptitle("green: agrees\nred: differs\ngrey: not applicable", fontsize=7, x=0.02, y=0.995, ha="left")
    return save_chart(plt, fig, out, dpi=110)


def perf_charts(page: dict, out_dir: Path, stem: str) -> List[Path]:
    """% of copy bandwidth per depth/space case and TOPS against the peers per layer, for every
    device of the page with a committed benchmark."""
    plt = pyplot()
    benches = [(r["device"]["name"], r["performance"]) for r in page["reports"] if r.get("performance")]
    if plt is None or not benches:
        return []
    paths = []
    for name, perf in benches:
        b = bench_results(name)
        if b is None:
            continue
        size = max([r["bytes"] for r in b["depth_space"]], default=0)
        floor = 64 << 20 if size >= 64 << 20 else size        # CPU devices: their largest size
        big = [r for r in b["depth_space"] if r["bytes"] >= floor]
        conv = b.get("conv", [])
        fig, axes = plt.subplots(1, 2, figsize=(13, 4.2), gridspec_kw={"width_ratios": [3, 2]})
        if big:
            labels = [f"{r['op'][:3]} {r['data_type'].replace('DML_TENSOR_DATA_TYPE_', '')[:7]} B{r['block']} "
                      f"{'DCR' if r['order'].startswith('DEPTH') else 'CRD'} {r['bytes'] >> 20}M"
                      f"{' NHWC' if r['layout'] == 'nhwc' else ''}" for r in big]
            pct = [r["pct_of_copy"] for r in big]
            axes[0].bar(range(len(big)), pct, color=["#3a3" if p >= 90 else "#d93" for p in pct])
            axes[0].axhline(100, color="#555", lw=0.8)
            axes[0].set_xticks(range(len(big)))
            axes[0].set_xticklabels(labels, rotation=90, fontsize=4.5)
            axes[0].set_ylabel("% of the same-run copy bandwidth")
            axes[0].set_title(f"depth/space, {floor >> 20} MiB and more: {name.split(' (')[0]}", fontsize=9)
        if conv:
            peers = sorted({k for r in conv for k in r.get("peers", {})})
            width = 0.8 / (1 + len(peers))
            x = np.arange(len(conv))
            axes[1].bar(x, [r["tops"] for r in conv], width, label="dmlvk")
            for j, p in enumerate(peers):
                axes[1].bar(x + (j + 1) * width, [r.get("peers", {}).get(p, 0) for r in conv], width, label=p)
            axes[1].set_yscale("log")
            axes[1].set_xticks(x + 0.4 - width / 2)
            axes[1].set_xticklabels([r["layer"][:28] for r in conv], rotation=90, fontsize=5)
            axes[1].set_ylabel("TOPS (log)")
            axes[1].legend(fontsize=6)
            axes[1].set_title("quantized convolution against the peers", fontsize=9)
        paths.append(save_chart(plt, fig, out_dir / f"{stem}-perf-{slug(name)}.png", dpi=100))
    return paths


# ---- output -------------------------------------------------------------------------------------

def markdown(page: dict, images: List[Path]) -> str:
    m = page["matrix"]
    out = ["# dmlvk portability report: " + ", ".join(m["devices"]), "", page["compared"], "",
           f"**{page['headline']}**", ""] + [f"- {line}" for line in page["summary"]] + [""]
    out += [f"![{p.stem}]({p.name})" for p in images] + [""]
    out += ["## Portability matrix", "",
            "Rows: every check of the per-device reports; columns: the devices, and what DirectML documents "
            "for the row. Cells: agree / differ / n/a (not applicable), with the device's own detail.", ""]
    head = ["section", "check", "DirectML"] + m["devices"]
    out += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in m["rows"]:
        cells = [f"{c} ({d})" if d else c for c, d in zip(r["cells"], r["details"])]
        out.append("| " + " | ".join(str(x).replace("|", "\\|") for x in [r["section"], r["item"], r["directml"]] + cells) + " |")
    out += ["", "## Per device", ""]
    for rep in page["reports"]:
        d = rep["device"]
        out.append(f"- {d['name']} ({d['type']}, driver {d['driver']}, Vulkan {d['api_version']}): report of "
                   f"{rep['date']}, {rep['cases']} random cases per family, seed {rep['seed']}; "
                   f"[its page](report-{slug(d['name'])}.md).")
    return "\n".join(out) + "\n"


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1500px}
table{border-collapse:collapse;margin:0.5em 0 1.5em;font-size:12px}th,td{border:1px solid #bbb;padding:2px 6px;text-align:left}
th{background:#eef}td.agree{background:#d9f2d9}td.differ{background:#f7c6c6}td.na{background:#eee;color:#777}
.headline{font-size:16px;padding:0.6em;background:#f4f4f4}img{max-width:100%;border:1px solid #ddd}"""


def html_page(page: dict, images: List[Path]) -> str:
    e = html.escape
    m = page["matrix"]
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>dmlvk portability report</title>",
             f"<style>{_CSS}</style></head><body>",
             f"<h1>dmlvk portability report: {e(', '.join(m['devices']))}</h1>",
             f"<p id='compared'>{e(page['compared'])}</p>",
             f"<p class='headline' id='headline'><b>{e(page['headline'])}</b></p>",
             "<ul id='summary'>" + "".join(f"<li>{e(s)}</li>" for s in page["summary"]) + "</ul>"]
    for img in images:
        parts.append(f"<p><img alt='{e(img.stem)}' src='data:image/png;base64,{base64.b64encode(img.read_bytes()).decode()}'></p>")
    parts.append("<h2>Portability matrix</h2><table id='matrix'><tr><th>section</th><th>check</th><th>DirectML</th>"
                 + "".join(f"<th>{e(d)}</th>" for d in m["devices"]) + "</tr>")
    for r in m["rows"]:
        cells = "".join(f"<td class='{'na' if c == NA else c}' title='{e(d)}'>{e(c)}</td>"
                        for c, d in zip(r["cells"], r["details"]))
        parts.append(f"<tr><td>{e(r['section'])}</td><td>{e(r['item'])}</td><td>{e(r['directml'])}</td>{cells}</tr>")
    parts.append("</table></body></html>")
    return "\n".join(parts)


def write(reps: List[dict], out_dir: Path) -> List[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    page = merged(reps)
    stem = "report-all"
    images = [p for p in [heat_map(page, out_dir / f"{stem}-matrix.png")] if p] + perf_charts(page, out_dir, stem)
    paths = [out_dir / f"{stem}.json", out_dir / f"{stem}.md", out_dir / f"{stem}.html"]
    paths[0].write_text(json.dumps(page, indent=1, default=str))
    paths[1].write_text(markdown(page, images))
    paths[2].write_text(html_page(page, images))
    return paths + images
