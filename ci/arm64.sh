#!/usr/bin/env bash
# An arm64 Debian 12 root for cross-building and testing dmlvk's aarch64 wheel on an x86_64 machine,
# unpacked privately (a private apt configuration, apt-get download, dpkg-deb -x; the system's dpkg
# and apt state are untouched) into ${DMLVK_ARM64_HOME:-~/.cache/dmlvk-arm64}:
#   root/  python3.11, the Vulkan loader and headers (libvulkan1, libvulkan-dev: what the wheel
#          links against), Mesa's lavapipe (mesa-vulkan-drivers), and everything they depend on;
#   site/  numpy and onnx for that Python (manylinux aarch64 wheels from PyPI);
#   lvp_icd.json  lavapipe's ICD file with an absolute library path inside root/.
# Programs run with qemu-aarch64-static -L root (Debian's qemu-user-static, installed when missing).
# Prints the folder. Arguments: numpy and onnx versions to take (default: those of ci/setup.sh's venv).
set -euo pipefail
home=${DMLVK_ARM64_HOME:-$HOME/.cache/dmlvk-arm64}
numpy_version=${1:-}
onnx_version=${2:-}
mkdir -p "$home"

if ! command -v qemu-aarch64-static >/dev/null; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "arm64: installing qemu-user-static" >&2
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends \
      qemu-user-static >/dev/null
  else
    echo "arm64: qemu-aarch64-static is missing (as root: apt-get install -y qemu-user-static)" >&2
    exit 1
  fi
fi

if [ ! -f "$home/lvp_icd.json" ]; then
  echo "arm64: unpacking Debian 12's arm64 python3.11, Vulkan loader and lavapipe into $home/root" >&2
  apt_dir="$home/apt"
  rm -rf "$apt_dir" "$home/root"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$home/root"
  : > "$apt_dir/status"          # nothing counts as installed: the whole dependency closure is fetched
  echo 'deb [arch=arm64] http://deb.debian.org/debian bookworm main' > "$apt_dir/sources.list"
  cfg=(-o APT::Architecture=arm64 -o APT::Architectures::=arm64
       -o Dir::Etc::sourcelist="$apt_dir/sources.list" -o Dir::Etc::sourceparts=-
       -o Dir::State::Lists="$apt_dir/lists" -o Dir::State::status="$apt_dir/status"
       -o Dir::Cache="$apt_dir/cache" -o Dir::Cache::pkgcache="$apt_dir/pkgcache.bin"
       -o Dir::Cache::srcpkgcache="$apt_dir/srcpkgcache.bin" -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
  apt-get "${cfg[@]}" update -qq >/dev/null
  apt-get "${cfg[@]}" install -d -y -qq --no-install-recommends \
    python3.11 libvulkan1 libvulkan-dev mesa-vulkan-drivers >/dev/null
  for d in "$apt_dir"/cache/archives/*.deb; do dpkg-deb -x "$d" "$home/root"; done
  rm -rf "$apt_dir/cache/archives"
  "${DMLVK_PY:-python3}" "$(dirname "${BASH_SOURCE[0]}")/relocate_icd.py" "$home/root" lvp_icd.aarch64.json \
    usr/lib/aarch64-linux-gnu/libvulkan_lvp.so "$home/lvp_icd.json"
fi

want="numpy${numpy_version:+==$numpy_version} onnx${onnx_version:+==$onnx_version}"
if [ "$(cat "$home/site.stamp" 2>/dev/null)" != "$want" ]; then
  echo "arm64: $want for python3.11 aarch64 into $home/site" >&2
  rm -rf "$home/site"
  # shellcheck disable=SC2086
  "${DMLVK_PY:-python3}" -m pip install -q --target "$home/site" --only-binary=:all: --python-version 3.11 --implementation cp \
    --platform manylinux_2_28_aarch64 --platform manylinux_2_17_aarch64 --platform manylinux2014_aarch64 \
    $want 2>&1 | grep -v "^WARNING" >&2 || true
  [ -d "$home/site/numpy" ] && [ -d "$home/site/onnx" ]
  echo "$want" > "$home/site.stamp"
fi
echo "$home"
