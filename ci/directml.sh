#!/usr/bin/env bash
# Idempotent set-up of the DirectML oracle: the real DirectML.dll run under Wine (whose d3d12 is
# vkd3d) on Mesa's lavapipe, under Xvfb. Installs Debian's wine, wine64, mingw-w64 and xvfb;
# unpacks Mesa 25.0.7's lavapipe from bookworm-backports into a private folder (the system's apt
# sources and its Mesa are not touched: Debian 12's Mesa 22.3 lacks VK_EXT_descriptor_indexing,
# without which vkd3d runs DirectML's shaders with nothing bound); fetches DirectML.dll 1.15.4 from
# the pinned onnxruntime-directml wheel and checks its SHA-256; builds dmlvk_lab/directml/dml_oracle.exe.
# Everything goes to $DMLVK_DIRECTML_HOME (default ~/.cache/dmlvk-directml), outside the repository:
# DirectML.dll is Microsoft's and is never committed or shipped. A second run checks and returns.
#   bash ci/directml.sh [PYTHON]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
py=${1:-python3}
home=${DMLVK_DIRECTML_HOME:-$HOME/.cache/dmlvk-directml}
mkdir -p "$home"
wheel=onnxruntime-directml==1.24.4
dll_sha256=b73972115320e906a49602f2027a3266622881b0d325ba685e0f165a9482a8d7

apt_pkgs=(wine wine64 libwine gcc-mingw-w64-x86-64 mingw-w64-x86-64-dev xvfb xauth)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "directml: missing system packages: ${missing[*]} (install them as root)" >&2
    exit 1
  fi
  echo "directml: installing ${missing[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# Mesa 25.0.7 lavapipe from bookworm-backports, through a private apt configuration
mesa="$home/mesa"
if [ ! -f "$mesa/lvp_icd.json" ]; then
  echo "directml: unpacking Mesa 25.0.7 lavapipe from bookworm-backports into $mesa" >&2
  rm -rf "$mesa"
  mkdir -p "$mesa/lists/partial" "$mesa/cache/archives/partial" "$mesa/debs" "$mesa/root"
  echo 'deb http://deb.debian.org/debian bookworm-backports main' > "$mesa/sources.list"
  aptcfg=(-o Dir::Etc::sourcelist="$mesa/sources.list" -o Dir::Etc::sourceparts=- -o Dir::State::Lists="$mesa/lists"
          -o Dir::Cache="$mesa/cache" -o Dir::Cache::pkgcache="$mesa/pkgcache.bin"
          -o Dir::Cache::srcpkgcache="$mesa/srcpkgcache.bin")
  apt-get "${aptcfg[@]}" update -qq >/dev/null
  (cd "$mesa/debs" && apt-get "${aptcfg[@]}" download -qq mesa-vulkan-drivers=25.0.7-2~bpo12+1 \
     libdrm2/bookworm-backports libdrm-amdgpu1/bookworm-backports >/dev/null)
  for d in "$mesa"/debs/*.deb; do dpkg-deb -x "$d" "$mesa/root"; done
  "$py" "$root/ci/relocate_icd.py" "$mesa/root" lvp_icd.json usr/lib/x86_64-linux-gnu/libvulkan_lvp.so \
    "$mesa/lvp_icd.json"
fi

# DirectML.dll from the pinned Windows wheel
if [ ! -f "$home/DirectML.dll" ] || ! echo "$dll_sha256  $home/DirectML.dll" | sha256sum -c --status; then
  echo "directml: fetching DirectML.dll from $wheel" >&2
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  "$py" -m pip download -q --no-deps --only-binary=:all: --platform win_amd64 --python-version 3.12 \
    --implementation cp -d "$tmp" "$wheel"
  "$py" - "$tmp" "$home/DirectML.dll.tmp" <<'PY'
import glob, sys, zipfile
(whl,) = glob.glob(sys.argv[1] + "/onnxruntime_directml-*.whl")
open(sys.argv[2], "wb").write(zipfile.ZipFile(whl).read("onnxruntime/capi/DirectML.dll"))
PY
  if ! echo "$dll_sha256  $home/DirectML.dll.tmp" | sha256sum -c --status; then
    echo "directml: DirectML.dll from $wheel does not have the pinned SHA-256 $dll_sha256" >&2
    exit 1
  fi
  mv "$home/DirectML.dll.tmp" "$home/DirectML.dll"
fi

# The oracle program, rebuilt when its source changes
src="$root/dmlvk_lab/directml"
want=$(cat "$src/dml_oracle.c" "$src/dml_api.h" | sha256sum | cut -c1-16)
if [ "$(cat "$home/dml_oracle.stamp" 2>/dev/null)" != "$want" ] || [ ! -f "$home/dml_oracle.exe" ]; then
  x86_64-w64-mingw32-gcc -O1 -Wall -Wextra -Wno-unused-parameter -Werror -o "$home/dml_oracle.exe" \
    "$src/dml_oracle.c" -ld3d12
  echo "$want" > "$home/dml_oracle.stamp"
fi

# A Wine prefix of its own, made once (wineboot takes ~20 s)
if [ ! -f "$home/prefix/system.reg" ]; then
  echo "directml: creating the Wine prefix" >&2
  WINEPREFIX="$home/prefix" WINEARCH=win64 WINEDLLOVERRIDES="mscoree,mshtml=" WINEDEBUG=-all \
    wineboot -i >/dev/null 2>&1 || true
  WINEPREFIX="$home/prefix" wineserver -w || true
fi
echo "$home"
