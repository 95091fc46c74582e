"""What the lab's tools share: where the benchmarks live, progress lines, chart files, names."""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Optional

import numpy as np

ROOT = Path(__file__).resolve().parent.parent          # the dmlvk source tree
BENCH_DIR = ROOT / "benchmarks"


def prog(command: str) -> str:
    """How the user called a tool: through the dmlvk command, or python -m dmlvk_lab."""
    return f"dmlvk {command}" if sys.argv and sys.argv[0].rstrip("/").endswith("dmlvk") else \
        f"python -m dmlvk_lab {command}"


class Progress:
    """One line on the terminal: label, bar, count."""

    def __init__(self, total: int, label: str, stream=sys.stderr):
        self.total, self.done, self.label, self.stream = max(total, 1), 0, label, stream
        self.tty = stream.isatty()

    def step(self, what: str = "") -> None:
        self.done += 1
        width = 30
        filled = int(width * self.done / self.total)
        line = f"{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {what}"
        if self.tty:
            self.stream.write("\r" + line[:118].ljust(118))
            if self.done >= self.total:
                self.stream.write("\n")
        elif self.done == self.total or self.done % max(1, self.total // 10) == 0:
            self.stream.write(line + "\n")
        self.stream.flush()


# ---- dmlvk measurements -------------------------------------------------------------------------


def generated_document(out: Path, text: str, source: str, command: str, argv) -> int:
    """main() of a generated document: writes text to out, or with --check in argv exits 1 where the
    committed file differs (source: what it is generated from; command: what writes it)."""
    if "--check" in argv:
        if (out.read_text() if out.exists() else "") != text:
            print(f"{out} is not what {source} give: {command}", file=sys.stderr)
            return 1
        return 0
    out.write_text(text)
    print(f"wrote {out}")
    return 0


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40]


def pyplot():
    """matplotlib.pyplot on its file-only backend, or None (and a line on stderr) without it."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no charts", file=sys.stderr)
        return None
    return plt


def save_chart(plt, fig, path: Path, dpi: int = 110) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def short(a: np.ndarray, n: int = 8) -> str:
    flat = a.ravel()
    head = ",".join(str(v) for v in flat[:n])
    return f"[{head}{',...' if flat.size > n else ''}]"


def run_depth_space_example(device, ex):
    """Run one documented example through the DirectML-shaped API; returns the output array."""
    import dmlvk
    descs = {"DEPTH_TO_SPACE": dmlvk.DepthToSpaceDesc, "SPACE_TO_DEPTH": dmlvk.SpaceToDepthDesc,
             "DEPTH_TO_SPACE1": dmlvk.DepthToSpace1Desc, "SPACE_TO_DEPTH1": dmlvk.SpaceToDepth1Desc}
    dt = dmlvk.DataType.from_numpy(ex.input.dtype)
    args = [dmlvk.TensorDesc(dt, ex.input.shape), dmlvk.TensorDesc(dt, ex.expected.shape), ex.block_size]
    if ex.operator.endswith("1"):
        args.append(ex.order)
    op = device.create_operator(descs[ex.operator](*args))
    out = np.zeros_like(ex.expected)
    op.execute(inputs=[ex.input], outputs=[out])
    return out


def bench_results(device_name: str) -> Optional[dict]:
    """A device's committed benchmark figures under benchmarks/, newest kind by kind: depth/space
    (depth-space-<device>.json, else the combined bench-<device>.json), convolution (conv-, else
    bench-) and runtime (runtime-, else bench-); with the files read and their dates. None if there
    are none."""
    import json
    name = slug(device_name)
    load = lambda kind: json.loads((BENCH_DIR / f"{kind}-{name}.json").read_text()) \
        if (BENCH_DIR / f"{kind}-{name}.json").exists() else None
    combined = load("bench") or {}
    out = {"files": [], "dates": [], "depth_space": [], "conv": [], "runtime": {}}
    for kind, part in (("depth-space", "depth_space"), ("conv", "conv"), ("runtime", "runtime")):
        own = load(kind)
        src, file = (own, kind) if own is not None else (combined, "bench")
        if src.get(part):
            out[part] = src[part]
            path = f"benchmarks/{file}-{name}.json"
            if path not in out["files"]:
                out["files"].append(path)
                out["dates"].append(src.get("date", ""))
    return out if out["files"] else None
