"""The library's shape: imports only point down (no cycles; the runtime imports nothing above it; the
library never imports the lab), and each operator's variant table agrees with its shaders and with
the SPIR-V the package builds."""
import ast
import re
from pathlib import Path

import pytest

from dmlvk.ops import depth_space
from dmlvk.ops.registry import TABLES
from dmlvk.ops.variants import PushBlock, check_against_shaders, check_push_blocks
from dmlvk.runtime import compiler

pytestmark = pytest.mark.host      # the library's shape: imports, tables against shaders, generated documents

ROOT = Path(__file__).resolve().parents[1]


def import_graph(package: str) -> dict:
    """{module: modules of the package it imports, anywhere in its code}."""
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
                out |= {s for s in subs if s in mods} or {target}
            elif isinstance(node, ast.Import):
                out |= {a.name for a in node.names}
        graph[name] = {m for m in out if m != name and (m in mods or m.startswith("dmlvk"))}
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
    below = ("dmlvk.runtime", "dmlvk.enums", "dmlvk.errors", "dmlvk.tensor")
    for module, imported in import_graph("dmlvk").items():
        if module.startswith("dmlvk.runtime"):
            above = {m for m in imported if not m.startswith(below)}
            assert not above, (module, above)


def test_the_onnx_runner_reaches_operators_through_their_packages():
    # the runner asks an operator's package (its __init__'s names, its `layouts` questions), never its
    # variant table, plan or binding internals: a renamed variant cannot change a model's layouts unseen
    internals = ("variants", "routines", "layout", "shared_memory", "operator", "desc")
    for module, imported in import_graph("dmlvk").items():
        if module.startswith("dmlvk.onnx"):
            reached = {m for m in imported if m.startswith("dmlvk.ops.") and m.rsplit(".", 1)[-1] in internals}
            assert not reached, (module, reached)


def test_nothing_in_the_library_names_tools():
    # the wheel carries no tools/: the library's code, shaders and docstrings name none of its paths
    for path in (ROOT / "dmlvk").rglob("*"):
        if path.suffix in (".py", ".comp", ".glsl"):
            assert "tools/" not in path.read_text(), path


def test_no_sys_path_edits_in_the_tests_or_the_lab():
    # they import dmlvk and dmlvk_lab as packages (tools/'s scripts, run by hand, may put the checkout first)
    edit = re.compile(r"sys\.path\s*(\.(insert|append|extend)\b|\[[^\]]*\]\s*=|\+=)")
    here = Path(__file__).resolve()
    for path in list((ROOT / "tests").rglob("*.py")) + list((ROOT / "dmlvk_lab").rglob("*.py")):
        if path.resolve() != here:
            assert not edit.search(path.read_text()), path


def test_the_library_never_imports_the_lab():
    for module, imported in import_graph("dmlvk").items():
        assert not {m for m in imported if m.startswith("dmlvk_lab")}, module


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.operator)
def test_variant_tables_name_their_shaders_constants(table):
    assert check_against_shaders(table, compiler.SHADER_DIR) == []


def test_the_package_builds_every_variant_of_the_tables():
    from dmlvk_lab import spirv_builds
    assert compiler.BUILDS.read_text() == spirv_builds.render(), "python -m dmlvk_lab.spirv_builds"
    built = set(compiler.VARIANTS)
    wanted = {(v.shader, defines) for t in TABLES for v in t for defines in v.builds}
    assert wanted <= built, wanted - built
    # beyond the tables: the benchmarks' yardsticks (the copy kernel, the int8 peak probe, the lanes probe)
    assert {s for s, _ in built - wanted} == {"copy", "coopmat_peak", "coopmat_lanes_probe"}


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


def test_the_onnx_ops_document_is_the_registry():
    from dmlvk.onnx.lower import LOWERINGS
    from dmlvk_lab import onnx_ops_doc
    assert onnx_ops_doc.OUT.read_text() == onnx_ops_doc.render(), "python -m dmlvk_lab.onnx_ops_doc"
    assert all(entry.runs for entry in LOWERINGS.values()), "every lowering says what runs it"


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.operator)
def test_push_blocks_are_the_shaders_declarations(table):
    assert check_push_blocks(table, compiler.SHADER_DIR) == []


def test_kernels_are_made_by_name():
    rows = depth_space.TABLE["rows"]
    spec = dict(ELEM_BYTES=1, BLOCK=2, D2S=1, ORDER=0, K=4, CHUNKS=1, STAGED=0, SUBGROUP_STAGED=0, FLAT=0,
                BLOCK_ROW_MAJOR=0)
    push = dict(space_strides=(1, 2, 3, 0), depth_strides=(4, 5, 6, 0), chunks_per_row=7, space_height=8,
                space_channels=9, total_chunks=10)
    k = rows.kernel(spec=spec, push=push, count=1, slots=(0, 1))
    assert rows.constants(k) == spec and rows.push_values(k) == push
    with pytest.raises(ValueError, match=r"missing \['BLOCK_ROW_MAJOR'\], unknown \['ROTATE'\]"):
        rows.kernel(spec={**{k: v for k, v in spec.items() if k != "BLOCK_ROW_MAJOR"}, "ROTATE": 1}, push=push,
                    count=1, slots=(0, 1))
    with pytest.raises(ValueError, match=r"push constants: missing \['total_chunks'\], unknown \['dims'\]"):
        rows.kernel(spec=spec, push={**{k: v for k, v in push.items() if k != "total_chunks"}, "dims": 1},
                    count=1, slots=(0, 1))
    with pytest.raises(ValueError, match="space_strides has 3 words, not 4"):
        rows.kernel(spec=spec, push={**push, "space_strides": (1, 2, 3)}, count=1, slots=(0, 1))
    with pytest.raises(AssertionError, match="needs 4-word alignment"):
        PushBlock([("a", 1), ("b", 4)])


def test_kernels_are_data_apart_from_the_device():
    """runtime/kernel.py (Kernel, dispatch tiling) and memory.py (heap accounting) import no Kompute
    and no Device; only runtime/kompute.py loads the native library."""
    graph = import_graph("dmlvk")
    for module in ("dmlvk.runtime.kernel", "dmlvk.runtime.memory"):
        assert not {m for m in graph[module] if m.startswith("dmlvk")}, module
    loaders = {path.relative_to(ROOT).as_posix() for path in (ROOT / "dmlvk").rglob("*.py")
               if "libdmlvk_kompute" in path.read_text()}
    assert loaders == {"dmlvk/runtime/kompute.py"}, loaders


def test_the_onnx_runner_layers():
    """graph, qdq and rewrite work on graphs alone: no operator, no runtime; lower is where the
    operators come in, plan where the runtime does."""
    graph = import_graph("dmlvk")
    for module in ("dmlvk.onnx.graph", "dmlvk.onnx.qdq", "dmlvk.onnx.rewrite"):
        assert not {m for m in graph[module] if m.startswith(("dmlvk.ops", "dmlvk.runtime"))}, module
    assert not {m for m in graph["dmlvk.onnx.graph"] if m.startswith("dmlvk.onnx.") and m != "dmlvk.onnx.graph"}
    assert "dmlvk.onnx.lower" not in graph["dmlvk.onnx.rewrite"]


def test_the_onnx_runner_imports_at_module_level_only():
    for f in (ROOT / "dmlvk" / "onnx").glob("*.py"):
        tree = ast.parse(f.read_text())
        top = {id(n) for n in tree.body} | {id(n) for t in tree.body if isinstance(t, ast.Try) for n in t.body}
        local = [n.lineno for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in top]
        assert local == [], (f.name, local)
