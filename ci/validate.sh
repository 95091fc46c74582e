#!/usr/bin/env bash
# The test suite (ci/test.sh) once more under the Khronos validation layer with synchronization
# validation, enabled for this run only through the standard loader variables, on lavapipe (or the
# driver VK_DRIVER_FILES names): the tests that drive the device (not the host-only ones, -m "not
# host"), in one process. Fails on any message the layer prints (it logs to stdout, so pytest runs
# with -s, which pytest-xdist's workers would not pass on) as well as on a failing test.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/share/vulkan/icd.d/lvp_icd.x86_64.json}
export VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation
export VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT
status=0
# The DirectML comparison ran in ci/test.sh; it drives DirectML in Wine, not dmlvk's Vulkan paths anew.
DMLVK_NO_DIRECTML=1 DMLVK_TEST_WORKERS=0 bash "$root/ci/test.sh" -s -m "not directml and not host" "$@" 2>&1 \
  | tee "$log" || status=$?
if grep -E -q "Validation (Error|Warning)|SYNC-HAZARD|VUID-" "$log"; then
  echo "validate: the validation layer reported problems:" >&2
  grep -E -m 20 "Validation (Error|Warning)|SYNC-HAZARD|VUID-" "$log" >&2
  exit 1
fi
echo "validate: the validation layer reported nothing"
exit $status
