#!/usr/bin/env bash
# The test suite: installs what is missing (ci/setup.sh, ci/directml.sh), then runs pytest. Without a choice of
# driver in VK_DRIVER_FILES it tests on lavapipe, Mesa's CPU Vulkan driver.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/ci/setup.sh"
# The DirectML oracle (tests/test_directml.py): offline its tests skip and say why; in CI they must run.
if [ -z "${DMLVK_NO_DIRECTML:-}" ] && ! bash "$root/ci/directml.sh" "$DMLVK_PY" >/dev/null; then
  if [ "${CI:-}" = true ]; then echo "test: the DirectML oracle could not be set up" >&2; exit 1; fi
  echo "test: the DirectML oracle could not be set up; its tests will skip" >&2
fi
lvp=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$lvp" ]; then export VK_DRIVER_FILES=$lvp; fi
cd "$root"
exec "$DMLVK_PY" -m pytest -q -p no:cacheprovider "$@"
