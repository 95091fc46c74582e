"""Quantized convolution per-kernel timings on one device: for each benchmark layer, the
chosen path's kernels one by one (GPU timestamps after a warming copy, best median of a few
rounds) and the whole operator, back to back and with the barriers of a real sequence, in TOPS,
with the output checked against dmlvk.reference. The filter is bound at execution, so its packing
is among the kernels. Where the driver reports pipeline statistics (dmlvk_lab/pipeline_stats.py), each
kernel's are printed after its time (on NVIDIA: registers per invocation, shared memory).

    python tools/qconv_probe.py [--layers REGEX] [--batches 32,1] [--rounds 5]
"""
import argparse
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dmlvk import Device, reference  # noqa: E402
from dmlvk_lab.bench import Timer, conv_arguments, conv_ops  # noqa: E402
from dmlvk_lab.cases import conv_layers  # noqa: E402
from dmlvk.ops.quantized_conv import prepare_call  # noqa: E402
from dmlvk.runtime.commands import time as time_dispatches  # noqa: E402
from dmlvk_lab.pipeline_stats import StatisticsDevice, kernel_statistics  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", default="", help="regex on the benchmark's layer names")
    ap.add_argument("--batches", default="32,1")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warm", type=float, default=0.3, help="seconds of copying before each timing")
    a = ap.parse_args()
    dev = Device()
    print(dev.name)
    try:
        stats = StatisticsDevice(dev.index)
    except RuntimeError as e:
        print(f"(no pipeline statistics: {e})")
        stats = None
    for layer in conv_layers(tuple(int(b) for b in a.batches.split(","))):
        if not re.search(a.layers, layer[0]):
            continue
        args, kwargs = conv_arguments(layer)
        op, inputs, out, finish = prepare_call(*args, **kwargs, output_dtype=None, device=dev)
        op.execute(inputs, [out])
        ok = np.array_equal(finish(), reference.quantized_linear_convolution(*args, np.uint8, **kwargs))
        timer = Timer(dev, a.repeats, a.warm)
        whole = min(timer(lambda n: op.time(inputs, [out], n))["median_s"] for _ in range(a.rounds))
        serial = min(timer(lambda n: op.time(inputs, [out], n, barriers=True))["median_s"] for _ in range(a.rounds))
        parts = []
        for k, bufs in op.staged_dispatches(inputs, [out]):
            best = min(timer(lambda n: time_dispatches(dev, [(k, bufs)], n))["median_s"] for _ in range(a.rounds))
            about = ""
            for ex in (kernel_statistics(stats, k) if stats is not None else ()):
                about = " (" + ", ".join(f"{n}: {v}" for n, v in ex["statistics"].items()) + ")"
            parts.append(f"{k.shader} {best * 1e6:.1f} us{about}")
        tops = conv_ops(layer) / whole / 1e12
        print(f"{layer[0]:42s} {'ok' if ok else 'WRONG'} {whole * 1e6:9.1f} us {tops:8.2f} TOPS "
              f"(with barriers {serial * 1e6:.1f} us) | " + ", ".join(parts),
              flush=True)
    if stats is not None:
        stats.close()


if __name__ == "__main__":
    main()
