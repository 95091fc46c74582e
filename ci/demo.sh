#!/usr/bin/env bash
# The main job: installs what is missing (ci/setup.sh), then runs DirectML's documented examples
# on the default Vulkan device (lavapipe when there is no GPU). Arguments go to `python -m dmlvk`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/ci/setup.sh"
cd "$root"
if [ $# -eq 0 ]; then set -- demo; fi
exec "$DMLVK_PY" -m dmlvk "$@"
