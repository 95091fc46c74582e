"""A wheel built from the checkout carries the shaders and every variant's SPIR-V, and runs every
operator from another directory with an empty home and no shader compiler; the development tree's
SPIR-V cache checks what it reads."""
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out),
                        str(ROOT)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    (whl,) = out.glob("dmlvk-*.whl")
    return whl


def test_wheel_carries_the_shaders_and_every_variant_as_spirv(wheel):
    from dmlvk.runtime.compiler import VARIANTS, blob_name
    z = zipfile.ZipFile(wheel)
    names = z.namelist()
    shaders = {Path(n).name for n in names if n.startswith("dmlvk/shaders/")}
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
    from dmlvk.fuzz import _desc, generate
    from dmlvk.runtime.compiler import VARIANTS
    seen = set()
    for dev in (device, portable_device):
        for i in range(400):
            try:
                op = dev.create_operator(_desc(generate(np.random.default_rng([5, i]))))
            except (ValueError, TypeError):
                continue
            seen |= {(k.shader, tuple(k.defines)) for k in op.kernels}
    assert seen <= set(VARIANTS), seen - set(VARIANTS)
    assert len(seen) >= 4           # the 8/16-bit store variants: test_element_variants_agree


def test_installed_wheel_runs_every_operator_elsewhere(wheel, tmp_path):
    """A fresh virtualenv with numpy, the kp wheel ci/build-kp.sh kept, and dmlvk's wheel."""
    venv, home, work = tmp_path / "venv", tmp_path / "home", tmp_path / "work"
    for d in (home, work):
        d.mkdir()
    kp_wheels = sorted((Path(sys.executable).parent.parent / "wheels").glob("kp-*.whl"))
    assert kp_wheels, "no kp wheel beside this environment (ci/setup.sh keeps it in .venv/wheels)"
    base = getattr(sys, "_base_executable", sys.executable)
    p = subprocess.run([base, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    py = str(venv / "bin" / "python")
    import numpy
    for args in (["numpy==" + numpy.__version__], ["--no-deps", str(kp_wheels[-1]), str(wheel)]):
        p = subprocess.run([py, "-m", "pip", "install", "-q", *args], capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stdout + p.stderr
    site = venv / "lib"
    code = """
import numpy as np, dmlvk
assert dmlvk.__file__.startswith(%r), dmlvk.__file__
x = np.arange(2 * 8 * 3 * 4, dtype=np.uint8).reshape(2, 8, 3, 4)
for fn in (dmlvk.depth_to_space, dmlvk.space_to_depth):
    y = fn(x if fn is dmlvk.depth_to_space else np.zeros((1, 2, 4, 4), np.float32), 2)
dev = dmlvk.Device()
t = dmlvk.TensorDesc(dmlvk.DataType.FLOAT32, (1, 4, 2, 2)), dmlvk.TensorDesc(dmlvk.DataType.FLOAT32, (1, 1, 4, 4))
dev.create_operator(dmlvk.DepthToSpaceDesc(*t, 2)).execute([np.zeros(16, np.float32)], [np.zeros(16, np.float32)])
dev.create_operator(dmlvk.SpaceToDepthDesc(t[1], t[0], 2)).execute([np.zeros(16, np.float32)], [np.zeros(16, np.float32)])
out = dmlvk.TensorDesc(dmlvk.DataType.UINT8, (1, 1, 4, 4), (32, 32, 7, 2))     # no nesting order: per-element stores
dev.create_operator(dmlvk.DepthToSpace1Desc(dmlvk.TensorDesc(dmlvk.DataType.UINT8, (1, 4, 2, 2)), out, 2, 0)).execute(
    [np.zeros(16, np.uint8)], [np.zeros(out.total_bytes, np.uint8)])
y = dmlvk.depth_to_space(np.zeros((1, 4, 2, 32), np.uint8), 2)                  # the rows shader
for m in (4, 16):      # the direct and the implicit-GEMM convolution
    w = np.ones((m, 8, 3, 3), np.int8)
    y = dmlvk.quantized_linear_convolution(x, 0.1, np.uint8(0), w, 0.1, None, None, 1.0, np.uint8(0))
    assert y.shape == (2, m, 1, 2)
print("ok")
""" % str(site)
    # no shader compiler reachable: the package's prebuilt SPIR-V must do
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "XDG_CACHE_HOME", "DMLVK_CACHE_DIR",
                                                             "VIRTUAL_ENV", "DMLVK_SHADER_DIR")}
    env.update(HOME=str(home), PATH=str(tmp_path / "empty-path"))
    p = subprocess.run([py, "-c", code], capture_output=True, text=True, cwd=work, env=env, timeout=600)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout + p.stderr[-3000:]
    assert not (home / ".cache" / "dmlvk").exists()        # nothing compiled, nothing cached


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
