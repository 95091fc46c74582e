"""Per-call cost of the runtime, wall clock, on a tiny DEPTH_TO_SPACE1 (1x4x2x2 float32):
a raw pre-recorded one-dispatch kp sequence (the floor: submit + fence wait through the patched
Kompute), an operator over device Buffers, over host arrays, the numpy-level call, and command
lists of 1 and 100 dependent dispatches. Every path is timed in each of several rounds, the rounds
interleaved block by block so that clock and scheduling drift hit all paths alike; a path's figure
is its best-of-rounds median per call ("best") beside the median over rounds."""
from __future__ import annotations

import time
from typing import Callable, Dict

import numpy as np

from dmlvk.enums import DataType, DepthSpaceOrder
from dmlvk.runtime.commands import CommandList, Program
from dmlvk.runtime.commands import time as time_dispatches
from dmlvk.runtime.device import Device, set_fence_spin_us
from dmlvk.tensor import TensorDesc

LIST_LENGTH = 100


def _paired(a: list, b: list) -> float:
    return float(np.median(np.array(a) / np.array(b)))


def measure_runtime(device: Device, rounds: int = 15, calls: int = 200, warm: Callable = None) -> dict:
    from dmlvk.ops.depth_space import DepthToSpace1Desc, SpaceToDepth1Desc, depth_to_space
    dcr = DepthSpaceOrder.DEPTH_COLUMN_ROW
    small, big = TensorDesc(DataType.FLOAT32, (1, 4, 2, 2)), TensorDesc(DataType.FLOAT32, (1, 1, 4, 4))
    d2s = device.create_operator(DepthToSpace1Desc(small, big, 2, dcr))
    s2d = device.create_operator(SpaceToDepth1Desc(big, small, 2, dcr))
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 2, 2)
    out = np.empty((1, 1, 4, 4), np.float32)
    a, b = device.upload(x), device.buffer(64)
    raw = Program(device, [(d2s.kernels[0], (a, b))], barriers=False)
    one = CommandList(device).record(d2s, [a], [b])
    chain = CommandList(device)
    for i in range(LIST_LENGTH // 2):          # a -> b -> a -> ...: each depends on the one before
        chain.record(d2s, [a], [b]).record(s2d, [b], [a])

    def raw_blocking():
        set_fence_spin_us(0)
        try:
            raw.sequence.eval()
        finally:
            set_fence_spin_us(None)

    paths: Dict[str, Callable] = {
        "raw_kp_eval": raw.sequence.eval,              # the kp-level probe: no dmlvk code on the path
        "raw_kp_eval_blocking": raw_blocking,      # the same with the fence poll turned off
        "device_buffers": lambda: d2s.execute([a], [b]),
        "host_arrays": lambda: d2s.execute([x], [out]),
        "numpy_call": lambda: depth_to_space(x, 2, device=device),
        "command_list_1": one.execute,
        f"command_list_{LIST_LENGTH}": chain.execute,
    }
    long = f"command_list_{LIST_LENGTH}"
    samples = {k: [] for k in paths}
    for _ in range(rounds):
        if warm is not None:
            warm()
        for fn in paths.values():
            for _ in range(10):
                fn()
        # Rounds interleave the paths block by block (each block back-to-back calls of one path,
        # each call timed on its own), so drift of the machine and its clocks lands on every path.
        for name, fn in paths.items():
            n = calls if name != long else max(10, calls // 10)
            ts = []
            for _ in range(n):
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
            samples[name].append(float(np.median(ts)) * 1e6)
    assert np.array_equal(b.numpy(np.float32, (1, 1, 4, 4)), depth_to_space(x, 2, device=device))
    res = {k: {"best_us": float(min(v)), "median_us": float(np.median(v)), "rounds_us": [float(t) for t in v]}
           for k, v in samples.items()}
    best = {k: v["best_us"] for k, v in res.items()}
    kernel = time_dispatches(device, [(d2s.kernels[0], (a, b))], 50)
    return {
        "paths": res,
        "kernel_us": float(np.median(kernel)) * 1e6,
        "per_dispatch_in_list_us": (best[f"command_list_{LIST_LENGTH}"] - best["command_list_1"]) / (LIST_LENGTH - 1),
        "numpy_call_over_raw": best["numpy_call"] / best["raw_kp_eval"],
        "device_buffers_over_raw": best["device_buffers"] / best["raw_kp_eval"],
        # each round's ratio, paired within the round (drift between rounds cancels)
        "numpy_call_over_raw_paired": _paired(samples["numpy_call"], samples["raw_kp_eval"]),
        "device_buffers_over_raw_paired": _paired(samples["device_buffers"], samples["raw_kp_eval"]),
        "list_length": LIST_LENGTH, "barriers_in_list": chain.barriers, "rounds": rounds, "calls": calls,
        "fence_spin_us": device.fence_spin_us,
    }


def markdown(rt: dict, torch_roundtrip_us=None) -> list:
    names = {
        "raw_kp_eval": "raw pre-recorded one-dispatch kp eval (kp-level probe)",
        "raw_kp_eval_blocking": "the same, blocking fence wait (no poll)",
        "device_buffers": "operator on device buffers",
        "host_arrays": "operator on host arrays (staging both ways)",
        "numpy_call": "numpy-level `dmlvk.depth_to_space`",
        "command_list_1": "command list of 1 dispatch",
        f"command_list_{rt['list_length']}": f"command list of {rt['list_length']} dependent dispatches",
    }
    out = ["## Runtime: per-call cost (wall clock, tiny tensor)", "",
           f"Best-of-{rt['rounds']}-rounds medians (median over rounds in brackets); fence poll "
           f"{rt['fence_spin_us']} us before blocking.", "",
           "| path | us per call |", "| --- | ---: |"]
    for k, label in names.items():
        p = rt["paths"][k]
        out.append(f"| {label} | {p['best_us']:.1f} ({p['median_us']:.1f}) |")
    if torch_roundtrip_us:
        out.append(f"| torch CUDA `add_` + `synchronize` (same run, own process) | {torch_roundtrip_us:.1f} |")
    out += [f"| the kernel itself (GPU timestamps) | {rt['kernel_us']:.1f} |", "",
            f"- per dispatch in a command list beyond one submission: {rt['per_dispatch_in_list_us']:.2f} us "
            f"({rt['barriers_in_list']} barriers in the list)",
            f"- numpy-level call / raw kp eval: {rt['numpy_call_over_raw']:.2f}x best-of-rounds, "
            f"{rt['numpy_call_over_raw_paired']:.2f}x median of the rounds' own ratios; device buffers / raw: "
            f"{rt['device_buffers_over_raw']:.2f}x, {rt['device_buffers_over_raw_paired']:.2f}x", ""]
    return out
