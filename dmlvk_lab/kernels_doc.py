"""docs/kernels.md, generated from the operators' variant tables: python -m dmlvk_lab.kernels_doc
(writes it; --check exits 1 where the committed file differs)."""
from __future__ import annotations

import sys

from dmlvk.ops.registry import TABLES

from .common import ROOT, generated_document

OUT = ROOT / "docs" / "kernels.md"
EVIDENCE = ROOT / "benchmarks" / "evidence"


def evidence(variant):
    """The variant's full record of measurements: benchmarks/evidence/<name>.md (where it has one)."""
    return EVIDENCE / f"{variant.name}.md"


def _cell(value) -> str:
    return str(value).replace("|", "\\|")


def render() -> str:
    out = ["# Kernels", "",
           "Generated from the operators' variant tables (`dmlvk/ops/*/variants.py`) by "
           "`python -m dmlvk_lab.kernels_doc`; edit the tables, not this file.", "",
           "A variant is one way an operator runs: a shader (`dmlvk/shaders/<shader>.comp`) with named "
           "specialization constants. Each operator's selection tries its variants as the table orders "
           "them; the layout decides what can run, the measurements what does. "
           "`Device.create_operator(desc, force=NAME)` runs one by name, `tuning={NUMBER: value}` "
           "changes a number, `tuning={NAME: False}` leaves a variant out; `DMLVK_VARIANT=NAME` forces "
           "one for every operator that has it. Steps are kernels that run as part of another "
           "variant's plan; extensions are variants with more in their epilogue that only an API of "
           "their own reaches (the ONNX runner's folds). Every kernel also keeps the device's "
           "maxComputeWorkGroupInvocations and maxPushConstantsSize, and its variant's \"correct "
           "within\" limits: a routine takes another way where they fail, and a forced variant raises "
           "a ValueError naming the one it breaks.", ""]
    for table in TABLES:
        out += [f"## {table.operator}", "", "| variant | shader | what it does | needs | wins where |",
                "|---|---|---|---|---|"]
        for v in table:
            what = _cell(v.summary) + (f" (a step of `{v.step_of}`)" if v.step_of else "") \
                + (f" (`{v.extends}` extended, not forceable)" if v.extends else "")
            where = _cell(v.wins.text) if v.wins else "-"
            out.append(f"| `{v.name}` | `{v.shader}` | {what} | {', '.join(v.requires) or '-'} | {where} |")
        out.append("")
        for v in table:
            out += [f"### `{v.name}`", "", _cell(v.summary) + ".", ""]
            consts = ", ".join(f"{i} `{n}`" for i, n in enumerate(v.spec, 1) if n is not None)
            out.append(f"- shader `{v.shader}.comp`; specialization constants {consts}")
            builds = [", ".join(f"{k}={val}" for k, val in d) or "no defines" for d in v.builds]
            if builds:
                out.append(f"- compiled as: {'; '.join(builds)}")
            if v.requires:
                out.append(f"- requires: {', '.join(v.requires)}")
            for need in v.needs:
                out.append(f"- correct within: {_cell(need.text)}")
            if v.wins:
                out.append(f"- wins where: {_cell(v.wins.text)}")
            if v.tuning:
                out.append("- tuning: " + ", ".join(f"`{k}` = {_cell(val)}" for k, val in v.tuning.items()))
            if v.measured:
                out.append(f"- measured ({v.measured_on or 'device not recorded'}): {_cell(v.measured)}")
            elif v.measured_on:
                out.append(f"- measured on: {v.measured_on}")
            if evidence(v).exists():
                out.append(f"- evidence: [benchmarks/evidence/{v.name}.md](../benchmarks/evidence/{v.name}.md)")
            out.append("")
    retired = sorted(p.stem for p in EVIDENCE.glob("*.md") if p.stem not in {v.name for t in TABLES for v in t})
    if retired:
        out += ["## Retired variants", "",
                "Variants that measured slower than the kernel chosen instead wherever they ran, removed from "
                "the tables; their records, and the commit that last had them:", ""]
        out += [f"- [`{name}`](../benchmarks/evidence/{name}.md)" for name in retired]
    return "\n".join(out).rstrip() + "\n"


def main(argv=None) -> int:
    return generated_document(OUT, render(), "the variant tables", "python -m dmlvk_lab.kernels_doc",
                              sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
