#!/usr/bin/env bash
# The main job: installs what is missing (ci/setup.sh), then writes the portability report against
# DirectML for every Vulkan device present (lavapipe when there is no GPU) under reports/: a page per
# device and one page over all of them (report-all.*).
# Arguments go to `python -m dmlvk_lab` instead (e.g. `demo`, the quick form, or `bench`).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/ci/setup.sh"
cd "$root"
if [ $# -eq 0 ]; then set -- report --device all; fi
exec "$DMLVK_PY" -m dmlvk_lab "$@"
