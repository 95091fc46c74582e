#!/usr/bin/env bash
# Builds Kompute's Python module (kp 0.9.0) offline from its source distribution with dmlvk's
# patches (third_party/kompute/*.patch, applied in name order), keeps the wheel and installs it into
# the Python given as $1. The system provides the Vulkan headers, fmt and pybind11 (no downloads during the build);
# Kompute's own debug layers are compiled out (enable validation with VK_INSTANCE_LAYERS instead).
# About 80 s on 2 cores.
set -euo pipefail
py=${1:?usage: build-kp.sh PYTHON}
case "$py" in */*) py="$(cd "$(dirname "$py")" && pwd)/$(basename "$py")" ;; esac  # keeps a venv's link
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$py" -m pip download -q --no-deps --no-binary :all: -d "$work" kp==0.9.0
tar -xzf "$work"/kp-0.9.0.tar.gz -C "$work"
cd "$work"/kp-0.9.0
for p in "$root"/third_party/kompute/*.patch; do
  patch -s -p1 < "$p"
done
export CMAKE_PREFIX_PATH
CMAKE_PREFIX_PATH=$("$py" -m pybind11 --cmakedir)
export KOMPUTE_OPT_USE_BUILT_IN_VULKAN_HEADER=OFF KOMPUTE_OPT_USE_BUILT_IN_FMT=OFF \
       KOMPUTE_OPT_USE_BUILT_IN_PYBIND11=OFF KOMPUTE_OPT_DISABLE_VULKAN_VERSION_CHECK=ON \
       KOMPUTE_OPT_DISABLE_VK_DEBUG_LAYERS=ON KOMPUTE_OPT_INSTALL=OFF CXXFLAGS=-Wno-error
# The wheel is kept (default: wheels/ beside the Python's bin/, .venv/wheels for ci/setup.sh) so
# that other environments of the same Python version can install it without building.
# --no-deps: kp's metadata pins numpy<2, yet built against a current pybind11 it works with numpy 2.
# --no-cache-dir: a wheel cached from another patch set must never be reused.
wheels=${KP_WHEEL_DIR:-$(dirname "$(dirname "$py")")/wheels}
mkdir -p "$wheels"
rm -f "$wheels"/kp-*.whl
"$py" -m pip wheel -q --no-build-isolation --no-deps --no-cache-dir -w "$wheels" .
"$py" -m pip install -q --no-deps --force-reinstall "$wheels"/kp-*.whl
echo "kp: $(ls "$wheels"/kp-*.whl)"
