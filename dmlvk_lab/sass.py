"""NVIDIA machine code (SASS) of dmlvk's kernels, from pipeline cache data that NVIDIA's Vulkan driver
returned (vkGetPipelineCacheData; dmlvk_lab/model_probe.py --representations, dmlvk_lab/shader_ablation.py
--machine-code), disassembled by nvdisasm (CUDA's, from the nvidia-cuda-nvdisasm wheel; it needs no
GPU). The driver gives no internal representations (VK_KHR_pipeline_executable_properties lists
none), but its cache data holds the code: a header of 0x20 bytes and 60 more, then zstd-compressed
data that begins "NVDANVVMNVuc", whose code section's size and offset are the 32-bit words at 0x4c
and 0x50, the instructions 8 bytes past that offset. This layout was read off driver 580.159.04's data;
anything else is refused with an error, not guessed at.

    python -m dmlvk_lab.sass FILE.cache|DIR ... [--nvdisasm PATH] [--arch SM90] [--out DIR] [--mix]

Each .cache file's disassembly goes to FILE.sass (or under --out); --mix prints each one's
instruction counts by opcode (the static mix: instructions in the binary, not executed ones).
nvdisasm is taken from --nvdisasm, else PATH, else the nvidia-cuda-nvdisasm wheel's (ci/setup.sh
installs it).
"""
import argparse
import collections
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

_ZSTD = b"\x28\xb5\x2f\xfd"
_MAGIC = b"NVDANVVMNVuc"


def code_of(blob: bytes) -> bytes:
    """The raw instructions in one pipeline's cache data."""
    at = blob.find(_ZSTD)
    if at < 0:
        raise ValueError("no zstd frame in the cache data: not NVIDIA's layout as this tool knows it")
    zstd = shutil.which("zstd")
    if zstd is None:
        raise RuntimeError("the zstd command is needed (apt install zstd)")
    raw = subprocess.run([zstd, "-d", "-q", "-c"], input=blob[at:], capture_output=True, check=True).stdout
    if not raw.startswith(_MAGIC):
        raise ValueError(f"the decompressed data begins {raw[:12]!r}, not {_MAGIC!r}")
    size, offset = struct.unpack_from("<II", raw, 0x4C)
    if offset + size > len(raw) or size < 24:
        raise ValueError(f"code section of {size} bytes at {offset} lies outside the {len(raw)} bytes")
    code = raw[offset + 8:offset + size]
    return code[:len(code) // 16 * 16]


def find_nvdisasm() -> str:
    """nvdisasm on PATH, else the one the nvidia-cuda-nvdisasm wheel installs (nvidia/*/bin), else None."""
    found = shutil.which("nvdisasm")
    if found:
        return found
    try:
        import nvidia
    except ImportError:
        return None
    for root in getattr(nvidia, "__path__", ()):
        for candidate in sorted(Path(root).glob("*/bin/nvdisasm")):
            return str(candidate)
    return None


def disassemble(code: bytes, nvdisasm: str, arch: str, scratch: Path) -> str:
    scratch.write_bytes(code)
    proc = subprocess.run([nvdisasm, "-b", arch, str(scratch)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"nvdisasm failed: {proc.stderr.strip()[:300]}")
    return "\n".join(x for x in proc.stdout.splitlines() if ".headerflags" not in x) + "\n"


def mix(sass: str) -> collections.Counter:
    """Instructions by opcode (with its modifiers), predicated ones included."""
    out = collections.Counter()
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if m:
            out[m.group(1)] += 1
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", help=".cache files, or folders holding them")
    ap.add_argument("--nvdisasm", default=find_nvdisasm(), help="nvdisasm's path (default: on PATH, or the wheel's)")
    ap.add_argument("--arch", default="SM90", help="the GPU's architecture as nvdisasm names it (H100/H200: SM90)")
    ap.add_argument("--out", default=None, help="folder for the .sass files (default: beside each .cache)")
    ap.add_argument("--mix", action="store_true", help="print each kernel's instruction counts by opcode")
    a = ap.parse_args()
    if not a.nvdisasm:
        ap.error("no nvdisasm: pip install nvidia-cuda-nvdisasm, or pass --nvdisasm")
    files = []
    for p in map(Path, a.paths):
        files += sorted(p.glob("*.cache")) if p.is_dir() else [p]
    if not files:
        ap.error("no .cache files given")
    for f in files:
        out = (Path(a.out) if a.out else f.parent) / (f.stem + ".sass")
        out.parent.mkdir(parents=True, exist_ok=True)
        try:
            sass = disassemble(code_of(f.read_bytes()), a.nvdisasm, a.arch, out.with_suffix(".bin"))
        except (ValueError, RuntimeError, subprocess.CalledProcessError) as e:
            print(f"{f}: {e}", file=sys.stderr)
            return 1
        finally:
            out.with_suffix(".bin").unlink(missing_ok=True)
        out.write_text(sass)
        counts = mix(sass)
        print(f"{f.name}: {sum(counts.values())} instructions -> {out}")
        if a.mix:
            print("  " + ", ".join(f"{op} {n}" for op, n in counts.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
