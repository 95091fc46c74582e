"""The one binary wheel: built from the checkout through dmlvk's own build (Kompute as the private
extension dmlvk._kp, the shaders and every variant's SPIR-V), repaired by auditwheel, installed into a
fresh virtualenv with numpy alone, and run from elsewhere with no compiler and an empty home; the
development tree's SPIR-V cache checks what it reads."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def clean_env(**extra) -> dict:
    """The environment of a user's shell: nothing of this checkout or this virtualenv in it."""
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "XDG_CACHE_HOME", "DMLVK_CACHE_DIR", "DMLVK_SHADER_DIR",
            "PIP_TARGET", "PIP_PREFIX")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The binary wheel a user installs: built from the checkout (Kompute as dmlvk._kp, the SPIR-V),
    then repaired by auditwheel, with the system's Vulkan loader left out (it is the system's)."""
    raw, out = tmp_path_factory.mktemp("wheel"), tmp_path_factory.mktemp("repaired")
    bin_dir = str(Path(sys.executable).parent)
    env = clean_env(PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(raw),
                        str(ROOT)], capture_output=True, text=True, timeout=900, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    (whl,) = raw.glob("dmlvk-*.whl")
    p = subprocess.run([sys.executable, "-m", "auditwheel", "repair", "--exclude", "libvulkan.so.1", "-w", str(out),
                        str(whl)], capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    (repaired,) = out.glob("dmlvk-*.whl")
    return repaired


def test_wheel_is_manylinux_and_links_only_glibc_and_the_vulkan_loader(wheel, tmp_path):
    assert "-manylinux_2_" in wheel.name and wheel.name.endswith("_x86_64.whl"), wheel.name
    z = zipfile.ZipFile(wheel)
    (ext,) = [n for n in z.namelist() if n.startswith("dmlvk/_kp.") and n.endswith(".so")]
    assert not [n for n in z.namelist() if ".libs/" in n]          # nothing grafted: no bundled library
    so = tmp_path / "ext.so"
    so.write_bytes(z.read(ext))
    dyn = subprocess.run(["objdump", "-p", str(so)], capture_output=True, text=True).stdout
    needed = {line.split()[1] for line in dyn.splitlines() if line.strip().startswith("NEEDED")}
    assert needed <= {"libvulkan.so.1", "libc.so.6", "libm.so.6", "ld-linux-x86-64.so.2"}, needed
    assert "libvulkan.so.1" in needed and not any("python" in n or "stdc++" in n for n in needed)


def test_wheel_carries_the_shaders_and_every_variant_as_spirv(wheel):
    from dmlvk.runtime.compiler import VARIANTS, blob_name
    z = zipfile.ZipFile(wheel)
    names = z.namelist()
    shaders = {Path(n).name for n in names if n.startswith("dmlvk/shaders/") and not n.endswith("/")}
    expected = {p.name for p in (ROOT / "dmlvk" / "shaders").iterdir()}
    assert expected and shaders == expected
    assert "dmlvk/py.typed" in names
    manifest = json.loads(z.read("dmlvk/spirv/manifest.json"))
    assert set(manifest) == {blob_name(n, d) for n, d in VARIANTS}
    for blob_file, digest in manifest.items():
        blob = z.read(f"dmlvk/spirv/{blob_file}")
        assert blob[:4] == b"\x03\x02\x23\x07" and hashlib.sha256(blob).hexdigest() == digest


def test_kernels_ask_only_for_declared_variants(device, portable_device):
    """Every (shader, defines) the operators choose, over many descriptions and both capability
    sets, is one the build compiles."""
    import numpy as np
    from dmlvk_lab.fuzz import description, generate
    from dmlvk.runtime.compiler import VARIANTS
    seen = set()
    for dev in (device, portable_device):
        for i in range(400):
            try:
                op = dev.create_operator(description(generate(np.random.default_rng([5, i]))))
            except (ValueError, TypeError):
                continue
            seen |= {(k.shader, tuple(k.defines)) for k in op.kernels}
    assert seen <= set(VARIANTS), seen - set(VARIANTS)
    assert len(seen) >= 4           # the 8/16-bit store variants: test_element_variants_agree


RUN_EVERYTHING = """
import subprocess, sys
import numpy as np, dmlvk
assert dmlvk.__file__.startswith(%(site)r), dmlvk.__file__
x = np.arange(2 * 8 * 3 * 4, dtype=np.uint8).reshape(2, 8, 3, 4)
for fn in (dmlvk.depth_to_space, dmlvk.space_to_depth):
    y = fn(x if fn is dmlvk.depth_to_space else np.zeros((1, 2, 4, 4), np.float32), 2)
dev = dmlvk.Device()
t = dmlvk.TensorDesc(dmlvk.DataType.FLOAT32, (1, 4, 2, 2)), dmlvk.TensorDesc(dmlvk.DataType.FLOAT32, (1, 1, 4, 4))
dev.create_operator(dmlvk.DepthToSpaceDesc(*t, 2)).execute([np.zeros(16, np.float32)], [np.zeros(16, np.float32)])
dev.create_operator(dmlvk.SpaceToDepthDesc(t[1], t[0], 2)).execute([np.zeros(16, np.float32)], [np.zeros(16, np.float32)])
dev.create_operator(dmlvk.SpaceToDepth1Desc(t[1], t[0], 2, 1)).execute([np.zeros(16, np.float32)], [np.zeros(16, np.float32)])
out = dmlvk.TensorDesc(dmlvk.DataType.UINT8, (1, 1, 4, 4), (32, 32, 7, 2))     # no nesting order: per-element stores
dev.create_operator(dmlvk.DepthToSpace1Desc(dmlvk.TensorDesc(dmlvk.DataType.UINT8, (1, 4, 2, 2)), out, 2, 0)).execute(
    [np.zeros(16, np.uint8)], [np.zeros(out.total_bytes, np.uint8)])
y = dmlvk.depth_to_space(np.zeros((1, 4, 2, 32), np.uint8), 2)                  # the rows shader
for m in (4, 16):      # the direct and the implicit-GEMM convolution
    w = np.ones((m, 8, 3, 3), np.int8)
    y = dmlvk.quantized_linear_convolution(x, 0.1, np.uint8(0), w, 0.1, None, None, 1.0, np.uint8(0))
    assert y.shape == (2, m, 1, 2)
s = dmlvk.TensorDesc(dmlvk.DataType.FLOAT32, (1, 1, 1, 1))
desc = dmlvk.QuantizedLinearConvolutionDesc(
    dmlvk.TensorDesc(dmlvk.DataType.UINT8, (1, 8, 3, 4)), s, dmlvk.TensorDesc(dmlvk.DataType.UINT8, (1, 1, 1, 1)),
    dmlvk.TensorDesc(dmlvk.DataType.INT8, (4, 8, 3, 3)), s, None, None, s, dmlvk.TensorDesc(dmlvk.DataType.UINT8, (1, 1, 1, 1)),
    dmlvk.TensorDesc(dmlvk.DataType.UINT8, (1, 4, 1, 2)), (1, 1), (1, 1), (0, 0), (0, 0), 1)
dev.create_operator(desc)
import dmlvk._kp                       # the private Kompute; a top-level kp is not dmlvk's
assert "kp" not in sys.modules
print("ok")
"""


def _venv(tmp_path, name):
    venv = tmp_path / name
    base = getattr(sys, "_base_executable", sys.executable)
    p = subprocess.run([base, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=300, env=clean_env())
    assert p.returncode == 0, p.stdout + p.stderr
    return venv, str(venv / "bin" / "python")


def _pip(py, *args, cwd):
    p = subprocess.run([py, "-m", "pip", *args], capture_output=True, text=True, timeout=900, env=clean_env(), cwd=cwd)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_installed_wheel_runs_everything_elsewhere_and_uninstalls_cleanly(wheel, tmp_path):
    """A fresh virtualenv (no system site packages) with numpy and dmlvk's wheel alone, used from
    another directory with an empty HOME and no compiler, cmake or glslangValidator on PATH: every
    operator at the numpy and the DirectML level, `dmlvk devices`, `dmlvk --version`; then onnx
    beside it and an ONNX model; then `pip uninstall` leaves nothing of dmlvk."""
    import numpy
    import numpy as np
    import onnx
    from dmlvk import reference
    home, work = tmp_path / "home", tmp_path / "work"
    for d in (home, work):
        d.mkdir()
    venv, py = _venv(tmp_path, "venv")
    _pip(py, "install", "-q", "numpy==" + numpy.__version__, cwd=work)
    _pip(py, "install", "-q", "--no-deps", str(wheel), cwd=work)
    site = next((venv / "lib").glob("python3*/site-packages"))
    run_env = clean_env(HOME=str(home), PATH=str(tmp_path / "empty-path"))
    for exe in ("cc", "c++", "g++", "cmake", "glslangValidator", "patch"):
        assert shutil.which(exe, path=run_env["PATH"]) is None
    p = subprocess.run([py, "-c", RUN_EVERYTHING % {"site": str(site)}], capture_output=True, text=True, cwd=work,
                       env=run_env, timeout=600)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout + p.stderr[-3000:]
    cli = str(venv / "bin" / "dmlvk")
    p = subprocess.run([cli, "--version"], capture_output=True, text=True, cwd=work, env=run_env, timeout=60)
    assert p.returncode == 0 and p.stdout.strip().startswith("dmlvk "), p.stdout + p.stderr
    p = subprocess.run([cli, "devices"], capture_output=True, text=True, cwd=work, env=run_env, timeout=120)
    assert p.returncode == 0 and "DirectML feature level" in p.stdout, p.stdout + p.stderr

    # An ONNX model (QOperator DepthToSpace on uint8) once onnx is installed beside it.
    _pip(py, "install", "-q", "onnx==" + onnx.__version__, cwd=work)
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD")], "d2s",
                              [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 8, 2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 2, 4, 6])])
    model = tmp_path / "d2s.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(model))
    code = ("import numpy as np, dmlvk.onnx\n"
            f"s = dmlvk.onnx.InferenceSession({str(model)!r})\n"
            "x = np.arange(48, dtype=np.uint8).reshape(1, 8, 2, 3)\n"
            "(y,) = s.run(None, {'x': x})\n"
            "print(y.reshape(-1).tolist())")
    p = subprocess.run([py, "-c", code], capture_output=True, text=True, cwd=work, env=run_env, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr[-3000:]
    want = reference.depth_to_space(np.arange(48, dtype=np.uint8).reshape(1, 8, 2, 3), 2, "CRD")
    assert p.stdout.split("\n")[-2] == str(want.reshape(-1).tolist())
    assert not (home / ".cache" / "dmlvk").exists()        # nothing compiled, nothing cached

    _pip(py, "uninstall", "-y", "-q", "dmlvk", cwd=work)
    left = [p for p in site.iterdir() if p.name.lower().startswith("dmlvk")] + list(venv.glob("bin/dmlvk*"))
    assert not left, left


def test_without_a_driver_import_works_and_the_first_device_call_says_what_is_missing(wheel, tmp_path):
    venv, py = _venv(tmp_path, "venv")
    import numpy
    _pip(py, "install", "-q", "numpy==" + numpy.__version__, str(wheel), cwd=tmp_path)
    code = ("import dmlvk\n"
            "assert dmlvk.devices() == []\n"
            "try:\n    dmlvk.Device()\nexcept dmlvk.UnsupportedError as e:\n    print(e)\n")
    env = clean_env(VK_DRIVER_FILES=str(tmp_path / "no-such-icd.json"), VK_ICD_FILENAMES=str(tmp_path / "none.json"),
                    HOME=str(tmp_path))
    p = subprocess.run([py, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert p.returncode == 0 and "no Vulkan device found" in p.stdout, p.stdout + p.stderr


def test_spirv_cache_checks_what_it_reads(tmp_path, monkeypatch):
    from dmlvk.runtime import compiler
    compile_uncached = compiler.compile_shader.__wrapped__
    monkeypatch.setenv("DMLVK_CACHE_DIR", str(tmp_path))
    blob = compile_uncached("copy")
    (entry,) = (tmp_path / "spirv").glob("copy-*.spv")
    entry.write_bytes(blob[:37])                         # truncated
    assert compile_uncached("copy") == blob and entry.read_bytes() == blob
    entry.write_bytes(b"\0" * len(blob))                 # not SPIR-V
    assert compile_uncached("copy") == blob
    monkeypatch.setenv("DMLVK_CACHE_DIR", "/proc/dmlvk-cannot-write-here")
    assert compile_uncached("copy") == blob              # no cache, still compiled
