"""dmlvk/shaders/builds.json, generated from the operators' variant tables (each row's `builds`) and
the benchmarks' probes (EXTRAS): every (shader, defines) the package compiles to SPIR-V
(dmlvk.runtime.compiler.VARIANTS reads it; the runtime imports nothing above it, so it cannot ask
the tables itself). python -m dmlvk_lab.spirv_builds writes it; --check exits 1 where the committed
file differs."""
from __future__ import annotations

import json
import sys

from dmlvk.runtime.compiler import BUILDS

from .common import generated_document
from .kernels_doc import TABLES

# beyond the tables: the bandwidth yardstick, the int8 peak probe and the accumulator lanes' probe
EXTRAS = (("copy", ()), ("coopmat_peak", ()), ("coopmat_lanes_probe", ()))


def builds() -> list:
    """(shader, defines) of every variant's builds in table order, then the extras, each once."""
    out = []
    for item in [(v.shader, tuple(d)) for t in TABLES for v in t for d in v.builds] + list(EXTRAS):
        if item not in out:
            out.append(item)
    return out


def render() -> str:
    rows = [json.dumps([shader, [list(d) for d in defines]]) for shader, defines in builds()]
    return "[\n" + ",\n".join(rows) + "\n]\n"


def main(argv=None) -> int:
    return generated_document(BUILDS, render(), "the variant tables", "python -m dmlvk_lab.spirv_builds",
                              sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
