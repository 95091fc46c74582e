"""GLSL -> SPIR-V through the glslangValidator CLI, cached on disk by content hash."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

SHADER_DIR = Path(os.environ.get("DMLVK_SHADER_DIR", Path(__file__).resolve().parents[2] / "shaders"))
TARGET_ENV = "vulkan1.1"


class ShaderCompileError(RuntimeError):
    pass


def cache_dir() -> Path:
    base = os.environ.get("DMLVK_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dmlvk")
    return Path(base) / "spirv"


@lru_cache(maxsize=1)
def _glslang() -> tuple:
    exe = shutil.which("glslangValidator")
    if exe is None:
        raise ShaderCompileError("glslangValidator not found; install Debian's glslang-tools")
    ver = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    return exe, ver


@lru_cache(maxsize=None)
def compile_shader(name: str, defines: tuple = ()) -> bytes:
    """SPIR-V of shaders/<name>.comp with the given (NAME, value) defines."""
    src_path = SHADER_DIR / f"{name}.comp"
    source = src_path.read_bytes()
    exe, version = _glslang()
    includes = b"".join(f.read_bytes() for f in sorted(SHADER_DIR.glob("*.glsl")))
    key = hashlib.sha256(b"\0".join([source, includes, repr(defines).encode(), version.encode(),
                                     TARGET_ENV.encode()])).hexdigest()
    cached = cache_dir() / f"{name}-{key[:32]}.spv"
    if cached.exists():
        return cached.read_bytes()
    cached.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dmlvk-glsl-") as tmp:
        out = Path(tmp) / "out.spv"
        args = [exe, "-V", "--target-env", TARGET_ENV, "-S", "comp", "-I" + str(SHADER_DIR), "-o", str(out)]
        args += [f"-D{k}={v}" for k, v in defines]
        proc = subprocess.run(args + [str(src_path)], capture_output=True, text=True)
        if proc.returncode != 0 or not out.exists():
            msg = (proc.stdout + proc.stderr).strip()
            raise ShaderCompileError(f"compiling shader '{name}' {dict(defines)} failed:\n{msg}")
        spirv = out.read_bytes()
    fd, tmp_path = tempfile.mkstemp(dir=cached.parent, prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        f.write(spirv)
    os.replace(tmp_path, cached)   # atomic: concurrent compilers never see half a file
    return spirv
