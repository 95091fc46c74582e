#!/usr/bin/env bash
# The test suite: installs what is missing (ci/setup.sh), then runs pytest. Without a choice of
# driver in VK_DRIVER_FILES it tests on lavapipe, Mesa's CPU Vulkan driver.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/ci/setup.sh"
lvp=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$lvp" ]; then export VK_DRIVER_FILES=$lvp; fi
cd "$root"
exec "$DMLVK_PY" -m pytest -q -p no:cacheprovider "$@"
