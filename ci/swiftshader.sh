#!/usr/bin/env bash
# Prints the path of SwiftShader's Vulkan ICD manifest (Google's CPU Vulkan implementation, shipped in
# Debian's chromium-common): the installed package's, else one unpacked from the package into
# ~/.cache/dmlvk-swiftshader (apt-get download + dpkg -x; the system is untouched).
set -euo pipefail
icd=/usr/lib/chromium/vk_swiftshader_icd.json
if [ -f "$icd" ] && [ -f "$(dirname "$icd")/libvk_swiftshader.so" ]; then
  echo "$icd"
  exit 0
fi
home=${DMLVK_SWIFTSHADER_HOME:-$HOME/.cache/dmlvk-swiftshader}
icd="$home/usr/lib/chromium/vk_swiftshader_icd.json"
if [ ! -f "$icd" ]; then
  mkdir -p "$home/deb"
  (cd "$home/deb" && apt-get download chromium-common >/dev/null)
  dpkg -x "$home"/deb/chromium-common_*.deb "$home"
fi
[ -f "$icd" ] || { echo "swiftshader: no SwiftShader ICD in chromium-common" >&2; exit 1; }
echo "$icd"
