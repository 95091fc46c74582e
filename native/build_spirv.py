"""The package build's SPIR-V step (CMakeLists.txt runs it): every shader variant the kernels can ask
for, compiled by the given glslangValidator and checked by spirv-val, into OUT with manifest.json
(SHA-256 of each blob). A development tree without them compiles at run time instead.

    python native/build_spirv.py OUT --glslang PATH --spirv-val PATH"""
import argparse
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--glslang", required=True)
    ap.add_argument("--spirv-val", required=True)
    a = ap.parse_args()
    # The compiler module is loaded on its own: the build environment need not have numpy.
    spec = importlib.util.spec_from_file_location("_dmlvk_compiler", ROOT / "dmlvk" / "runtime" / "compiler.py")
    compiler = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compiler)
    compiler.SHADER_DIR = ROOT / "dmlvk" / "shaders"
    manifest = compiler.build_all(a.out, a.glslang, a.spirv_val)
    print(f"dmlvk: {len(manifest)} SPIR-V variants built into {a.out}")


if __name__ == "__main__":
    main()
