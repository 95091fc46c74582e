"""GLSL -> SPIR-V through the glslangValidator CLI, cached on disk by content hash.

The GLSL sources ship inside the package (dmlvk/shaders; DMLVK_SHADER_DIR names another folder).
A warm cache needs no compiler: the key is the source, its includes, the defines, the target and
the compiler's identity (its path, size and modification time), so the compiler runs only on a
miss. Cached blobs are checked (whole words, the SPIR-V magic number) before use; a bad one is
compiled again. An unwritable cache directory only means no caching."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

SHADER_DIR = Path(os.environ.get("DMLVK_SHADER_DIR") or Path(__file__).resolve().parents[1] / "shaders")
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
    exe = shutil.which("glslangValidator")
    if exe is None:
        raise ShaderCompileError("glslangValidator not found; install Debian's glslang-tools (a shader "
                                 "that is not in dmlvk's cache has to be compiled)")
    st = os.stat(exe)
    return exe, f"{os.path.realpath(exe)}:{st.st_size}:{st.st_mtime_ns}"


def _valid(blob: bytes) -> bool:
    return len(blob) >= 20 and len(blob) % 4 == 0 and blob[:4] == _SPIRV_MAGIC


@lru_cache(maxsize=None)
def compile_shader(name: str, defines: tuple = ()) -> bytes:
    """SPIR-V of <SHADER_DIR>/<name>.comp with the given (NAME, value) defines."""
    src_path = SHADER_DIR / f"{name}.comp"
    try:
        source = src_path.read_bytes()
    except OSError as e:
        raise ShaderCompileError(f"shader source {src_path} cannot be read: {e}") from None
    includes = b"".join(f.read_bytes() for f in sorted(SHADER_DIR.glob("*.glsl")))
    compiler = shutil.which("glslangValidator")
    identity = _glslang()[1] if compiler else "no compiler"
    key = hashlib.sha256(b"\0".join([source, includes, repr(defines).encode(), identity.encode(),
                                     TARGET_ENV.encode()])).hexdigest()
    cached = cache_dir() / f"{name}-{key[:32]}.spv"
    try:
        blob = cached.read_bytes()
        if _valid(blob):
            return blob
    except OSError:
        pass
    spirv = _compile(name, src_path, defines)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_path = tempfile.mkstemp(dir=cached.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(spirv)
        os.replace(tmp_path, cached)   # atomic: concurrent compilers never see half a file
    except OSError:
        pass                           # no cache (read-only home, full disk): compile next time too
    return spirv


def _compile(name: str, src_path: Path, defines: tuple) -> bytes:
    exe, _ = _glslang()
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
