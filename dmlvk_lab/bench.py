"""Benchmark harness: dmlvk's operators against the device's own copy bandwidth and against the
peers users would otherwise pick (each peer in its own process: see dmlvk_lab/bench_peers.py).

    python -m dmlvk_lab bench [--device N] [--out DIR] [--sizes MiB,...] [--repeats R] [--no-peers]

Writes DIR/bench-<device>.json (every figure), DIR/bench-<device>.md (tables) and, when matplotlib
is installed, DIR/bench-<device>-*.png (charts). Kernel times are GPU timestamps around the
dispatches (median and spread over at least R batches of back-to-back runs, each batch spanning
0.25 ms or more); per-call figures are wall clock."""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, List, Optional

import numpy as np

from dmlvk.enums import DepthSpaceOrder
from .bench_layers import copy_kernel, copy_seconds
from .bench_runtime import markdown as runtime_markdown, measure_runtime
from .cases import MiB, conv_layers, depth_space_cases, depth_space_desc
from .common import Progress, prog, pyplot, save_chart, slug
from dmlvk.runtime.commands import Program
from dmlvk.runtime.commands import time as time_dispatches
from dmlvk.runtime.device import Device
from dmlvk.runtime.kernel import Kernel

# Timer: a batch of back-to-back runs spans at least BATCH_S seconds; at most MAX_RUNS runs a
# measurement
BATCH_S, MAX_RUNS = 250e-6, 4096

def conv_ops(layer) -> int:
    """2 operations per multiply-add."""
    _, n, c, h, w, m, kh, kw, s, pad, g = layer
    oh, ow = (h + 2 * pad - kh) // s + 1, (w + 2 * pad - kw) // s + 1
    return 2 * n * m * oh * ow * (c // g) * kh * kw


def stats(seconds: List[float]) -> dict:
    a = np.array(seconds)
    return {"median_s": float(np.median(a)), "min_s": float(a.min()), "max_s": float(a.max()),
            "p25_s": float(np.percentile(a, 25)), "p75_s": float(np.percentile(a, 75)), "runs": len(a)}



class Timer:
    """GPU timings taken at the clocks a busy device runs at. GPUs drop their clocks within
    seconds of idling (an H200 fell from 1980 to 345 MHz between short bursts and then copied at
    a third of its bandwidth), so every measurement follows `warm_s` seconds of steady copying,
    and covers at least `window_s` seconds of back-to-back runs.

    The runs are timed in batches of consecutive runs spanning at least `batch_s` each, and the
    figures are the median and spread of the batches' mean run times (over at least `repeats`
    batches). A timestamp's tick can be coarse against one run (256 ns on an H200, 0.7 % of a
    64 MiB copy): single runs' times then sit on that grid, and so would their median, while a
    batch's span carries the tick only once."""

    def __init__(self, device: Device, repeats: int, warm_s: float, window_s: float = 0.02,
                 batch_s: float = BATCH_S):
        self.device, self.repeats, self.warm_s, self.window_s = device, repeats, warm_s, window_s
        self.batch_s = batch_s
        self._warm = None
        if warm_s > 0:
            n = 64 * MiB
            a, b = device.buffer(n), device.buffer(n)
            self._warm = Program(device, [(copy_kernel(n), (a, b))] * 20, barriers=False)

    def warm(self) -> None:
        if self._warm is None:
            return
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < self.warm_s:
            self._warm.run()

    def __call__(self, run: Callable[[int], List[float]], warm: bool = True) -> dict:
        """run(n) returns the GPU seconds of each of n back-to-back runs. warm=False: the GPU has
        just been busy (a measurement taken right after another)."""
        est = max(float(np.median(run(3))), 1e-7)
        k = int(min(MAX_RUNS // self.repeats, max(1, np.ceil(self.batch_s / est))))   # runs a batch
        batches = int(min(max(self.repeats, MAX_RUNS // k), max(self.repeats, np.ceil(self.window_s / (k * est)))))
        if warm:
            self.warm()
        runs = np.array(run(k * batches), dtype=np.float64)
        return {**stats(runs.reshape(batches, k).mean(axis=1)), "runs": k * batches, "batch": k}


# The clock-robust protocol: each case and its same-size copy yardstick are timed in alternation,
# ROUNDS times, each keeping its best; a case whose best paired copy ran below CLOCK_OK of the best
# copy of its size in the run was measured at lowered clocks and is measured again (up to
# REMEASURE more times).
ROUNDS = 3
CLOCK_OK = 0.9
REMEASURE = 2


def measure_depth_space(timer: Timer, cases, progress: Progress, check: bool, rounds: int = ROUNDS) -> list:
    device = timer.device
    rows, ops = [], []
    buffers = {}

    def pair(desc):
        """One pair of buffers alive at a time, grown when a case needs more (and then refilled)."""
        need = max(desc.input_tensor.total_bytes, desc.output_tensor.total_bytes)
        if buffers.get("size", 0) < need:
            buffers.clear()
            src, dst = device.buffer(need), device.buffer(need)
            src.write(np.random.default_rng(need).integers(0, 256, need, dtype=np.uint8))
            buffers.update(size=need, pair=(src, dst))
        return buffers["pair"]

    def measure(desc, op):
        """The case and its copy, alternating for `rounds` rounds; each keeps its best median."""
        src, dst = pair(desc)
        nbytes = moved_bytes(desc)
        copy_n = nbytes - nbytes % 16
        best_t = best_copy = None
        for r in range(rounds):
            # warmed once; then the GPU stays busy, case and copy back to back
            c = copy_seconds(timer, copy_n, (src, dst), warm=r == 0)
            t = timer(lambda n: op.time([src], [dst], n), warm=False)
            if best_copy is None or c["median_s"] < best_copy:
                best_copy = c["median_s"]
            if best_t is None or t["median_s"] < best_t["median_s"]:
                best_t = t
        return best_t, 2 * copy_n / best_copy / 1e9

    def layout_copy_gbps(desc):
        """A case with gaps moves only elements, yet reads and writes the sectors its layouts touch:
        its yardstick is the mean time of copying each side's layout onto itself (DEPTH_TO_SPACE1
        with B = 1, which runs the same channel-last kernel as a vector copy per pixel)."""
        from dmlvk.ops.depth_space import DepthToSpace1Desc
        src, dst = pair(desc)
        secs = []
        for t in (desc.input_tensor, desc.output_tensor):
            copy_op = device.create_operator(DepthToSpace1Desc(t, t, 1, DepthSpaceOrder.DEPTH_COLUMN_ROW))
            secs.append(min(timer(lambda n: copy_op.time([src], [dst], n), warm=False)["median_s"]
                            for _ in range(rounds)))
        return 2 * moved_bytes(desc) / float(np.mean(secs)) / 1e9

    for case in cases:
        desc = depth_space_desc(case)
        op = device.create_operator(desc)
        t, copy_gbps = measure(desc, op)
        src, dst = pair(desc)
        nbytes = moved_bytes(desc)
        # outputs checked (a host reference costs seconds at 64 MiB and more: a sample of those)
        if check and (nbytes <= 8 * MiB or (case[3] == 2 and case[4] == DepthSpaceOrder.DEPTH_COLUMN_ROW)):
            _check_depth_space(desc, src, dst)
        host_s = None
        if case[2].bits == 32 and case[3] == 2 and case[6] == "packed" and nbytes <= 64 * MiB:
            # host to host, as ncnn's Python API measures: staging copies and transfers included
            x = np.zeros(desc.input_tensor.sizes, np.float32)
            y = np.empty(desc.output_tensor.sizes, np.float32)
            host_s = float(np.median([_wall(lambda: op.execute([x], [y])) for _ in range(5)]))
        rows.append({
            "case": case[0], "op": "DEPTH_TO_SPACE1" if case[1] else "SPACE_TO_DEPTH1",
            "data_type": case[2].dml_name, "element_bytes": case[2].bits // 8, "block": case[3],
            "order": case[4].name, "input_sizes": list(desc.input_tensor.sizes), "layout": case[6],
            "bytes": nbytes, "shader": op.kernels[0].shader, "variant": op.kernels[0].variant, **t, "host_to_host_s": host_s,
            "gbps": 2 * nbytes / t["median_s"] / 1e9, "copy_gbps": copy_gbps, "remeasured": 0,
        })
        if case[6] == "nhwc_gapped":
            rows[-1]["layout_copy_gbps"] = layout_copy_gbps(desc)
        ops.append((desc, op))
        progress.step(f"{rows[-1]['op']} {case[0]} {case[2].name}")
    # Cases whose paired copy ran at lowered clocks are measured again.
    for _ in range(REMEASURE):
        best = _best_copies(rows)
        slow = [i for i, r in enumerate(rows) if r["copy_gbps"] < CLOCK_OK * best[r["bytes"]]]
        if not slow:
            break
        for i in slow:
            desc, op = ops[i]
            t, copy_gbps = measure(desc, op)
            r = rows[i]
            r["remeasured"] += 1
            if copy_gbps > r["copy_gbps"]:        # the measurement taken at the better clocks
                r.update(t)
                r["gbps"], r["copy_gbps"] = 2 * r["bytes"] / t["median_s"] / 1e9, copy_gbps
    best = _best_copies(rows)
    for r in rows:
        r["pct_of_copy"] = 100 * r["gbps"] / r["copy_gbps"]
        r["best_copy_gbps"] = best[r["bytes"]]
        r["pct_of_best_copy"] = 100 * r["gbps"] / best[r["bytes"]]
        r["clock_pct"] = 100 * r["copy_gbps"] / best[r["bytes"]]
    return rows


def nominal_mib(row) -> float:
    """A case's size class: the MiB its label names ("64 MiB", "NHWC 64 MiB"), else its bytes."""
    m = re.search(r"(\d+) MiB", row["case"])
    return float(m.group(1)) if m else row["bytes"] / MiB


def depth_space_summary(rows) -> List[str]:
    """The depth/space figures by size class: cases of 64 MiB or more against 90 % of the best
    same-size copy (all of them, and those without gaps: the targets' packed and NHWC layouts),
    1-8 MiB ones against 70 %, those with gaps against copies of their own layouts, and the 1 GiB
    ones against torch."""
    best = _best_copies(rows)
    pct = lambda r: 100 * r["gbps"] / best[r["bytes"]]
    name = lambda r: (f"{r['case']} {r['op']} {r['data_type'].replace('DML_TENSOR_DATA_TYPE_', '')} "
                      f"B={r['block']} {r['order']}")
    out = ["## Summary", "", "| cases | count | at or above | median % of best copy | lowest |",
           "| --- | ---: | ---: | ---: | --- |"]
    for label, sel, bar in (("64 MiB or more", lambda r: nominal_mib(r) >= 64, 90),
                            ("64 MiB or more, packed and NHWC", lambda r: nominal_mib(r) >= 64
                             and not r.get("layout_copy_gbps"), 90),
                            ("1-8 MiB", lambda r: 1 <= nominal_mib(r) <= 8, 70),
                            ("all", lambda r: True, 90)):
        group = [r for r in rows if sel(r)]
        if group:
            low = min(group, key=pct)
            out.append(f"| {label} | {len(group)} | {sum(pct(r) >= bar for r in group)} at {bar} % | "
                       f"{np.median([pct(r) for r in group]):.1f} | {pct(low):.1f} % ({name(low)}) |")
    gapped = [r for r in rows if r.get("layout_copy_gbps")]
    if gapped:
        ratios = [100 * r["gbps"] / r["layout_copy_gbps"] for r in gapped]
        out += ["", f"Layouts with gaps against copies of their own layouts ({len(gapped)} cases, see below): "
                    f"median {np.median(ratios):.1f} %, lowest {min(ratios):.1f} %, {sum(x >= 90 for x in ratios)} at 90 %."]
    vs_torch = [r for r in rows if r.get("torch_gbps") and nominal_mib(r) >= 1024]
    if vs_torch:
        slower = sorted((r for r in vs_torch if r["gbps"] < r["torch_gbps"]), key=lambda r: r["gbps"] / r["torch_gbps"])
        out += ["", f"Against torch `pixel_shuffle`/`pixel_unshuffle` (CRD) and its view-permute-reshape (DCR) "
                    f"at 1 GiB ({len(vs_torch)} cases): {len(vs_torch) - len(slower)} at least as fast"
                    + ("; slower: " + ", ".join(f"{name(r)} {r['gbps'] / r['torch_gbps']:.2f}x" for r in slower)
                       if slower else "") + "."]
    return out + [""]


def moved_bytes(desc) -> int:
    """The bytes a depth/space case reads (and writes): its elements, not the gaps between them."""
    return desc.input_tensor.element_count * desc.input_tensor.element_bytes


def _best_copies(rows) -> dict:
    best = {}
    for r in rows:
        best[r["bytes"]] = max(best.get(r["bytes"], 0), r["copy_gbps"])
    return best


def _wall(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _check_depth_space(desc, src, dst) -> None:
    """The benchmarked output against dmlvk.reference (packed layouts only)."""
    from dmlvk import reference
    if desc.input_tensor.strides is not None:
        return
    dt = desc.input_tensor.data_type.numpy_dtype
    x = src.numpy(dt, desc.input_tensor.sizes)
    fn = reference.depth_to_space if desc.depth_to_space else reference.space_to_depth
    want = fn(x, desc.block_size, desc.effective_order)
    got = dst.numpy(dt, desc.output_tensor.sizes)
    if not np.array_equal(got.view(np.uint8), want.view(np.uint8)):
        raise AssertionError(f"benchmark output differs from the reference: {desc}")


def conv_arguments(layer, seed: int = 0):
    """numpy arguments of dmlvk.quantized_linear_convolution for a layer: u8 input, s8 filter,
    per-channel filter scales, int32 bias, u8 output."""
    _, n, c, h, w, m, kh, kw, s, pad, g = layer
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, (n, c, h, w), dtype=np.uint8)
    wt = rng.integers(-128, 128, (m, c // g, kh, kw), dtype=np.int8)
    ws = rng.uniform(0.001, 0.01, m).astype(np.float32)
    bias = rng.integers(-1000, 1000, m, dtype=np.int32)
    args = (x, np.float32(0.02), np.uint8(128), wt, ws, np.int8(0), bias, np.float32(0.5), np.uint8(100))
    kw_args = dict(strides=(s, s), dilations=(1, 1), start_padding=(pad, pad), end_padding=(pad, pad),
                   group_count=g)
    return args, kw_args


def measure_conv(timer: Timer, progress: Progress, check: bool, batches, rounds: int = 1) -> list:
    """Each layer in `rounds` passes over all layers; a layer keeps its best round (the GPU drops
    its clocks, or slows for seconds, now and then: the best round is the layer's own speed).
    Every round's median is kept in the row."""
    device = timer.device
    from dmlvk import reference
    from dmlvk.ops.quantized_conv import constant_filter, prepare_call
    layers = list(conv_layers(batches))
    prepared = []
    for layer in layers:
        args, kwargs = conv_arguments(layer)
        op, inputs, out, finish = prepare_call(*args, **kwargs, output_dtype=None, device=device)
        op, inputs = constant_filter(op, inputs)          # constant weights, as dmlvk.onnx binds them
        if check:
            op.execute(inputs, [out])
            want = reference.quantized_linear_convolution(*args, np.uint8, **kwargs)
            if not np.array_equal(finish(), want):
                raise AssertionError(f"benchmark output differs from the reference: {layer[0]}")
        prepared.append((args, op, inputs, out))
    best, medians = [None] * len(layers), [[] for _ in layers]
    for _ in range(rounds):
        for i, (args, op, inputs, out) in enumerate(prepared):
            t = timer(lambda n: op.time(inputs, [out], n, barriers=True))
            medians[i].append(t["median_s"])
            if best[i] is None or t["median_s"] < best[i]["median_s"]:
                best[i] = t
    rows = []
    for layer, (args, op, _, _), t, meds in zip(layers, prepared, best, medians):
        ops = conv_ops(layer)
        # Memory-bound layers are judged by bytes: input read + output written, against a copy
        # of that size timed next to them.
        nbytes = args[0].nbytes + op.output_descs[0].element_count
        copy_n = -(-nbytes // 16) * 16
        copy = copy_seconds(timer, copy_n, (device.buffer(copy_n), device.buffer(copy_n)))
        rows.append({"layer": layer[0], "shape": list(layer[1:]), "ops": ops, **t, "round_medians_s": meds,
                     "tops": ops / t["median_s"] / 1e12, "bytes": nbytes,
                     "gbps": nbytes / t["median_s"] / 1e9, "copy_gbps": 2 * copy_n / copy["median_s"] / 1e9,
                     "shader": "+".join(k.shader for k in op.kernels),
                     "variant": "+".join(k.variant for k in op.kernels)})
        progress.step(layer[0])
    return rows


# ---- peers --------------------------------------------------------------------------------------

def run_peer(peer: str, spec: dict, timeout: int = 900) -> dict:
    """Run dmlvk_lab/bench_peers.py for one peer in its own process; {'skipped': why} if unavailable."""
    cmd = [sys.executable, "-m", "dmlvk_lab.bench_peers", peer, json.dumps(spec)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"skipped": f"{peer} timed out after {timeout} s"}
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        err = p.stderr.strip().splitlines() or ["no output"]
        # the peer's own reason, not the device banner some libraries print on exit
        tail = next((l for l in reversed(err) if "Error" in l or "not installed" in l), err[-1])
        return {"skipped": f"{peer} failed: {tail}"}
    return json.loads(lines[-1])


# ---- output ---------------------------------------------------------------------------------------


def _protocol(result: dict) -> str:
    """How the kernel times were taken (results written before batches: single runs)."""
    if "batch_s" in result:
        return (f"median over at least {result['repeats']} batches of back-to-back runs, each batch "
                f"{result['batch_s'] * 1e3:g} ms or more and all covering 20 ms or more (each batch: its mean run)")
    return f"median of at least {result['repeats']} back-to-back runs covering 20 ms or more"


def markdown(result: dict) -> str:
    dev = result["device"]
    out = [f"# dmlvk benchmark: {dev['name']}", "",
           f"{_run_dates(result)}, driver {dev['driver']}, Vulkan {dev['api_version']}, "
           f"dmlvk: GPU timestamps, {_protocol(result)}, "
           f"each case after {result['warm_s']} s of steady copying (clocks up). Bytes moved = read + write.", ""]
    ds = result["depth_space"]
    if ds:
        out += depth_space_summary(ds)
        out += ["## Depth/space against the same-run uvec4 copy", "",
                "Each case and its same-size copy timed in alternation, several rounds, each keeping its best. "
                "'% of copy': against that paired copy; '% of best copy': against the fastest copy of that size "
                "in the run; 'clock': the paired copy as % of that best (below 90 % the GPU had lowered its "
                "clocks, and the case was measured again: 'again').", "",
                "| case | operator | type | B | order | variant | GB/s | copy GB/s | % of copy | % of best copy | clock | again | torch GB/s | dmlvk / torch |",
                "| --- | --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        best = _best_copies(ds)
        for r in ds:
            tg = r.get("torch_gbps")
            torch_cols = "| |" if tg is None else f"{tg:.0f} | {r['gbps'] / tg:.2f} |"
            clock = 100 * r["copy_gbps"] / best[r["bytes"]]
            rerun = f" (re-run {r['rerun'][:16]})" if r.get("rerun") else ""
            out.append(f"| {r['case']}{' (NHWC)' if r['layout'] == 'nhwc' else ''}{rerun} | {r['op']} | "
                       f"{r['data_type'].replace('DML_TENSOR_DATA_TYPE_', '')} | {r['block']} | {r['order']} | "
                       f"{r.get('variant') or r.get('shader', '')} | {r['gbps']:.0f} | {r['copy_gbps']:.0f} | {r['pct_of_copy']:.1f} | "
                       f"{100 * r['gbps'] / best[r['bytes']]:.1f} | {clock:.0f} % | {r.get('remeasured', '')} | " + torch_cols)
        out.append("")
        gapped = [r for r in ds if r.get("layout_copy_gbps")]
        if gapped:
            out += ["## Layouts with gaps against copies of the same layouts", "",
                    "A case with gaps moves only its elements but reads and writes every sector its layouts "
                    "touch; its yardstick here is the mean time of copying each side's layout onto itself "
                    "(DEPTH_TO_SPACE1 with B = 1), timed right after the case.", "",
                    "| case | operator | type | B | order | GB/s | same-layout copy GB/s | % of it |",
                    "| --- | --- | --- | --- | --- | ---: | ---: | ---: |"]
            for r in gapped:
                out.append(f"| {r['case']} | {r['op']} | {r['data_type'].replace('DML_TENSOR_DATA_TYPE_', '')} | "
                           f"{r['block']} | {r['order']} | {r['gbps']:.0f} | {r['layout_copy_gbps']:.0f} | "
                           f"{100 * r['gbps'] / r['layout_copy_gbps']:.1f} |")
            out.append("")
    cv = result["conv"]
    if cv:
        out += ["## Quantized convolution (u8 input, s8 filter, per-channel scales)", "",
                "Executions timed as a real sequence of them runs: with the barriers between dependent "
                "dispatches and between executions, their waits counted. "
                "Each layer's best of its rounds (passes over all layers). GB/s: input read + output written; "
                "copy: a same-size copy timed next to the layer.", "",
                "| layer | variants | dmlvk ms | dmlvk TOPS | GB/s (% of copy) | peers (TOPS) |",
                "| --- | --- | ---: | ---: | ---: | --- |"]
        for r in cv:
            peers = ", ".join(f"{k} {_sig(v)} (dmlvk {_sig(r['tops'] / v)}x)" for k, v in r.get("peers", {}).items())
            bw = f"{r['gbps']:.0f} ({100 * r['gbps'] / r['copy_gbps']:.0f} %)" if "copy_gbps" in r else ""
            out.append(f"| {r['layer']} | {r.get('variant') or r.get('shader', '')} | {r['median_s'] * 1e3:.3f} | {_sig(r['tops'])} | "
                       f"{bw} | {peers} |")
        out.append("")
    hh = [r for r in ds if r.get("ncnn_host_to_host_s") and r.get("host_to_host_s")]
    if hh:
        out += ["## Host to host against ncnn's Vulkan layers (float32, wall clock, transfers included)", "",
                "| case | operator | B | order | dmlvk ms | ncnn ms | ncnn / dmlvk |",
                "| --- | --- | --- | --- | ---: | ---: | ---: |"]
        for r in hh:
            a, b = r["host_to_host_s"], r["ncnn_host_to_host_s"]
            out.append(f"| {r['case']} | {r['op']} | {r['block']} | {r['order']} | {a * 1e3:.2f} | "
                       f"{b * 1e3:.2f} | {b / a:.2f} |")
        out.append("")
    if result.get("runtime"):
        out += runtime_markdown(result["runtime"], result.get("torch_roundtrip_us"))
    skipped = result.get("peers_skipped", [])
    if skipped:
        out += ["## Peers not measured", ""] + [f"- {s}" for s in skipped] + [""]
    return "\n".join(out)


def _sig(v: float) -> str:
    """Three significant figures."""
    return f"{v:.3g}"



def charts(result: dict, out_dir: Path, stem: str) -> List[Path]:
    """PNG charts; none without matplotlib."""
    plt = pyplot()
    if plt is None:
        return []
    made = []
    # the packed size series ("N MiB"); a case's nominal size is its label's
    ds = [dict(r, mib=int(r["case"].split()[0])) for r in result["depth_space"]
          if re.fullmatch(r"\d+ MiB", r["case"]) and r["layout"] == "packed"]
    if ds:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
        for ax, op in zip(axes, ("DEPTH_TO_SPACE1", "SPACE_TO_DEPTH1")):
            sizes = sorted({r["mib"] for r in ds})
            copy = [np.median([r["copy_gbps"] for r in ds if r["mib"] == s]) for s in sizes]
            ax.plot(sizes, copy, "k--", label="uvec4 copy")
            for eb in sorted({r["element_bytes"] for r in ds}):
                pts = [(s, min(r["gbps"] for r in ds if r["mib"] == s and r["element_bytes"] == eb and r["op"] == op))
                       for s in sizes if any(r["mib"] == s and r["element_bytes"] == eb and r["op"] == op for r in ds)]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=f"{eb}-byte (worst of order, block)")
            tp = [r for r in ds if r["op"] == op and r.get("torch_gbps") and r["order"] == "COLUMN_ROW_DEPTH"
                  and r["block"] == 2]
            for eb in sorted({r["element_bytes"] for r in tp}):
                pts = sorted((r["mib"], r["torch_gbps"]) for r in tp if r["element_bytes"] == eb)
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "x:", label=f"torch {eb}-byte CRD B=2")
            ax.set_xscale("log", base=2)
            ax.set_xlabel("tensor size (MiB)")
            ax.set_title(op)
            ax.grid(alpha=0.3)
        axes[0].set_ylabel("GB/s (read + write)")
        axes[1].legend(fontsize=7)
        fig.suptitle(f"dmlvk depth/space on {result['device']['name']} ({result['date'][:10]})")
        made.append(save_chart(plt, fig, out_dir / f"{stem}-depth-space.png"))
    cv = result["conv"]
    if cv:
        names = [r["layer"] for r in cv]
        series = {"dmlvk": [r["tops"] for r in cv]}
        for r in cv:
            for k in r.get("peers", {}):
                series.setdefault(k, [None] * len(cv))
        for i, r in enumerate(cv):
            for k, v in r.get("peers", {}).items():
                series[k][i] = v
        fig, ax = plt.subplots(figsize=(11, 4.5))
        width = 0.8 / len(series)
        for j, (k, vals) in enumerate(series.items()):
            xs = [i + j * width for i, v in enumerate(vals) if v is not None]
            ax.bar(xs, [v for v in vals if v is not None], width, label=k)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(names))])
        ax.set_xticklabels([n.replace(" batch", "\nbatch") for n in names], fontsize=6.5, rotation=20)
        ax.set_ylabel("TOPS (2 ops per multiply-add)")
        ax.set_yscale("log")
        ax.legend(fontsize=8)
        ax.set_title(f"Quantized convolution on {result['device']['name']} ({result['date'][:10]})")
        made.append(save_chart(plt, fig, out_dir / f"{stem}-conv.png"))
    return made


def runtime_only_markdown(result: dict) -> str:
    dev = result["device"]
    out = [f"# dmlvk runtime benchmark: {dev['name']}", "",
           f"{result['date']}, driver {dev['driver']}, Vulkan {dev['api_version']}, "
           f"{result['host']['cpus']} CPUs, Python {result['host']['python']}.", ""]
    return "\n".join(out + runtime_markdown(result["runtime"], result.get("torch_roundtrip_us")))


def write_outputs(result: dict, out_dir: Path) -> List[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    if "models" in result:
        from .bench_models import markdown as models_markdown
        dev = result["device"]
        stem = f"models-{slug(dev['name'])}"
        js, md = out_dir / f"{stem}.json", out_dir / f"{stem}.md"
        js.write_text(json.dumps(result, indent=1))
        md.write_text("\n".join([f"# dmlvk model benchmark: {dev['name']}", "",
                                 f"{result['date']}, driver {dev['driver']}, Vulkan {dev['api_version']}, "
                                 f"{result['host']['cpus']} CPUs.", ""] + models_markdown(result)))
        return [js, md]
    runtime_only = "depth_space" not in result
    kind = ("runtime" if runtime_only else "conv" if not result["depth_space"]
            else "depth-space" if not result["conv"] else "bench")
    stem = f"{kind}-{slug(result['device']['name'])}"
    js = out_dir / f"{stem}.json"
    js.write_text(json.dumps(result, indent=1))
    md = out_dir / f"{stem}.md"
    md.write_text(runtime_only_markdown(result) if runtime_only else markdown(result))
    return [js, md] + ([] if runtime_only else charts(result, out_dir, stem))


# ---- driver -------------------------------------------------------------------------------------

def _header(device: Device) -> dict:
    """When, on which device and host a benchmark ran: every result's first keys."""
    info = device.info
    return {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "device": {"name": info.name, "type": info.device_type, "driver": f"{info.driver_name} {info.driver_info}",
                       "api_version": info.api_version, "index": device.index},
            "host": {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()}}


def run_runtime_only(device: Device, peers: bool, warm_s: float) -> dict:
    """Only the runtime section (and torch's round trip as its peer)."""
    timer = Timer(device, 10, warm_s)
    result = {
        **_header(device),
        "runtime": measure_runtime(device, warm=timer.warm),
        "peers_skipped": [],
    }
    if peers:
        add_torch_roundtrip(result)
    return result


def run_models_only(device: Device, peers: bool, warm_s: float, cpu: bool, shapes=None) -> dict:
    """Only the quantized model's frames per second (dmlvk_lab/bench_models.py), and the split model's
    parts; shapes [(h, w)] (default: bench_models.SHAPES, smaller on CPU devices)."""
    from . import bench_models
    timer = Timer(device, 10, warm_s)
    shapes = shapes or ([(135, 240), (270, 480)] if cpu else bench_models.SHAPES)
    result = {
        **_header(device),
        "models": bench_models.measure_models(timer, shapes=shapes, batches=[1] if cpu else bench_models.BATCHES),
        "peers_skipped": [],
    }
    result["models"]["split"] = bench_models.measure_split(timer, shapes[0])
    result["models"]["zoo"] = bench_models.measure_zoo(timer, shapes[:2], [1] if cpu else bench_models.BATCHES,
                                                       result["models"]["layers"])
    if peers and not cpu:
        bench_models.add_torch(result, run_peer)
        bench_models.add_webgpu(result, run_peer)
    result["models"].pop("model_bytes", None)
    return result


def add_torch_roundtrip(result: dict) -> dict:
    res = run_peer("torch", {"roundtrip": True})
    if "skipped" in res:
        result["peers_skipped"].append(res["skipped"])
    else:
        result["torch_roundtrip_us"] = res["roundtrip_us"]
    return res


def case_name(case) -> str:
    """A depth/space case as --match sees it, e.g. '64 MiB DEPTH_TO_SPACE1 UINT8 B=3 DEPTH_COLUMN_ROW nhwc'."""
    label, d2s, dt, b, order, _, kind = case
    return f"{label} {'DEPTH_TO_SPACE1' if d2s else 'SPACE_TO_DEPTH1'} {dt.name} B={b} {order.name} {kind}"


def run(device: Device, sizes_mib, repeats: int, peers: bool, check: bool, conv_batches, warm_s: float,
        runtime: bool = True, out_dir: Optional[Path] = None, match: Optional[str] = None) -> dict:
    info = device.info
    sizes = [int(s * MiB) for s in sizes_mib]
    cases = [c for c in depth_space_cases(sizes, extra=64 * MiB in sizes)
             if match is None or re.search(match, case_name(c))]
    layers = list(conv_layers(conv_batches))
    progress = Progress(len(cases) + len(layers), f"bench {info.name[:24]}")
    timer = Timer(device, repeats, warm_s)
    result = {
        **_header(device),
        "repeats": repeats,
        "batch_s": timer.batch_s,
        "warm_s": warm_s,
        "depth_space": measure_depth_space(timer, cases, progress, check, rounds=1 if warm_s == 0 else ROUNDS),
        "conv": measure_conv(timer, progress, check, conv_batches, rounds=1 if warm_s == 0 else 3),
        "peers_skipped": [],
    }
    if runtime:
        result["runtime"] = measure_runtime(device, warm=timer.warm)
    if peers:
        if out_dir is not None:
            write_outputs(result, out_dir)      # dmlvk's own figures kept, should a peer not finish
        add_peers(result, sizes, conv_batches)
    return result


def add_peers(result: dict, sizes, conv_batches) -> None:
    skipped = result["peers_skipped"]
    ds_spec = [{"bytes": r["bytes"], "eb": r["element_bytes"], "op": r["op"], "order": r["order"],
                "block": r["block"], "input_sizes": r["input_sizes"]}
               for r in result["depth_space"] if r["layout"] == "packed"]
    conv_spec = [{"layer": name, "shape": list(rest)} for name, *rest in conv_layers(conv_batches)]
    torch_res = run_peer("torch", {"depth_space": ds_spec, "conv": conv_spec, "roundtrip": True})
    if "skipped" in torch_res:
        skipped.append(torch_res["skipped"])
    else:
        for r, t in zip([r for r in result["depth_space"] if r["layout"] == "packed"], torch_res["depth_space"]):
            if t is not None:
                r["torch_gbps"] = 2 * r["bytes"] / t / 1e9
        _merge_conv(result, torch_res["conv"])
        result["torch_roundtrip_us"] = torch_res.get("roundtrip_us")
    if conv_spec:
        ort = run_peer("onnxruntime", {"conv": conv_spec})
        if "skipped" in ort:
            skipped.append(ort["skipped"])
        else:
            _merge_conv(result, ort["conv"])
    ncnn = run_peer("ncnn", {"depth_space": ds_spec})
    if "skipped" in ncnn:
        skipped.append(ncnn["skipped"])
    else:
        for r, t in zip([r for r in result["depth_space"] if r["layout"] == "packed"], ncnn["depth_space"]):
            if t is not None:
                r["ncnn_host_to_host_s"] = t


def _run_dates(result: dict) -> str:
    dates = result.get("merged_dates")
    if not dates:
        return result["date"]
    return f"runs of {', '.join(dates)} (cases a later run measured again are marked 're-run')"


def _case_key(row) -> tuple:
    return row["case"], row["op"], row["data_type"], row["block"], row["order"], row["layout"]


def merge_results(results: List[dict]) -> dict:
    """One result from depth/space runs on one device: the first run's header and the union of
    the cases. A later run either adds sizes no earlier run has (a run split to fit a time limit),
    or re-measures cases an earlier run has (after a kernel change): those rows are replaced, and
    keep the date of their run in 'rerun'. Each case keeps the figures of its own run."""
    first = dict(results[0])
    first["depth_space"] = list(first["depth_space"])
    if len(results) > 1:        # a list of its own: the inputs are left as they were
        first["merged_dates"] = list(results[0].get("merged_dates", [results[0]["date"]]))
    for r in results[1:]:
        if r["device"]["name"] != first["device"]["name"]:
            raise ValueError(f"runs on different devices: {first['device']['name']} and {r['device']['name']}")
        if r.get("batch_s") != first.get("batch_s"):
            raise ValueError("runs timed differently (batches of runs against single runs, or batches of other "
                             "spans); measure them again under one protocol")
        index = {_case_key(x): i for i, x in enumerate(first["depth_space"])}
        new = [x for x in r["depth_space"] if _case_key(x) not in index]
        shared = {x["bytes"] for x in first["depth_space"]} & {x["bytes"] for x in new}
        if shared:
            raise ValueError(f"runs share tensor sizes {sorted(shared)}; each size's best copy must come from one run")
        for x in r["depth_space"]:
            if _case_key(x) in index:
                first["depth_space"][index[_case_key(x)]] = {**x, "rerun": r["date"]}
        first["depth_space"] += new
        first["peers_skipped"] = sorted(set(first.get("peers_skipped", [])) | set(r.get("peers_skipped", [])))
        first["merged_dates"].append(r["date"])
    return first


def _merge_conv(result: dict, peer_rows: list) -> None:
    for r, peer in zip(result["conv"], peer_rows):
        for name, seconds in peer.items():
            if seconds:
                r.setdefault("peers", {})[name] = r["ops"] / seconds / 1e12


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog=prog("bench"), description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", type=int, default=None, help="Vulkan device index (default: $DMLVK_DEVICE or 0)")
    ap.add_argument("--out", default="benchmarks", help="output folder (default: benchmarks)")
    ap.add_argument("--sizes", default=None,
                    help="depth/space tensor sizes in MiB, comma-separated (default 1,64,1024 on GPUs, 1,16 on CPU devices)")
    ap.add_argument("--repeats", type=int, default=10, help="timed batches of runs per case, at least (default 10)")
    ap.add_argument("--conv-batches", default=None, help="convolution batch sizes (default 32,1 on GPUs, 1 on CPU devices)")
    ap.add_argument("--warm", type=float, default=None,
                    help="seconds of steady copying before each measurement (default 0.5 on GPUs, 0 on CPU devices)")
    ap.add_argument("--no-peers", action="store_true", help="skip torch, onnxruntime and ncnn")
    ap.add_argument("--model-shapes", metavar="HxW,...", default=None,
                    help="with --only models: the frame sizes, e.g. 540x960,1080x1920 (default: all three)")
    ap.add_argument("--match", metavar="REGEX", help="only the depth/space cases whose name matches, e.g. "
                    "'DEPTH_TO_SPACE1 UINT8 B=3' (names: SIZE OPERATOR TYPE B=N ORDER LAYOUT)")
    ap.add_argument("--no-check", action="store_true", help="skip checking outputs against dmlvk.reference")
    ap.add_argument("--rerender", metavar="JSON", nargs="+", help="rewrite the markdown and charts of a benchmark's "
                    "JSON; of several depth/space runs of different sizes on one device, their union")
    ap.add_argument("--only", choices=["runtime", "conv", "models", "depth-space"], help="measure only the "
                    "runtime's per-call costs (writes runtime-DEVICE.json and .md), only the convolution layers "
                    "and their peers (conv-DEVICE.json, .md and chart), only the quantized super-resolution "
                    "model's frames per second (models-DEVICE.json and .md), or only the depth/space cases and "
                    "their peers (depth-space-DEVICE.json, .md and chart)")
    a = ap.parse_args(argv)
    if a.rerender:
        for p in write_outputs(merge_results([json.loads(Path(j).read_text()) for j in a.rerender]), Path(a.out)):
            print(p)
        return 0
    if a.repeats < 1:
        ap.error("--repeats must be at least 1")
    if a.match is not None:
        try:
            re.compile(a.match)
        except re.error as e:
            ap.error(f"--match is not a regular expression: {e}")
    device = Device(a.device)
    cpu = device.info.device_type == "CPU"
    try:
        sizes = [float(s) for s in (a.sizes or ("1,16" if cpu else "1,64,1024")).split(",")]
        batches = [int(s) for s in (a.conv_batches or ("1" if cpu else "32,1")).split(",")]
    except ValueError:
        ap.error("--sizes and --conv-batches take comma-separated numbers")
    if any(s <= 0 for s in sizes) or any(b < 1 for b in batches):
        ap.error("sizes and batches must be positive")
    warm = a.warm if a.warm is not None else (0.0 if cpu else 0.5)
    if a.only == "runtime":
        for p in write_outputs(run_runtime_only(device, not a.no_peers, warm), Path(a.out)):
            print(p)
        return 0
    if a.only == "models":
        try:
            shapes = [tuple(int(d) for d in hw.split("x")) for hw in a.model_shapes.split(",")] if a.model_shapes else None
        except ValueError:
            ap.error(f"--model-shapes takes HxW,..., got {a.model_shapes!r}")
        if shapes and any(len(hw) != 2 or min(hw) < 1 for hw in shapes):
            ap.error(f"--model-shapes takes HxW,..., got {a.model_shapes!r}")
        for p in write_outputs(run_models_only(device, not a.no_peers, warm, cpu, shapes), Path(a.out)):
            print(p)
        return 0
    if a.only == "conv":
        sizes = []
    if a.only == "depth-space":
        batches = []
    result = run(device, sizes, a.repeats, not a.no_peers, not a.no_check, batches, warm, runtime=a.only is None,
                 out_dir=Path(a.out), match=a.match)
    for p in write_outputs(result, Path(a.out)):
        print(p)
    return 0
