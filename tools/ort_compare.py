"""Randomised QUANTIZED_LINEAR_CONVOLUTION comparison against onnxruntime on a Vulkan device.

python tools/ort_compare.py [--cases N] [--seed S]: prints the device, cases, elements compared
and how many differed (bit exact means 0), and the cases each kernel computed."""
import argparse
import collections
import os
import sys

import numpy as np

_root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [_root]

import dmlvk  # noqa: E402
from dmlvk_lab.oracles import onnx_qlinearconv_model, random_case, run_onnxruntime  # noqa: E402
from dmlvk.ops.quantized_conv import prepare_call  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    device = dmlvk.Device()
    combos = [(np.uint8, np.uint8, np.uint8), (np.uint8, np.int8, np.uint8), (np.int8, np.int8, np.int8)]
    cases = elements = differing = 0
    first_failure = None
    by_kernel = collections.Counter()
    for i in range(args.cases):
        types = combos[i % len(combos)]
        w_range = (-64, 63) if types[:2] == (np.uint8, np.int8) else None
        a, kw, y_dt = random_case(rng, *types, per_channel=bool(i % 2), w_range=w_range)
        model, feeds = onnx_qlinearconv_model(a, kw, y_dt)
        expected = run_onnxruntime(model, feeds)
        # what dmlvk.quantized_linear_convolution does, keeping the operator to name its kernel
        op, inputs, result, finish = prepare_call(*a, **kw, output_dtype=None, device=device)
        op.execute(inputs=inputs, outputs=[result])
        got = finish()
        by_kernel[op.kernels[-1].shader] += 1
        bad = int(np.count_nonzero(got != expected))
        cases += 1
        elements += got.size
        differing += bad
        if bad and first_failure is None:
            first_failure = (i, kw, [getattr(v, "shape", v) for v in a])
    print(f"device: {device.name} ({device.info.driver_info})")
    print(f"cases: {cases}, elements compared: {elements}, elements differing: {differing}")
    print("cases by kernel:", ", ".join(f"{k} {v}" for k, v in sorted(by_kernel.items())))
    if first_failure:
        print("first failing case:", first_failure)
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
