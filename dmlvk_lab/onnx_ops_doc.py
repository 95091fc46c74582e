"""docs/onnx-ops.md, generated from the ONNX runner's registry of lowerings (dmlvk.onnx.lower.LOWERINGS)
and the ops its QDQ fusion takes in (dmlvk.onnx.rewrite.FUSED_OPS): python -m dmlvk_lab.onnx_ops_doc
(writes it; --check exits 1 where the committed file differs)."""
from __future__ import annotations

import sys

from dmlvk.onnx.lower import LOWERINGS
from dmlvk.onnx.rewrite import FUSED_OPS

from .common import ROOT, generated_document

OUT = ROOT / "docs" / "onnx-ops.md"


def render() -> str:
    out = ["# ONNX ops dmlvk runs", "",
           "Generated from `dmlvk/onnx/lower.py`'s `LOWERINGS` and `dmlvk/onnx/rewrite.py`'s `FUSED_OPS` by "
           "`python -m dmlvk_lab.onnx_ops_doc`; edit those, not this file. A model with any other op is "
           "refused at load, naming every such node ([onnx.md](onnx.md)).", "",
           "| op | runs as |", "|---|---|"]
    out += [f"| {op} | {entry.runs} |" for op, entry in LOWERINGS.items() if not entry.fuses]
    out += ["", "Inside a QDQ group only (DequantizeLinear → op → QuantizeLinear, fused into one QLinearConv "
            "before lowering, as ONNX Runtime fuses it): " + ", ".join(sorted(FUSED_OPS)) + ".", "",
            "## Fused node types", "",
            "Made from the nodes they stand for by the runner's rewrites (`dmlvk/onnx/rewrite.py`, at load) "
            "or by the passes that run once the input shapes are known (`dmlvk/onnx/passes.py`), where the "
            "device's kernels allow; no model contains them.", "",
            "| node type | stands for | runs as |", "|---|---|---|"]
    out += [f"| {op} | {' → '.join(entry.fuses)} | {entry.runs} |" for op, entry in LOWERINGS.items() if entry.fuses]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    return generated_document(OUT, render(), "the registry's entries", "python -m dmlvk_lab.onnx_ops_doc",
                              sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
