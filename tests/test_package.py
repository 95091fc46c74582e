"""dmlvk's release files, as ci/wheels.sh builds them: the sdist, and from it one py3-none wheel
per architecture (x86_64, aarch64) cross-built with PyPI's ziglang for glibc 2.28 and checked by
auditwheel. The x86_64 wheel is installed into a fresh virtualenv with numpy alone and run from
elsewhere with no compiler and an empty home; the aarch64 wheel runs under qemu-aarch64 with Debian's
arm64 Python and lavapipe (ci/arm64.sh). The development tree's SPIR-V cache checks what it reads.

The wheels come from $DMLVK_WHEEL_DIR when set (ci/test.sh builds them once for every leg), else
ci/wheels.sh builds them here."""
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

pytestmark = pytest.mark.host      # the release files

ROOT = Path(__file__).resolve().parents[1]
ARCHS = ("x86_64", "aarch64")
# What the native library may ask of the system: glibc's libraries (2.28 still splits libpthread
# and libdl out of libc) and the Vulkan loader.
GLIBC = {"x86_64": {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "ld-linux-x86-64.so.2"},
         "aarch64": {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "ld-linux-aarch64.so.1"}}


def clean_env(**extra) -> dict:
    """The environment of a user's shell: nothing of this checkout or this virtualenv in it."""
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "XDG_CACHE_HOME", "DMLVK_CACHE_DIR", "DMLVK_SHADER_DIR",
            "PIP_TARGET", "PIP_PREFIX")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(extra)
    return env


def version() -> str:
    import tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The folder holding the sdist and both wheels."""
    given = os.environ.get("DMLVK_WHEEL_DIR")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("dist")
    p = subprocess.run(["bash", str(ROOT / "ci" / "wheels.sh"), str(out)], capture_output=True, text=True,
                       timeout=1800)
    assert p.returncode == 0, p.stdout + p.stderr[-5000:]
    return out


@pytest.fixture(scope="module")
def wheels(dist) -> dict:
    found = {arch: sorted(dist.glob(f"dmlvk-{version()}-py3-none-*{arch}.whl")) for arch in ARCHS}
    assert all(len(w) == 1 for w in found.values()), found
    return {arch: w[0] for arch, w in found.items()}


@pytest.fixture(scope="module")
def wheel(wheels) -> Path:
    return wheels["x86_64"]


@pytest.mark.parametrize("arch", ARCHS)
def test_wheel_is_manylinux_2_28_or_older_and_links_only_glibc_and_the_vulkan_loader(wheels, arch, tmp_path):
    whl = wheels[arch]
    tags = whl.name[:-len(".whl")].split("-")[-1].split(".")
    assert whl.name.startswith(f"dmlvk-{version()}-py3-none-manylinux_"), whl.name
    assert all(re.fullmatch(rf"manylinux_2_(\d+)_{arch}", t) and int(t.split("_")[2]) <= 28 for t in tags), tags
    z = zipfile.ZipFile(whl)
    assert [n for n in z.namelist() if n.endswith(".so")] == ["dmlvk/libdmlvk_kompute.so"]
    assert not [n for n in z.namelist() if ".libs/" in n]          # nothing grafted: no bundled library
    wheel_meta = z.read(f"dmlvk-{version()}.dist-info/WHEEL").decode()
    assert "Root-Is-Purelib: false" in wheel_meta
    assert {line.split(": ")[1] for line in wheel_meta.splitlines() if line.startswith("Tag: ")} == {
        f"py3-none-{t}" for t in tags}
    # The ELF read with pyelftools (auditwheel's own reader), for either architecture.
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerNeedSection
    elf = ELFFile(io.BytesIO(z.read("dmlvk/libdmlvk_kompute.so")))
    assert elf["e_machine"] == {"x86_64": "EM_X86_64", "aarch64": "EM_AARCH64"}[arch]
    (dynamic,) = [s for s in elf.iter_sections() if isinstance(s, DynamicSection)]
    tags = [t for t in dynamic.iter_tags()]
    needed = {t.needed for t in tags if t.entry.d_tag == "DT_NEEDED"}
    assert "libvulkan.so.1" in needed and needed - {"libvulkan.so.1"} <= GLIBC[arch], needed
    assert not [t for t in tags if t.entry.d_tag in ("DT_RPATH", "DT_RUNPATH")]
    # glibc symbol versions no newer than 2.28, and only dmlvk's C functions exported (no C++ runtime)
    (verneed,) = [s for s in elf.iter_sections() if isinstance(s, GNUVerNeedSection)]
    versions = {tuple(int(p) for p in aux.name.split("_")[1].split("."))
                for _, auxes in verneed.iter_versions() for aux in auxes if aux.name.startswith("GLIBC_")}
    assert versions and max(versions) <= (2, 28), max(versions)
    exported = {sym.name for sym in elf.get_section_by_name(".dynsym").iter_symbols()
                if sym["st_shndx"] != "SHN_UNDEF" and sym["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK")
                and sym["st_info"]["type"] in ("STT_FUNC", "STT_OBJECT")}
    assert exported and all(name.startswith("dmlvk_") for name in exported), sorted(exported)[:20]
    # auditwheel's own reading of the library (ci/wheels.sh): glibc symbol versions no newer than
    # 2.28, and where it lists libraries from outside glibc, the Vulkan loader alone
    show = Path(str(whl) + ".show").read_text()
    seen = {tuple(int(p) for p in v.split(".")) for v in re.findall(r"'GLIBC_([\d.]+)'", show)}
    assert seen and max(seen) <= (2, 28), show
    external = re.search(r"required by the wheel:\s*(\{.*?\})", show, re.S)
    assert not external or set(json.loads(external.group(1))) == {"libvulkan.so.1"}, show


@pytest.mark.parametrize("arch", ARCHS)
def test_wheel_carries_the_shaders_and_every_variant_as_spirv(wheels, arch):
    from dmlvk.runtime.compiler import VARIANTS, blob_name
    z = zipfile.ZipFile(wheels[arch])
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


def test_metadata_a_package_index_accepts(wheels, dist):
    """License, classifiers, a project URL, Requires-Python, the README as the description; the
    same in the sdist (whose files the wheels were built from) and in each wheel."""
    with tarfile.open(dist / f"dmlvk-{version()}.tar.gz") as t:
        names = set(t.getnames())
        meta_sdist = t.extractfile(f"dmlvk-{version()}/PKG-INFO").read().decode()
    top = f"dmlvk-{version()}/"
    for needed in ("CMakeLists.txt", "pyproject.toml", "LICENSE", "licenses/Kompute-LICENSE", "README.md",
                   "native/kompute_capi.cpp",
                   "native/exports.map", "third_party/kompute/kp-0.9.0.tar.gz", "ci/zig-toolchain.cmake",
                   "dmlvk/shaders/copy.comp", "native/build_spirv.py"):
        assert top + needed in names, needed
    assert not [n for n in names if "/build/" in n or "/.venv/" in n or n.endswith(".so")]
    for arch in ARCHS:
        z = zipfile.ZipFile(wheels[arch])
        meta = z.read(f"dmlvk-{version()}.dist-info/METADATA").decode()
        assert f"dmlvk-{version()}.dist-info/licenses/licenses/Kompute-LICENSE" in z.namelist()
        for text in (meta, meta_sdist):
            m = Parser().parsestr(text)
            assert m["Name"] == "dmlvk" and m["Version"] == version()
            assert m["Requires-Python"] == ">=3.10"
            assert m["License-Expression"].startswith("Apache-2.0"), dict(m)
            assert {"LICENSE", "licenses/Kompute-LICENSE", "licenses/README.md"} <= set(m.get_all("License-File"))
            classifiers = m.get_all("Classifier")
            assert "Operating System :: POSIX :: Linux" in classifiers
            assert {f"Programming Language :: Python :: 3.{v}" for v in range(10, 15)} <= set(classifiers)
            urls = dict(u.split(", ", 1) for u in m.get_all("Project-URL"))
            assert urls.get("Homepage", "").startswith("https://"), urls
            assert m["Description-Content-Type"] == "text/markdown" and "dmlvk" in m.get_payload()
            assert "numpy>=1.24" in m.get_all("Requires-Dist")


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
from dmlvk import reference
x = np.random.default_rng(1).integers(0, 256, (2, 8, 3, 4), dtype=np.uint8)
for order in ("DCR", "CRD"):
    assert np.array_equal(dmlvk.depth_to_space(x, 2, order), reference.depth_to_space(x, 2, order))
    assert np.array_equal(dmlvk.space_to_depth(x[:, :, :2], 2, order), reference.space_to_depth(x[:, :, :2], 2, order))
w = np.random.default_rng(2).integers(-128, 128, (16, 8, 3, 3), dtype=np.int8)
y = dmlvk.quantized_linear_convolution(x, 0.05, np.uint8(3), w, 0.01, None, None, 0.2, np.uint8(7))
assert np.array_equal(y, reference.quantized_linear_convolution(x, 0.05, 3, w, 0.01, None, None, 0.2, 7, np.uint8))
from dmlvk.runtime import kompute       # the native library: a C interface, no CPython extension
assert kompute.load().dmlvk_kp_abi_version() == kompute.ABI_VERSION
assert "kp" not in sys.modules and not [m for m in sys.modules if m.startswith("dmlvk") and m.endswith("_kp")]
print("ok")
"""


RUN_MODEL = """
import numpy as np, dmlvk.onnx
s = dmlvk.onnx.InferenceSession(%(model)r)
x = np.random.default_rng(3).integers(0, 256, (1, 8, 6, 5), dtype=np.uint8)
(y,) = s.run(None, {"x": x})
print(y.reshape(-1).tolist())
"""


def quantized_model(tmp_path):
    """A QOperator model (QLinearConv, uint8 x int8 with per-channel filter scales, then
    DepthToSpace CRD) and its output on RUN_MODEL's input by dmlvk.reference."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from dmlvk import reference
    rng = np.random.default_rng(4)
    w = rng.integers(-128, 128, (8, 8, 3, 3), dtype=np.int8)
    w_scale = rng.uniform(0.002, 0.01, 8).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in (
        (np.float32(0.05), "x_scale"), (np.uint8(3), "x_zp"), (w, "w"), (w_scale, "w_scale"),
        (np.zeros(8, np.int8), "w_zp"), (np.float32(0.1), "y_scale"), (np.uint8(128), "y_zp"))]
    nodes = [helper.make_node("QLinearConv", ["x", "x_scale", "x_zp", "w", "w_scale", "w_zp", "y_scale", "y_zp"],
                              ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("DepthToSpace", ["c"], ["y"], blocksize=2, mode="CRD")]
    graph = helper.make_graph(nodes, "qconv_d2s", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 8, 6, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 2, 12, 10])], inits)
    path = tmp_path / "qconv_d2s.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    x = np.random.default_rng(3).integers(0, 256, (1, 8, 6, 5), dtype=np.uint8)
    c = reference.quantized_linear_convolution(x, np.float32(0.05), 3, w, w_scale, 0, None, np.float32(0.1), 128,
                                               np.uint8, start_padding=(1, 1), end_padding=(1, 1))
    return path, reference.depth_to_space(c, 2, "CRD")


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
    import onnx
    home, work = tmp_path / "home", tmp_path / "work"
    for d in (home, work):
        d.mkdir()
    venv, py = _venv(tmp_path, "venv")
    _pip(py, "install", "-q", "--only-binary=:all:", "numpy==" + numpy.__version__, cwd=work)
    _pip(py, "install", "-q", "--no-index", "--no-deps", "--only-binary=:all:", str(wheel), cwd=work)   # no build
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

    # An ONNX model once onnx is installed beside it.
    _pip(py, "install", "-q", "onnx==" + onnx.__version__, cwd=work)
    model, want = quantized_model(tmp_path)
    p = subprocess.run([py, "-c", RUN_MODEL % {"model": str(model)}], capture_output=True, text=True, cwd=work,
                       env=run_env, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr[-3000:]
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


def test_aarch64_wheel_runs_under_qemu(wheels, tmp_path):
    """The aarch64 wheel in Debian 12's arm64 Python 3.11 under qemu-aarch64, with arm64 lavapipe
    and PyPI's aarch64 numpy and onnx (ci/arm64.sh): every operator against dmlvk.reference,
    `python -m dmlvk devices`, and the quantized ONNX model."""
    p = subprocess.run(["bash", str(ROOT / "ci" / "arm64.sh")], capture_output=True, text=True, timeout=1200)
    if p.returncode != 0 and os.environ.get("CI") != "true":
        pytest.skip(f"no arm64 root for qemu here (ci/arm64.sh): {p.stderr.strip()[-300:]}")
    assert p.returncode == 0, p.stderr[-3000:]
    arm = Path(p.stdout.strip().splitlines()[-1])
    site, home = tmp_path / "site", tmp_path / "home"
    home.mkdir()
    zipfile.ZipFile(wheels["aarch64"]).extractall(site)      # what pip does for a wheel of another machine
    qemu = [shutil.which("qemu-aarch64-static"), "-L", str(arm / "root"), str(arm / "root/usr/bin/python3.11")]
    env = clean_env(HOME=str(home), PATH=str(tmp_path / "empty-path"), PYTHONPATH=f"{site}:{arm / 'site'}",
                    PYTHONNOUSERSITE="1", VK_DRIVER_FILES=str(arm / "lvp_icd.json"))
    for name in ("VK_ICD_FILENAMES", "VK_ADD_DRIVER_FILES", "VK_INSTANCE_LAYERS", "VK_LAYER_ENABLES"):
        env.pop(name, None)          # the arm64 root has lavapipe alone, and no validation layer

    def run(*args):
        p = subprocess.run(qemu + list(args), capture_output=True, text=True, cwd=tmp_path, env=env, timeout=900)
        assert p.returncode == 0, p.stdout + p.stderr[-3000:]
        return p.stdout

    out = run("-c", "import platform; print(platform.machine())\n" + RUN_EVERYTHING % {"site": str(site)})
    assert out.split() == ["aarch64", "ok"], out
    out = run("-m", "dmlvk", "devices")
    assert "llvmpipe" in out and "DirectML feature level" in out, out
    model, want = quantized_model(tmp_path)
    out = run("-c", RUN_MODEL % {"model": str(model)})
    assert out.split("\n")[-2] == str(want.reshape(-1).tolist())
