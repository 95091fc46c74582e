"""The library's shape: imports only point down (no cycles; the runtime imports nothing above it; the
library never imports the lab), and each operator's variant table agrees with its shaders and with
the SPIR-V the package builds."""
import ast
from pathlib import Path

import pytest

from dmlvk.ops import depth_space, quantized_conv
from dmlvk.ops.variants import check_against_shaders
from dmlvk.runtime import compiler

ROOT = Path(__file__).resolve().parents[1]
TABLES = [depth_space.TABLE, quantized_conv.TABLE]


def import_graph(package: str) -> dict:
    """{module: modules of the package it imports, anywhere in its code}; dmlvk._kp (the compiled
    extension) is a leaf."""
    mods = {}
    for f in (ROOT / package).rglob("*.py"):
        name = ".".join(f.relative_to(ROOT).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = f
    graph = {}
    for name, f in mods.items():
        pkg = name if f.name == "__init__.py" else name.rsplit(".", 1)[0]
        out = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = ".".join(pkg.split(".")[:len(pkg.split(".")) - node.level + 1]) if node.level else ""
                target = ".".join(p for p in (base, node.module or "") if p)
                subs = [f"{target}.{a.name}" for a in node.names]
                out |= {s for s in subs if s in mods or s.endswith("._kp")} or {target}
            elif isinstance(node, ast.Import):
                out |= {a.name for a in node.names}
        graph[name] = {m for m in out if m != name and (m in mods or m.endswith("._kp") or m.startswith("dmlvk"))}
    return graph


def cycles(graph: dict) -> list:
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in graph:
        if v not in index:
            visit(v)
    return found


@pytest.mark.parametrize("package", ["dmlvk", "dmlvk_lab"])
def test_no_import_cycles(package):
    assert cycles(import_graph(package)) == []


def test_the_runtime_imports_nothing_above_it():
    below = ("dmlvk.runtime", "dmlvk.enums", "dmlvk.errors", "dmlvk.tensor", "dmlvk._kp")
    for module, imported in import_graph("dmlvk").items():
        if module.startswith("dmlvk.runtime"):
            above = {m for m in imported if not m.startswith(below)}
            assert not above, (module, above)


def test_the_library_never_imports_the_lab():
    for module, imported in import_graph("dmlvk").items():
        assert not {m for m in imported if m.startswith("dmlvk_lab")}, module


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.operator)
def test_variant_tables_name_their_shaders_constants(table):
    assert check_against_shaders(table, compiler.SHADER_DIR) == []


def test_the_package_builds_every_variant_of_the_tables():
    built = set(compiler.VARIANTS)
    wanted = {(v.shader, defines) for t in TABLES for v in t for defines in v.builds}
    assert wanted <= built, wanted - built
    # beyond the tables: the copy kernel (the benchmarks' yardstick) and ONNX's Q/DQ
    assert {s for s, _ in built - wanted} == {"copy", "quantize_linear", "dequantize_linear"}


def test_a_forced_variant_is_checked():
    d = depth_space.DepthToSpace1Desc(dmlvk_desc((1, 8, 4, 4)), dmlvk_desc((1, 2, 8, 8)), 2, 0)
    assert d.kernel(force="element.words").variant == "element.words"
    with pytest.raises(ValueError, match="no variant 'conv.gemm'"):
        d.kernel(force="conv.gemm")
    with pytest.raises(ValueError, match="variant rows.paired needs subgroupShuffle"):
        d.kernel(None, force="rows.paired")
    with pytest.raises(ValueError, match="no tuning number NOPE"):
        d.kernel(tuning={"NOPE": 1})


def dmlvk_desc(sizes):
    from dmlvk import DataType, TensorDesc
    return TensorDesc(DataType.FLOAT32, sizes)


def test_the_kernels_document_is_the_tables():
    from dmlvk_lab import kernels_doc
    assert kernels_doc.OUT.read_text() == kernels_doc.render(), "python -m dmlvk_lab.kernels_doc"


def test_the_convolution_push_block_is_declared_once():
    from dmlvk.ops.quantized_conv.layout import PUSH
    from dmlvk.ops.variants import declared_push_block
    assert declared_push_block(compiler.SHADER_DIR / "qconv_common.glsl") == list(PUSH) + [("items", 1), ("first", 1)]
