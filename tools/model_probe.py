"""Per-kernel GPU times of the quantized super-resolution model's device work (dmlvk.onnx), one
frame: which layer costs what.

    python tools/model_probe.py [--height 540] [--width 960] [--scale 2]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dmlvk import Device  # noqa: E402
from dmlvk.runtime.commands import time as time_dispatches  # noqa: E402
from dmlvk_lab import onnx_models  # noqa: E402
from dmlvk_lab.bench import Timer  # noqa: E402
from dmlvk.onnx import InferenceSession  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--height", type=int, default=540)
    ap.add_argument("--width", type=int, default=960)
    ap.add_argument("--scale", type=int, default=2)
    a = ap.parse_args()
    dev = Device()
    session = InferenceSession(onnx_models.quantize(onnx_models.espcn(a.scale), onnx_models.calibration_frames()),
                               device=dev)
    x = np.concatenate(onnx_models.calibration_frames(1, a.height, a.width, seed=3))
    session.run(None, {"x": x})
    _, dispatches, _ = session.device_work({"x": x})
    timer = Timer(dev, 10, 0.3)
    print(dev.name)
    for kernel, bufs in dispatches:
        t = timer(lambda n: time_dispatches(dev, [(kernel, bufs)], n))["median_s"]
        print(f"{kernel.shader:28s} {kernel.count:10d} items  spec {kernel.spec}  {t * 1e6:8.1f} us")


if __name__ == "__main__":
    main()
