"""Per-dispatch GPU times of the quantized super-resolution model's device work (dmlvk.onnx), one
frame, against the device's floors (dmlvk_lab/bench_layers.py): which layer costs what.

    python -m dmlvk_lab.model_probe [--height 540] [--width 960] [--scale 2] [--off VARIANT ...] [--tune NAME=N ...] [--stats]
                                [--representations DIR]

--off leaves variants out (as Device.variants(tuning={name: False}) does), to compare a choice with
the one before it in the same run; --tune sets tuning numbers (Device.variants(tuning=...)).
It also prints how long the session took to make and to run its first frame (lowering, the kernels'
SPIR-V from dmlvk's cache or compiled, the driver's pipelines): with DMLVK_CACHE_DIR set to an
empty directory, what a user's first session for these shapes costs (the driver may keep a shader
cache of its own). --stats prints each dispatch's pipeline statistics where the driver reports them
(dmlvk_lab/pipeline_stats.py; on NVIDIA the registers an invocation takes); --representations writes
each dispatch's internal representations, where the driver gives any, into DIR (one file each,
named after the dispatch's place in the frame, its variant and the representation's name), and
its pipeline's cache data (dmlvk_lab/sass.py disassembles NVIDIA's).
"""
import argparse
import os
import time

import numpy as np

from dmlvk import Device
from dmlvk.onnx import InferenceSession

from . import bench_layers, onnx_models
from .bench import Timer
from .pipeline_stats import StatisticsDevice, kernel_statistics


def probe(height: int = 540, width: int = 960, scale: int = 2, tuning: dict = None, stats: bool = False,
          check: bool = False, representations: str = None) -> dict:
    """One frame of the model on the default device: its dispatches timed against the floors
    (bench_layers.measure_layers' rows), how long the session took to make and to run its first
    frame, with stats each dispatch's pipeline statistics where the driver reports them (else
    None), with check whether its output equals onnxruntime's (CPU) on every element; with
    representations (a directory) each dispatch's internal representations and its pipeline's cache
    data written there (write_representations)."""
    dev = Device()
    model = onnx_models.quantize(onnx_models.espcn(scale), onnx_models.calibration_frames())
    x = np.concatenate(onnx_models.calibration_frames(1, height, width, seed=3))
    with dev.variants(tuning=tuning or {}):
        start = time.perf_counter()
        session = InferenceSession(model, device=dev)
        made = time.perf_counter()
        y = session.run(None, {"x": x})[0]   # lowered (its operators chosen) at its first run
        first = time.perf_counter()
    _, dispatches, _ = session.device_work({"x": x})
    timer = Timer(dev, 10, 0.3)
    bandwidth, peak = bench_layers.copy_bandwidth(timer), bench_layers.int8_peak(timer)
    out = {"device": dev.name, "made_s": made - start, "first_frame_s": first - made, "copy_bandwidth": bandwidth,
           "int8_peak_ops": peak, "rows": bench_layers.measure_layers(timer, dispatches, bandwidth, peak),
           "statistics": None, "equal_to_onnxruntime": None}
    if stats or representations:
        try:
            sd = StatisticsDevice(dev.index)
        except RuntimeError:
            sd = None
        if sd is not None:
            caches = [] if representations else None
            executables = [kernel_statistics(sd, kernel, bool(representations), caches) for kernel, _ in dispatches]
            sd.close()
            out["statistics"] = [{k: v for ex in exs for k, v in ex["statistics"].items()} for exs in executables]
            if representations:
                out["representations"] = write_representations(representations, out["rows"], executables, caches)
    if check:
        import onnxruntime as ort
        want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        out["equal_to_onnxruntime"] = bool(np.array_equal(y, want))
    return out


def write_representations(directory: str, rows: list, executables: list, caches: list) -> list:
    """The paths written: for dispatch i of the frame, each representation of each of its
    executables as DIR/i-variant-name.txt (text) or .bin, and its pipeline's cache data as
    DIR/i-variant.cache (dmlvk_lab/sass.py disassembles NVIDIA's)."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    for i, (row, exs, blob) in enumerate(zip(rows, executables, caches)):
        paths.append(os.path.join(directory, f"{i}-{row['variant']}.cache"))
        with open(paths[-1], "wb") as f:
            f.write(blob)
        for ex in exs:
            for name, _, body in ex.get("representations", ()):
                safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
                path = os.path.join(directory, f"{i}-{row['variant']}-{safe}" + (".txt" if isinstance(body, str) else ".bin"))
                with open(path, "w" if isinstance(body, str) else "wb") as f:
                    f.write(body)
                paths.append(path)
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--height", type=int, default=540)
    ap.add_argument("--width", type=int, default=960)
    ap.add_argument("--scale", type=int, default=2)
    ap.add_argument("--off", nargs="*", default=[], help="variants to leave out")
    ap.add_argument("--tune", nargs="*", default=[], help="tuning numbers, NAME=N")
    ap.add_argument("--stats", action="store_true", help="each dispatch's pipeline statistics")
    ap.add_argument("--representations", metavar="DIR", help="write each dispatch's internal representations here")
    a = ap.parse_args()
    tuning = {name: int(value) for name, value in (t.split("=", 1) for t in a.tune)}
    r = probe(a.height, a.width, a.scale, {**{name: False for name in a.off}, **tuning}, a.stats,
              representations=a.representations)
    print(r["device"] + (f", without {', '.join(a.off)}" if a.off else "") + (f", {' '.join(a.tune)}" if a.tune else ""))
    print(f"session made in {r['made_s']:.2f} s, its first frame run in {r['first_frame_s']:.2f} s")
    print("\n".join(bench_layers.markdown({"copy_bandwidth": r["copy_bandwidth"], "int8_peak_ops": r["int8_peak_ops"],
                                           "frames": [{"input": [1, 1, a.height, a.width], "rows": r["rows"]}]})))
    if a.representations:
        print(f"{len(r.get('representations', ()))} internal representations written to {a.representations}")
    if a.stats:
        if r["statistics"] is None:
            print("(no pipeline statistics: the driver reports none)")
        for row, st in zip(r["rows"], r["statistics"] or ()):
            print(f"{row['variant']}: " + ", ".join(f"{n} {v}" for n, v in st.items()))


if __name__ == "__main__":
    main()
