#!/usr/bin/env bash
# The whole test suite on a GPU machine that reaches no registry, in one go: run ci/device-deps.sh
# on a machine that does, carry .device-deps over, then from the checkout's root
#     bash ci/gpu-suite.sh [pytest arguments]
# It builds dmlvk there (ci/device.sh) and runs the suite in one test process per CPU core
# (pytest-xdist; DMLVK_TEST_WORKERS to choose), each with its own Vulkan device on the first GPU,
# sharing the compiled shaders through dmlvk's cache. DMLVK_FROM_WHEEL=1 runs it on the carried
# x86_64 wheel instead of a build (ci/device.sh). The DirectML and Chromium tests skip (neither
# is there), and tests/test_package.py is left out: it installs numpy and onnx into fresh
# virtualenvs from a package index (CI runs it). Failures and errors are named in the summary (-rfE);
# under a time limit, write the output to a file and pass -v so that a cut run still names them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source ci/device.sh
python3 -m pip install -q --no-index --find-links .device-deps/build-wheels pytest-xdist hypothesis \
  nvidia-cuda-nvdisasm 2>&1 \
  | grep -v "^WARNING" || true
python3 -m pytest -q -rfE -p no:cacheprovider -n "${DMLVK_TEST_WORKERS:-$(nproc)}" \
  --ignore=tests/test_package.py tests/ "$@"
