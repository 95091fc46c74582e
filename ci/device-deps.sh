#!/usr/bin/env bash
# Run in the checkout's root on a machine that reaches the package registries, before a GPU run:
# ../shared/device/fetch-deps.sh's packages (the Vulkan loader and headers, glslang) into the
# git-ignored .device-deps/, plus the wheels dmlvk's build needs on the GPU machine's Python 3.12
# (which reaches no registry): scikit-build-core, cmeel-fmt and what they need, and the test suite's
# pytest-xdist and hypothesis (ci/gpu-suite.sh), the model benchmark's WebGPU peer
# (onnxruntime-ep-webgpu, installed on the GPU machine by ci/device.sh), and the x86_64 wheel of
# this checkout as CI builds it (ci/wheels.sh; DMLVK_FROM_WHEEL=1 runs the GPU suite on it).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bash "$root/../shared/device/fetch-deps.sh" .device-deps
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .device-deps/build-wheels \
  "scikit-build-core>=0.10" cmeel-fmt==12.2.0 ninja pytest-xdist hypothesis 2>&1 \
  | grep -v "^WARNING" || true
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 -d .device-deps/peer-wheels onnxruntime-ep-webgpu 2>&1 | grep -v "^WARNING" || true
DMLVK_WHEEL_ARCHS=x86_64 bash ci/wheels.sh "$root/dist" > /dev/null
rm -rf .device-deps/dmlvk-wheel && mkdir -p .device-deps/dmlvk-wheel
cp "$root"/dist/dmlvk-*-py3-none-manylinux_*_x86_64.whl .device-deps/dmlvk-wheel/
du -sh .device-deps
