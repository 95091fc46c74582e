"""python -m dmlvk_lab demo: DirectML's documented examples, run on a device."""
from __future__ import annotations

import numpy as np

from .common import prog, run_depth_space_example, short


def main(argv=None) -> int:
    """Runs DirectML's documented examples on a device and prints the table."""
    import argparse
    ap = argparse.ArgumentParser(prog=prog("demo"), description="run DirectML's documented examples on a device")
    ap.add_argument("--device", type=int, default=None, help="device index (default: $DMLVK_DEVICE or 0)")
    args = ap.parse_args(argv)
    import dmlvk
    from .examples import depth_space_examples, qconv_examples
    device = dmlvk.Device(args.device)
    print(f"device {device.index}: {device.name} ({device.info.driver_info}), {device.feature_level.dml_name}")
    rows, failures = [], 0
    runs = [(ex, lambda ex=ex: run_depth_space_example(device, ex)) for ex in depth_space_examples()]
    runs += [(ex, lambda ex=ex: dmlvk.quantized_linear_convolution(*ex.args, **ex.kwargs, device=device))
             for ex in qconv_examples()]
    for ex, run in runs:
        got = run()
        ok = np.array_equal(got, ex.expected)
        failures += not ok
        rows.append((ex.name, ex.source, short(ex.expected), short(got), "yes" if ok else "NO"))
    head = ("example", "source", "expected", "got", "match")
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(5)]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths))
    print(line(head))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))
    print(f"{len(rows) - failures} of {len(rows)} examples match")
    return 1 if failures else 0
