#!/usr/bin/env bash
# The main job: installs what is missing (ci/setup.sh), then writes the portability report against
# DirectML for the default Vulkan device (lavapipe when there is no GPU) under reports/.
# Arguments go to `python -m dmlvk` instead (e.g. `demo`, the quick form, or `bench`).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/ci/setup.sh"
cd "$root"
if [ $# -eq 0 ]; then set -- report; fi
exec "$DMLVK_PY" -m dmlvk "$@"
