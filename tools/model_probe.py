"""Per-dispatch GPU times of the quantized super-resolution model's device work (dmlvk.onnx), one
frame, against the device's floors (dmlvk_lab/bench_layers.py): which layer costs what.

    python tools/model_probe.py [--height 540] [--width 960] [--scale 2] [--off VARIANT ...] [--tune NAME=N ...] [--stats]

--off leaves variants out (as Device.variants(tuning={name: False}) does), to compare a choice with
the one before it in the same run; --tune sets tuning numbers (Device.variants(tuning=...)).
It also prints how long the session took to make and to run its first frame (lowering, the kernels'
SPIR-V from dmlvk's cache or compiled, the driver's pipelines): with DMLVK_CACHE_DIR set to an
empty directory, what a user's first session for these shapes costs (the driver may keep a shader
cache of its own). --stats prints each dispatch's pipeline statistics where the driver reports them
(tools/pipeline_stats.py; on NVIDIA the registers an invocation takes).
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dmlvk import Device  # noqa: E402
from dmlvk_lab import bench_layers, onnx_models  # noqa: E402
from dmlvk_lab.bench import Timer  # noqa: E402
from dmlvk.onnx import InferenceSession  # noqa: E402
from pipeline_stats import StatisticsDevice, kernel_statistics  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--height", type=int, default=540)
    ap.add_argument("--width", type=int, default=960)
    ap.add_argument("--scale", type=int, default=2)
    ap.add_argument("--off", nargs="*", default=[], help="variants to leave out")
    ap.add_argument("--tune", nargs="*", default=[], help="tuning numbers, NAME=N")
    ap.add_argument("--stats", action="store_true", help="each dispatch's pipeline statistics")
    a = ap.parse_args()
    tuning = {name: int(value) for name, value in (t.split("=", 1) for t in a.tune)}
    dev = Device()
    model = onnx_models.quantize(onnx_models.espcn(a.scale), onnx_models.calibration_frames())
    x = np.concatenate(onnx_models.calibration_frames(1, a.height, a.width, seed=3))
    with dev.variants(tuning={**{name: False for name in a.off}, **tuning}):
        start = time.perf_counter()
        session = InferenceSession(model, device=dev)
        made = time.perf_counter()
        session.run(None, {"x": x})          # lowered (its operators chosen) at its first run
        first = time.perf_counter()
    _, dispatches, _ = session.device_work({"x": x})
    timer = Timer(dev, 10, 0.3)
    bandwidth, peak = bench_layers.copy_bandwidth(timer), bench_layers.int8_peak(timer)
    rows = bench_layers.measure_layers(timer, dispatches, bandwidth, peak)
    print(dev.name + (f", without {', '.join(a.off)}" if a.off else "") + (f", {' '.join(a.tune)}" if a.tune else ""))
    print(f"session made in {made - start:.2f} s, its first frame run in {first - made:.2f} s")
    print("\n".join(bench_layers.markdown({"copy_bandwidth": bandwidth, "int8_peak_ops": peak,
                                           "frames": [{"input": [1, 1, a.height, a.width], "rows": rows}]})))
    if a.stats:
        stats = StatisticsDevice(dev.index)
        for kernel, _ in dispatches:
            for ex in kernel_statistics(stats, kernel):
                print(f"{kernel.variant or kernel.shader}: " + ", ".join(f"{n} {v}" for n, v in ex["statistics"].items()))
        stats.close()


if __name__ == "__main__":
    main()
