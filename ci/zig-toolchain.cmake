# Cross toolchain for dmlvk's wheels (ci/wheels.sh): PyPI's ziglang compiling for an old glibc, with
# its C++ runtime (libc++, libunwind) linked in, so the library asks only glibc and the Vulkan loader
# of the system. From the environment:
#   DMLVK_ZIG_TARGET   the target: x86_64-linux-gnu.2.28 or aarch64-linux-gnu.2.28
#   DMLVK_ZIG_BIN      a folder with cc, c++, ar and ranlib: `zig cc -target ...` and the rest
#   DMLVK_VULKAN_ROOT  a folder with include/vulkan (the Vulkan headers alone, never a libc's)
#                      and lib/libvulkan.so (the loader to link against, of the target's architecture)
foreach(v DMLVK_ZIG_TARGET DMLVK_ZIG_BIN DMLVK_VULKAN_ROOT)
  if(NOT DEFINED ENV{${v}})
    message(FATAL_ERROR "zig-toolchain.cmake: ${v} is not set (ci/wheels.sh sets it)")
  endif()
endforeach()
set(CMAKE_SYSTEM_NAME Linux)
string(REGEX MATCH "^[^-]+" CMAKE_SYSTEM_PROCESSOR "$ENV{DMLVK_ZIG_TARGET}")
set(CMAKE_C_COMPILER "$ENV{DMLVK_ZIG_BIN}/cc")
set(CMAKE_CXX_COMPILER "$ENV{DMLVK_ZIG_BIN}/c++")
set(CMAKE_AR "$ENV{DMLVK_ZIG_BIN}/ar" CACHE FILEPATH "" FORCE)
set(CMAKE_RANLIB "$ENV{DMLVK_ZIG_BIN}/ranlib" CACHE FILEPATH "" FORCE)
set(Vulkan_INCLUDE_DIR "$ENV{DMLVK_VULKAN_ROOT}/include" CACHE PATH "" FORCE)
set(Vulkan_LIBRARY "$ENV{DMLVK_VULKAN_ROOT}/lib/libvulkan.so" CACHE FILEPATH "" FORCE)
# Programs (patch, glslangValidator) are the build machine's; libraries and headers only the above.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
