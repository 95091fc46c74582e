"""A wheel built from the checkout carries the shaders and runs every operator from another
directory, with an empty home (no SPIR-V cache)."""
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


def test_wheel_carries_the_shaders(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    shaders = {Path(n).name for n in names if n.startswith("dmlvk/shaders/")}
    expected = {p.name for p in (ROOT / "dmlvk" / "shaders").iterdir()}
    assert expected and shaders == expected
    assert "dmlvk/py.typed" in names


def test_installed_wheel_runs_every_operator_elsewhere(wheel, tmp_path):
    site, home, work = tmp_path / "site", tmp_path / "home", tmp_path / "work"
    for d in (home, work):
        d.mkdir()
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
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
for m in (4, 16):      # the direct and the implicit-GEMM convolution
    w = np.ones((m, 8, 3, 3), np.int8)
    y = dmlvk.quantized_linear_convolution(x, 0.1, np.uint8(0), w, 0.1, None, None, 1.0, np.uint8(0))
    assert y.shape == (2, m, 1, 2)
print("ok")
""" % str(site)
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(site)}
    env.pop("XDG_CACHE_HOME", None)
    env.pop("DMLVK_CACHE_DIR", None)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=work, env=env, timeout=600)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout + p.stderr[-3000:]
    assert list((home / ".cache" / "dmlvk" / "spirv").glob("*.spv"))      # compiled once, cached in the new home


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
