"""Where a frame's time goes in InferenceSession.run and run_stream on the ESPCN model: the input
copy into staging, the submission and wait, the output copy out (wall clock, median of 20 frames);
with --profile, cProfile's table of run_stream over 60 frames instead.

    python tools/stream_probe.py [--height H] [--width W] [--batch N] [--profile]"""
import argparse
import cProfile
import os
import pstats
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dmlvk import Device, onnx  # noqa: E402
from dmlvk.onnx import hostcopy  # noqa: E402
from dmlvk.runtime import commands  # noqa: E402
from dmlvk_lab import onnx_models  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--height", type=int, default=540)
    ap.add_argument("--width", type=int, default=960)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--profile", action="store_true", help="cProfile's table of run_stream instead")
    a = ap.parse_args()
    dev = Device()
    session = onnx.InferenceSession(onnx_models.quantize(onnx_models.espcn(2), onnx_models.calibration_frames()),
                                    device=dev)
    x = np.concatenate(onnx_models.calibration_frames(a.batch, a.height, a.width, seed=3))
    if a.profile:
        list(session.run_stream(None, [{"x": x}] * 4))
        prof = cProfile.Profile()
        prof.enable()
        list(session.run_stream(None, [{"x": x}] * 60))
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(14)
        return
    times = {}
    real = {name: getattr(commands.CommandList, name) for name in ("start", "wait")}
    real_copy = hostcopy.POOL.copy

    def timed(name, fn):
        def wrapper(*args):
            t0 = time.perf_counter()
            out = fn(*args)
            times.setdefault(name, []).append(time.perf_counter() - t0)
            return out
        return wrapper

    commands.CommandList.start = timed("submit", real["start"])
    commands.CommandList.wait = timed("wait", real["wait"])
    hostcopy.POOL.copy = timed("copy (in and out)", real_copy)
    for label, run in (("run", lambda: [session.run(None, {"x": x}) for _ in range(20)]),
                       ("run_stream", lambda: [None for _ in session.run_stream(None, [{"x": x}] * 20)])):
        run()
        times.clear()
        t0 = time.perf_counter()
        run()
        total = (time.perf_counter() - t0) / 20
        parts = ", ".join(f"{k} {np.median(v) * 1e3:.2f} ms x{len(v) // 20}" for k, v in times.items())
        print(f"{dev.name} {a.batch}x{a.height}x{a.width} {label}: {total * 1e3:.2f} ms a frame; {parts}")


if __name__ == "__main__":
    main()
