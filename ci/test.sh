#!/usr/bin/env bash
# The test suite: installs what is missing (ci/setup.sh, ci/directml.sh), then runs pytest on every
# Vulkan implementation at hand, one after the other, each leg running what can differ on it:
#   1. lavapipe (Mesa's CPU driver; subgroups of 8 on AVX2 machines): the whole suite;
#   2. SwiftShader (Chromium's CPU driver, from Debian's chromium; subgroups of 4, 256 invocations a
#      workgroup, no 8/16-bit storage or int8 arithmetic): the tests whose kernels, limits or results
#      can depend on the implementation (-m "not host": not the host-only, validation-only,
#      packaging, documentation and benchmark-harness modules, whose outcome is the same everywhere;
#      nor DirectML's, which ran in the lavapipe leg, DirectML itself on its own lavapipe);
#   3. lavapipe with 128-bit vectors (LP_NATIVE_VECTOR_WIDTH=128: subgroups of 4): the tests that
#      force and check every kernel variant and each device-limit guard at its boundary (the
#      subgroup-size matrix; 16 needs AVX-512, below).
# First the release files (ci/wheels.sh: the sdist, the x86_64 and aarch64 wheels) into dist/, once:
# tests/test_package.py installs and runs them (the aarch64 one under qemu, in the lavapipe leg).
# Each leg runs in one test process per CPU core (pytest-xdist; DMLVK_TEST_WORKERS to choose, 0 for
# one process; the DirectML oracle runs one Wine batch at a time across them).
# With a driver chosen in VK_DRIVER_FILES only that one runs (once). Arguments go to every pytest run.
# DMLVK_TEST_DEVICES narrows the legs: a comma-separated list of lavapipe, swiftshader, lavapipe128
# (and lavapipe512, which runs where the CPU has AVX-512).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/ci/setup.sh"
# The DirectML oracle (tests/test_directml.py): offline its tests skip and say why; in CI they must run.
if [ -z "${DMLVK_NO_DIRECTML:-}" ] && ! bash "$root/ci/directml.sh" "$DMLVK_PY" >/dev/null; then
  if [ "${CI:-}" = true ]; then echo "test: the DirectML oracle could not be set up" >&2; exit 1; fi
  echo "test: the DirectML oracle could not be set up; its tests will skip" >&2
fi
cd "$root"
if [ -z "${DMLVK_WHEEL_DIR:-}" ]; then
  echo "test: building the sdist and the wheels ($(date -u +%H:%M:%S))" >&2
  bash "$root/ci/wheels.sh" "$root/dist" >&2
  export DMLVK_WHEEL_DIR="$root/dist"
fi
workers=${DMLVK_TEST_WORKERS:-$(nproc)}
parallel=()
if [ "$workers" -gt 1 ]; then parallel=(-n "$workers"); fi
if [ -n "${VK_DRIVER_FILES:-}" ]; then
  exec "$DMLVK_PY" -m pytest -q -rs -p no:cacheprovider "${parallel[@]}" "$@"
fi

lvp=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json
swiftshader=$(bash "$root/ci/swiftshader.sh")
legs=${DMLVK_TEST_DEVICES:-lavapipe,swiftshader,lavapipe128,lavapipe512}
# the tests that force every variant and check each path's kernels (the subgroup-size legs)
variant_tests=(tests/test_forced_variants.py tests/test_qconv_paths.py tests/test_depth_space.py tests/test_need_boundaries.py)
status=0
run() {   # run NAME ICD [env...] -- pytest arguments
  local name=$1 icd=$2; shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  echo "test: $name ($(date -u +%H:%M:%S))" >&2
  env VK_DRIVER_FILES="$icd" "${envs[@]}" "$DMLVK_PY" -m pytest -q -rs -p no:cacheprovider "${parallel[@]}" "$@" \
    || status=1
  echo "test: $name done ($(date -u +%H:%M:%S))" >&2
}
for leg in ${legs//,/ }; do
  case $leg in
    lavapipe) run lavapipe "$lvp" -- "$@" ;;
    swiftshader) run SwiftShader "$swiftshader" -- -m "not host and not directml" "$@" ;;
    lavapipe128) run "lavapipe, 128-bit vectors" "$lvp" LP_NATIVE_VECTOR_WIDTH=128 -- -m "not directml" "${variant_tests[@]}" "$@" ;;
    lavapipe512)
      if grep -q avx512f /proc/cpuinfo; then
        run "lavapipe, 512-bit vectors" "$lvp" LP_NATIVE_VECTOR_WIDTH=512 -- -m "not directml" "${variant_tests[@]}" "$@"
      else
        echo "test: lavapipe with 512-bit vectors (subgroups of 16) not run: this CPU has no AVX-512" >&2
      fi ;;
    *) echo "test: unknown leg $leg in DMLVK_TEST_DEVICES" >&2; exit 2 ;;
  esac
done
exit $status
