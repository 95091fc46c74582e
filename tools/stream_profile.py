"""cProfile of InferenceSession.run_stream over 60 ESPCN frames (where a frame's host time goes).

    python tools/stream_profile.py [--height H] [--width W] [--batch N]"""
import argparse
import cProfile
import os
import pstats
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dmlvk import Device, onnx  # noqa: E402
from dmlvk_lab import onnx_models  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--height", type=int, default=540)
    ap.add_argument("--width", type=int, default=960)
    ap.add_argument("--batch", type=int, default=1)
    a = ap.parse_args()
    session = onnx.InferenceSession(onnx_models.quantize(onnx_models.espcn(2), onnx_models.calibration_frames()),
                                    device=Device())
    x = np.concatenate(onnx_models.calibration_frames(a.batch, a.height, a.width, seed=3))
    list(session.run_stream(None, [{"x": x}] * 4))
    prof = cProfile.Profile()
    prof.enable()
    list(session.run_stream(None, [{"x": x}] * 60))
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(14)


if __name__ == "__main__":
    main()
