# Source this at the start of every GPU command, from the checkout's root, with .device-deps carried
# (ci/device-deps.sh fills it):  source ci/device.sh
# It runs ci/device-setup.sh (the Vulkan loader and the NVIDIA ICD, PyPI's glslang and zstd on
# PATH, Kompute built with the project's patches), then installs dmlvk offline: editable through its own build (CMakeLists.txt: Kompute with
# third_party/kompute's patches as libdmlvk_kompute.so) from the carried build wheels; or, with
# DMLVK_FROM_WHEEL=1, the carried x86_64 wheel that CI builds (no build step at all), and changes to
# a copy of the checkout whose dmlvk/ is the installed package, so that tests and tools use it.
source ci/device-setup.sh
if ls .device-deps/peer-wheels/*.whl > /dev/null 2>&1; then    # benchmark peers (dmlvk_lab/bench_peers.py)
  python3 -m pip install -q --no-index --no-deps .device-deps/peer-wheels/*.whl 2>&1 | grep -v "^WARNING" || true
fi
if [ "${DMLVK_FROM_WHEEL:-0}" = 1 ]; then
  python3 -m pip install -q --no-index --no-deps --force-reinstall .device-deps/dmlvk-wheel/dmlvk-*.whl 2>&1 \
    | grep -v "^WARNING" || true
  installed=$(cd / && python3 -c "import dmlvk, os; print(os.path.dirname(dmlvk.__file__))")
  suite=/tmp/dmlvk-on-wheel
  rm -rf "$suite" && mkdir -p "$suite"
  tar --exclude=./dmlvk --exclude=./.device-deps --exclude=./build --exclude=./.git -cf - . | tar -xf - -C "$suite"
  ln -s "$installed" "$suite/dmlvk"
  ln -s "$PWD/.device-deps" "$suite/.device-deps"
  cd "$suite"
  echo "dmlvk from the wheel: $(ls "$installed"/../dmlvk-*.dist-info -d | xargs -n1 basename) in $installed"
else
  python3 -m pip install -q --no-index --find-links .device-deps/build-wheels scikit-build-core \
    cmeel-fmt ninja 2>&1 | grep -v "^WARNING" || true
  export CMAKE_PREFIX_PATH=/opt/vk/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  if ! python3 -m pip install -q --no-index --no-build-isolation --no-deps -e . > /tmp/dmlvk-build.log 2>&1; then
    echo "dmlvk build failed; see /tmp/dmlvk-build.log"; tail -30 /tmp/dmlvk-build.log
  fi
fi
python3 -c "import dmlvk; print('dmlvk', dmlvk.__version__, 'from', dmlvk.__file__, 'on', dmlvk.Device().name)"
