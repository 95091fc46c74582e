#!/usr/bin/env bash
# The test suite once more under the Khronos validation layer with synchronization validation,
# enabled for this run only through the standard loader variables. Fails on any message the layer
# prints (it logs to stdout, so pytest runs with -s) as well as on a failing test.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/ci/setup.sh"
lvp=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$lvp" ]; then export VK_DRIVER_FILES=$lvp; fi
cd "$root"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
export VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation
export VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT
status=0
"$DMLVK_PY" -m pytest -q -s -p no:cacheprovider "$@" 2>&1 | tee "$log" || status=$?
if grep -E -q "Validation (Error|Warning)|SYNC-HAZARD|VUID-" "$log"; then
  echo "validate: the validation layer reported problems:" >&2
  grep -E -m 20 "Validation (Error|Warning)|SYNC-HAZARD|VUID-" "$log" >&2
  exit 1
fi
echo "validate: the validation layer reported nothing"
exit $status
