#!/usr/bin/env bash
# The main job: installs what is missing (ci/setup.sh), then writes the portability report against
# DirectML for every Vulkan device present (lavapipe when there is no GPU) and SwiftShader (ci/swiftshader.sh)
# under reports/: a page per device and one page over all of them (report-all.*).
# Arguments go to `python -m dmlvk_lab` instead (e.g. `demo`, the quick form, or `bench`).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/ci/setup.sh"
cd "$root"
if [ $# -eq 0 ]; then
  # every implementation at hand: the system's drivers, and SwiftShader beside them
  if [ -z "${VK_DRIVER_FILES:-}" ] && swiftshader=$(bash "$root/ci/swiftshader.sh"); then
    export VK_ADD_DRIVER_FILES=$swiftshader${VK_ADD_DRIVER_FILES:+:$VK_ADD_DRIVER_FILES}
  fi
  set -- report --device all
fi
exec "$DMLVK_PY" -m dmlvk_lab "$@"
