"""The one place dmlvk loads Kompute: libdmlvk_kompute.so (Kompute 0.9.0 with dmlvk's patches behind
a plain C interface, native/kompute_capi.cpp, built with the package), through ctypes, at the first
device call.

The library holds no Python code, so one wheel serves every CPython; ctypes releases the GIL for
every call. The classes below are the small part of Kompute dmlvk uses: Manager, Tensor,
Algorithm, Sequence, and the operations a Sequence records."""
from __future__ import annotations

import ctypes
import os
import sys
import threading
from typing import List, Sequence as Seq

import numpy as np

from ..errors import UnsupportedError

LIBRARY = "libdmlvk_kompute.so"
ABI_VERSION = 2
LOADER_MISSING = ("the Vulkan loader (libvulkan.so.1) is not installed: install it with a driver "
                  "(Debian/Ubuntu: apt install libvulkan1 mesa-vulkan-drivers, or your GPU vendor's driver)")

_u32, _u64, _p = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_void_p
_P = ctypes.POINTER
_SIGNATURES = {        # name: (result, arguments)
    "dmlvk_kp_abi_version": (_u32, []),
    "dmlvk_kp_last_error": (ctypes.c_char_p, []),
    "dmlvk_kp_set_fence_spin_us": (None, [_u32]),
    "dmlvk_kp_set_host_cached": (None, [ctypes.c_int]),
    "dmlvk_manager_new": (ctypes.c_int, [_u32, _P(_p)]),
    "dmlvk_manager_free": (None, [_p]),
    "dmlvk_manager_clear": (ctypes.c_int, [_p]),
    "dmlvk_manager_api_version": (_u32, [_p]),
    "dmlvk_manager_enabled_features": (_u64, [_p, ctypes.c_char_p, _u64]),
    "dmlvk_manager_memory_heaps": (_u32, [_p, _P(_u64), _u32]),
    "dmlvk_tensor_new": (ctypes.c_int, [_p, _u32, ctypes.c_int, _P(_p)]),
    "dmlvk_tensor_free": (None, [_p]),
    "dmlvk_tensor_data": (_p, [_p, _P(_u64)]),
    "dmlvk_tensor_host_memory_flags": (_u32, [_p]),
    "dmlvk_algorithm_new": (ctypes.c_int, [_p, _P(_p), _u32, _p, _u64, _p, _p, _u32, _p, _u32, _P(_p)]),
    "dmlvk_algorithm_free": (None, [_p]),
    "dmlvk_algorithm_set_tensors": (ctypes.c_int, [_p, _P(_p), _u32]),
    "dmlvk_sequence_new": (ctypes.c_int, [_p, _u32, _P(_p)]),
    "dmlvk_sequence_free": (None, [_p]),
    "dmlvk_sequence_clear": (ctypes.c_int, [_p]),
    "dmlvk_sequence_record_dispatch": (ctypes.c_int, [_p, _p, _p, _u32]),
    "dmlvk_sequence_record_sync": (ctypes.c_int, [_p, _P(_p), _u32, ctypes.c_int]),
    "dmlvk_sequence_record_barrier": (ctypes.c_int, [_p, _u32, _u32, _u32, _u32]),
    "dmlvk_sequence_eval": (ctypes.c_int, [_p]),
    "dmlvk_sequence_eval_async": (ctypes.c_int, [_p]),
    "dmlvk_sequence_eval_await": (ctypes.c_int, [_p, _u64]),
    "dmlvk_sequence_timestamps": (ctypes.c_int, [_p, _P(_u64), _u32, _P(_u32)]),
}
_NO_MEMORY = 2

_lib = None
_lib_lock = threading.Lock()


def library_path() -> str:
    """Where libdmlvk_kompute.so is: in the package, or (an editable install) in the build's copy of it."""
    package_dirs = list(sys.modules[__name__.split(".")[0]].__path__)
    for d in package_dirs:
        candidate = os.path.join(d, LIBRARY)
        if os.path.exists(candidate):
            return candidate
    raise UnsupportedError(f"dmlvk's native library ({LIBRARY}) is not installed beside the package "
                           f"(in {', '.join(package_dirs)}): install dmlvk from its wheel, or build it "
                           f"with `pip install .` from its source")


def load():
    """The library, loaded once, with every function's signature set."""
    global _lib
    if _lib is None:
        with _lib_lock:
            if _lib is None:
                path = library_path()
                try:
                    lib = ctypes.CDLL(path)
                except OSError as e:
                    if "libvulkan" in str(e):
                        raise UnsupportedError(LOADER_MISSING) from e
                    raise UnsupportedError(f"dmlvk's native library {path} cannot be loaded ({e})") from e
                for name, (result, args) in _SIGNATURES.items():
                    fn = getattr(lib, name)
                    fn.restype, fn.argtypes = result, args
                if lib.dmlvk_kp_abi_version() != ABI_VERSION:
                    raise UnsupportedError(f"{path} has interface {lib.dmlvk_kp_abi_version()}, this dmlvk "
                                           f"expects {ABI_VERSION}: reinstall dmlvk")
                _lib = lib
    return _lib


def _check(status: int) -> None:
    if status:
        message = _lib.dmlvk_kp_last_error().decode("utf-8", "replace")
        if status == _NO_MEMORY:
            raise MemoryError(message)
        raise RuntimeError(message)


def _handles(objects) -> "ctypes.Array":
    return (_p * len(objects))(*[o.handle for o in objects])


def _words(values) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.uint32)


class _Owned:
    """A handle the library made; freed with the Python object."""
    _free = ""
    handle = None

    def __del__(self):
        if self.handle is not None and _lib is not None:
            getattr(_lib, self._free)(self.handle)
            self.handle = None


def set_host_cached(prefer: bool) -> None:
    """Host-visible memory (host tensors, device tensors' staging) of tensors made from now on from a
    HOST_CACHED memory type where the device has one (process-wide; the CPU reads uncached,
    write-combined memory slowly)."""
    load().dmlvk_kp_set_host_cached(int(bool(prefer)))


def set_fence_spin_us(microseconds: int) -> None:
    """Poll a submission's fence for up to this many microseconds before blocking (process-wide)."""
    load().dmlvk_kp_set_fence_spin_us(int(microseconds))


class Manager(_Owned):
    """One Vulkan instance and device (Kompute's Manager), by index in vkEnumeratePhysicalDevices order."""
    _free = "dmlvk_manager_free"

    def __init__(self, index: int):
        lib = load()
        out = _p()
        _check(lib.dmlvk_manager_new(int(index), ctypes.byref(out)))
        self.handle = out

    def clear(self) -> None:
        """Forget the tensors, algorithms and sequences that no longer exist (Kompute keeps a weak
        pointer to each it made)."""
        _check(_lib.dmlvk_manager_clear(self.handle))

    def api_version(self) -> int:
        return _lib.dmlvk_manager_api_version(self.handle)

    def enabled_features(self) -> List[str]:
        """The optional features and extensions enabled at device creation, by their Vulkan names."""
        need = _lib.dmlvk_manager_enabled_features(self.handle, None, 0)
        buf = ctypes.create_string_buffer(need)
        _lib.dmlvk_manager_enabled_features(self.handle, buf, need)
        return buf.value.decode().split()

    def memory_heaps(self) -> List[tuple]:
        """(size, budget, usage, flags) of every memory heap, in bytes."""
        out = (_u64 * (4 * 16))()
        n = _lib.dmlvk_manager_memory_heaps(self.handle, out, 16)
        return [tuple(out[4 * i:4 * i + 4]) for i in range(min(n, 16))]

    def tensor(self, words: int, host: bool = False) -> "Tensor":
        """A zero-filled tensor of 32-bit words: device-local memory with a host-visible staging copy,
        or (host=True) one host-visible buffer the shaders use directly."""
        out = _p()
        _check(_lib.dmlvk_tensor_new(self.handle, int(words), int(bool(host)), ctypes.byref(out)))
        return Tensor(out)

    def algorithm(self, tensors: Seq["Tensor"], spirv: bytes, workgroups, spec, push) -> "Algorithm":
        """A pipeline over the tensors (bindings 0, 1, ...): the SPIR-V, the number of workgroups in
        each dimension, uint32 specialization constants (ids 0, 1, ...) and push constants."""
        code = np.frombuffer(spirv, np.uint32)
        grid, spec, push = _words(workgroups), _words(spec), _words(push)
        if grid.shape != (3,):
            raise ValueError(f"workgroups must be 3 counts, got {workgroups!r}")
        out = _p()
        _check(_lib.dmlvk_algorithm_new(
            self.handle, _handles(tensors), len(tensors), code.ctypes.data, code.size, grid.ctypes.data,
            spec.ctypes.data, spec.size, push.ctypes.data, push.size, ctypes.byref(out)))
        return Algorithm(out, len(tensors))

    def sequence(self, total_timestamps: int = 0) -> "Sequence":
        """A command buffer to record operations into (total_timestamps > 0: one timestamp query
        after each operation, and one at the start)."""
        out = _p()
        _check(_lib.dmlvk_sequence_new(self.handle, int(total_timestamps), ctypes.byref(out)))
        return Sequence(out)


class Tensor(_Owned):
    _free = "dmlvk_tensor_free"

    def __init__(self, handle):
        self.handle = handle

    def data(self) -> np.ndarray:
        """The mapped host memory (a device tensor's staging buffer) as uint8; the array keeps the
        tensor alive."""
        size = _u64()
        ptr = _lib.dmlvk_tensor_data(self.handle, ctypes.byref(size))
        raw = (ctypes.c_uint8 * size.value).from_address(ptr)
        raw._tensor = self
        return np.frombuffer(raw, np.uint8)

    def host_memory_flags(self) -> int:
        """The VkMemoryPropertyFlags of the tensor's mapped host memory (a device tensor's staging)."""
        return int(_lib.dmlvk_tensor_host_memory_flags(self.handle))


class Algorithm(_Owned):
    _free = "dmlvk_algorithm_free"

    def __init__(self, handle, bindings: int):
        self.handle = handle
        self.bindings = bindings

    def set_tensors(self, tensors: Seq[Tensor]) -> None:
        """Other tensors (as many as before) into the descriptor set; the pipeline stays."""
        if len(tensors) != self.bindings:
            raise ValueError(f"the algorithm binds {self.bindings} tensors, not {len(tensors)}")
        _check(_lib.dmlvk_algorithm_set_tensors(self.handle, _handles(tensors), len(tensors)))


# ---- the operations a Sequence records -----------------------------------------------------------

class OpAlgoDispatch:
    """One dispatch of an algorithm, with its push constants."""
    __slots__ = ("algorithm", "push")

    def __init__(self, algorithm: Algorithm, push):
        self.algorithm, self.push = algorithm, _words(push)


class _TensorSync:
    __slots__ = ("tensors",)
    to_device = 0

    def __init__(self, tensors: Seq[Tensor]):
        self.tensors = list(tensors)


class OpTensorSyncDevice(_TensorSync):
    """Copies of the tensors' staging buffers to their device memory."""
    __slots__ = ()
    to_device = 1


class OpTensorSyncLocal(_TensorSync):
    """Copies of the tensors' device memory to their staging buffers."""
    __slots__ = ()


class OpPipelineBarrier:
    """One global memory barrier; masks are VkAccessFlags and VkPipelineStageFlags values."""
    __slots__ = ("masks",)

    def __init__(self, src_access: int, dst_access: int, src_stage: int, dst_stage: int):
        self.masks = (src_access, dst_access, src_stage, dst_stage)


class Sequence(_Owned):
    """A command buffer, recorded once and submitted many times; its fence is reused."""
    _free = "dmlvk_sequence_free"

    def __init__(self, handle):
        self.handle = handle

    def clear(self) -> None:
        _check(_lib.dmlvk_sequence_clear(self.handle))

    def record(self, op) -> None:
        if isinstance(op, OpAlgoDispatch):
            _check(_lib.dmlvk_sequence_record_dispatch(self.handle, op.algorithm.handle, op.push.ctypes.data,
                                                       op.push.size))
        elif isinstance(op, _TensorSync):
            _check(_lib.dmlvk_sequence_record_sync(self.handle, _handles(op.tensors), len(op.tensors),
                                                   op.to_device))
        elif isinstance(op, OpPipelineBarrier):
            _check(_lib.dmlvk_sequence_record_barrier(self.handle, *op.masks))
        else:
            raise TypeError(f"not an operation a sequence records: {op!r}")

    def eval(self) -> None:
        """Submit and wait."""
        _check(_lib.dmlvk_sequence_eval(self.handle))

    def eval_async(self) -> None:
        _check(_lib.dmlvk_sequence_eval_async(self.handle))

    def eval_await(self, timeout_ns: int = 2 ** 64 - 1) -> None:
        _check(_lib.dmlvk_sequence_eval_await(self.handle, timeout_ns))

    def get_timestamps(self) -> List[int]:
        count = _u32()
        _check(_lib.dmlvk_sequence_timestamps(self.handle, None, 0, ctypes.byref(count)))
        out = (_u64 * count.value)()
        _check(_lib.dmlvk_sequence_timestamps(self.handle, out, count.value, ctypes.byref(count)))
        return list(out)
