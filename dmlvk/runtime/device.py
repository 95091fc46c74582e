"""Device: one Vulkan device through Kompute (runtime/kompute.py: Kompute 0.9.0 with dmlvk's patches), its
buffers, memory accounting and submissions. dmlvk/runtime/ is the only package that uses it.

Threading: a Device may be used from any number of threads. Every submission (and every transfer)
takes the device's lock, and kp releases the GIL while it waits for the GPU, so other threads stage
their data meanwhile. A process forked after dmlvk opened a device gets a clear UnsupportedError from
every device call (a Vulkan device cannot cross fork(), and a new one in such a child is not safe on
every driver), never a hang."""
from __future__ import annotations

import ctypes
import contextlib
import os
import threading
import weakref
from collections import OrderedDict
from typing import List, Optional

import numpy as np

from ..enums import DataType, FeatureLevel
from ..errors import DeviceLimitError, UnsupportedError, ValidationError
from .capabilities import Capabilities, device_capabilities, runs_dead_branches
from .compiler import UNSPECIALIZED_SHADERS, can_specialize, compile_shader, specialize
from .datatypes import supported_data_types
from . import kompute as kp
from .memory import HeapAccount, OutOfDeviceMemory
from .kernel import VARIANT_ENV, Kernel, VariantChoice, dispatch_plan, kernel_dispatches
from .vkinfo import PhysicalDeviceInfo, _version, physical_devices

_PRUNE_EVERY = 256          # kp objects created between prunings of the Manager's dead entries
_MISSING = object()
_OPERATOR_CACHE = 64        # compiled operators kept per device for the numpy-level API


def devices() -> List[PhysicalDeviceInfo]:
    """The Vulkan devices present, in the order Device(index=...) uses."""
    return physical_devices()


_LIVE: "weakref.WeakSet[Device]" = weakref.WeakSet()
_SPIN_DEFAULT = 0


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    try:
        return int(raw) if raw else default
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None


def set_fence_spin_us(us: Optional[int]) -> None:
    """How many microseconds a submission polls its fence before blocking, for the whole process
    (None: the devices' choice, 200 unless DMLVK_FENCE_SPIN_US says otherwise)."""
    kp.set_fence_spin_us(_SPIN_DEFAULT if us is None else int(us))


class Device:
    """A Vulkan device running DirectML operators at a chosen DirectML feature level.

    index: position in dmlvk.devices(); None takes $DMLVK_DEVICE, else 0.
    feature_level: the DML_FEATURE_LEVEL whose rules descriptions are validated against.
    debug: validate as DirectML's debug layer would (DML_CREATE_DEVICE_FLAG_DEBUG): the documented
    checks the release DirectML.dll skips are added (see README, "Semantics choices").
    type_support: which tensor data types descriptions may use (check_feature_support answers from
    it): "dmlvk" (every type, on every device), "directml" (what DirectML reports for this device
    under vkd3d: no 16-bit types without typed UAV loads of additional formats), or a set of
    DataTypes."""

    def __init__(self, index: Optional[int] = None, feature_level=FeatureLevel.FL_6_4, debug: bool = False,
                 type_support="dmlvk"):
        if _FORKED_FROM is not None:
            raise UnsupportedError(_fork_message(_FORKED_FROM))
        infos = physical_devices()
        if index is None:
            env = os.environ.get("DMLVK_DEVICE", "").strip()
            try:
                index = int(env) if env else 0
            except ValueError:
                raise ValueError(f"DMLVK_DEVICE must be a device index, got {env!r}") from None
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(f"index must be an int or None, got {index!r}")
        if not infos:
            raise UnsupportedError("no Vulkan device found (install mesa-vulkan-drivers for lavapipe)")
        if not 0 <= index < len(infos):
            names = ", ".join(f"{d.index}: {d.name}" for d in infos)
            raise ValueError(f"device index {index} out of range; devices: {names}")
        try:
            self.feature_level = FeatureLevel(feature_level)
        except ValueError:
            raise UnsupportedError(f"feature level {feature_level!r} is not one DirectML defines "
                                   f"(DXGI_ERROR_UNSUPPORTED)") from None
        if not isinstance(debug, bool):
            raise TypeError(f"debug must be a bool, got {debug!r}")
        self.debug = debug
        self.index = int(index)
        self.info = infos[self.index]
        self.supported_data_types: frozenset = supported_data_types(type_support, self.info)
        self.lock = threading.RLock()      # the queue, the Manager and the accounting below
        self._pid = os.getpid()
        self.manager = kp.Manager(self.index)
        self.capabilities: Capabilities = device_capabilities(
            self.info, self.manager.enabled_features(), _version(self.manager.api_version()))
        # Kernels' SPIR-V with the specialization constants folded in (spirv-opt) where the driver
        # runs the branches they rule out (runs_dead_branches); DMLVK_HOST_SPECIALIZATION=0 turns
        # it off, =1 on for any device.
        choice = os.environ.get("DMLVK_HOST_SPECIALIZATION", "")
        self.host_specialization = (choice == "1" or (choice != "0" and runs_dead_branches(self.info))) \
            and can_specialize()
        # Overridable in tests to exercise dispatch tiling without huge tensors.
        self.max_workgroup_count = tuple(self.info.max_compute_work_group_count)
        self._transfer = self.manager.sequence()     # re-recorded for each Buffer transfer
        self._created = 0
        self._operators: "OrderedDict[object, object]" = OrderedDict()
        self._choice: Optional[VariantChoice] = None      # set within variants()
        self._init_memory()
        # A short poll of the fence saves the blocking wait's wake-up on quick submissions (on
        # lavapipe too: 66 -> 29 us a tiny call). kp's setting is process-wide: the largest any
        # device asked for stands.
        self.fence_spin_us = _env_int("DMLVK_FENCE_SPIN_US", 200)
        global _SPIN_DEFAULT
        _SPIN_DEFAULT = max(_SPIN_DEFAULT, self.fence_spin_us)
        set_fence_spin_us(None)
        # Staging from cached host memory where the device has it (NVIDIA's first host-visible type is
        # write-combined, which the CPU reads slowly): DMLVK_HOST_CACHED=0 takes the first type.
        kp.set_host_cached(_env_int("DMLVK_HOST_CACHED", 1) != 0)
        _LIVE.add(self)

    def __repr__(self):
        return f"<dmlvk.Device {self.index}: {self.info.name} at {self.feature_level.dml_name}>"

    @property
    def name(self) -> str:
        return self.info.name

    def check_feature_support(self, data_type) -> bool:
        """IDMLDevice::CheckFeatureSupport(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT): whether operator
        descriptions may use this tensor data type on this device."""
        try:
            return DataType(data_type) in self.supported_data_types
        except ValueError:
            raise ValueError(f"{data_type!r} is not a DML_TENSOR_DATA_TYPE") from None

    def check_data_types(self, operator: str, tensors) -> None:
        """A ValidationError for the first (name, TensorDesc) whose data type this device does not
        support (DirectML's CreateOperator fails the same way)."""
        for name, t in tensors:
            if t is not None and t.data_type not in self.supported_data_types:
                raise ValidationError(f"{operator}: {name}'s {DataType(t.data_type).dml_name} is not supported "
                                      f"on this device (CheckFeatureSupport: TENSOR_DATA_TYPE_SUPPORT is FALSE).")

    def create_operator(self, desc, force: Optional[str] = None, tuning=None):
        """IDMLDevice::CreateOperator + CompileOperator: validate a description against this device's
        feature level and compile it. A description is anything with compile(device, choice) (the
        OperatorDesc protocol; choice: a VariantChoice). force: one of the operator's variants by name
        (its table, e.g. dmlvk.ops.depth_space.TABLE; docs/kernels.md lists them all); tuning: {number's name: value, variant's name: False}
        instead of the table's. Without either, the choice of the enclosing variants() block applies,
        else the DMLVK_VARIANT environment variable's, where they name this operator's variants."""
        compile_fn = getattr(desc, "compile", None)
        if not callable(compile_fn) or isinstance(desc, type):
            raise TypeError(f"not an operator description: {type(desc).__name__}")
        if force is not None or tuning:
            choice = VariantChoice(force, dict(tuning or {}), strict=True)
        else:
            choice = self.choice()
        return compile_fn(self, choice)

    def choice(self) -> VariantChoice:
        """The variant choice operators created now get (without a force or tuning of their own): the
        enclosing variants() block's, else the DMLVK_VARIANT environment variable's."""
        return self._choice or VariantChoice(os.environ.get(VARIANT_ENV) or None)

    @contextlib.contextmanager
    def variants(self, force: Optional[str] = None, tuning=None):
        """Within the block, every operator this device creates (the numpy-level calls' too) chooses
        its kernels with this force and tuning, where they name that operator's variants and numbers
        (for tests and benchmarks; the operator cache is emptied on entry and exit)."""
        saved = self._choice
        self._choice = VariantChoice(force, dict(tuning or {}))
        self._operators.clear()
        try:
            yield self
        finally:
            self._choice = saved
            self._operators.clear()

    def operator(self, desc, key=None):
        """The compiled operator for a description, created once per device and kept in a small
        cache (the numpy-level API uses it). key: a cheaper cache key that identifies the
        description; desc may then be a function that builds it, called only on a miss."""
        return self.memo(desc if key is None else key,
                         lambda: self.create_operator(desc() if callable(desc) else desc))

    def memo(self, key, make):
        """What make() returns, made once per key and kept in the device's small cache of compiled
        operators and the call plans built on them (the oldest made go first; emptied by
        variants()). make() runs outside the lock; an exception leaves nothing cached."""
        cache = self._operators
        value = cache.get(key, _MISSING)
        if value is _MISSING:
            value = make()
            with self.lock:
                cache[key] = value
                while len(cache) > _OPERATOR_CACHE:
                    cache.popitem(last=False)
        return value

    # ---- process and kp bookkeeping -------------------------------------------------------------

    def _check_process(self) -> None:
        if self._pid != os.getpid():
            raise UnsupportedError(_fork_message(self._pid))

    def note_made(self, count: int = 1) -> None:
        """Count new kp objects; kp's Manager keeps a weak pointer to each until pruned."""
        self._created += count
        if self._created >= _PRUNE_EVERY:
            self._created = 0
            with self.lock:
                self.manager.clear()

    def _after_fork_in_child(self) -> None:
        # The child must never destroy the parent's Vulkan objects (the driver's threads and queues
        # are not in this process): keep them alive for the rest of the process.
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(self))
        self.lock = threading.RLock()

    # ---- memory -------------------------------------------------------------------------------

    def _init_memory(self) -> None:
        heaps = self.manager.memory_heaps()
        self.heaps = HeapAccount(heaps, "VK_EXT_memory_budget" in self.manager.enabled_features(), self.name)
        # Staging of host arrays: where device memory is host memory (CPU devices, integrated
        # GPUs), and for small tensors anywhere, a host-visible buffer the shaders use directly (no
        # copies in the submission); else device memory with staging copies.
        unified = self.info.device_type in ("CPU", "integrated GPU")
        self.direct_staging_bytes = _env_int("DMLVK_DIRECT_STAGING_BYTES", 1 << 62 if unified else 64 << 10)

    def memory(self) -> dict:
        """Bytes dmlvk holds on each heap it allocates from, against the heap's size and budget."""
        return self.heaps.report(self.manager.memory_heaps())

    def _unreserve(self, held) -> None:
        with self.lock:
            self.heaps.release(held)

    def check_binding_size(self, nbytes: int, what: str) -> None:
        limit = self.info.max_storage_buffer_range
        if nbytes > limit:
            raise DeviceLimitError(
                f"{what} needs a {nbytes}-byte storage binding; {self.name} allows at most "
                f"{limit} bytes per binding (maxStorageBufferRange)")

    def _new_tensor(self, nbytes: int, what: str = "buffer", host: bool = False):
        """A kp tensor of whole words (at least nbytes), counted against the heaps: device-local
        memory with host staging, or (host=True) one host-visible buffer the shaders use directly.
        Returns (tensor, the heaps it holds)."""
        self.check_binding_size(nbytes, what)
        self._check_process()
        words = max(1, -(-nbytes // 4))
        heaps = self.heaps.roles[1:] if host else self.heaps.roles
        with self.lock:
            held = self.heaps.reserve(4 * words, heaps, self.manager.memory_heaps())
            try:
                t = self.manager.tensor(words, host=host)
            except (MemoryError, RuntimeError) as e:
                self.heaps.release(held)
                if isinstance(e, MemoryError):
                    raise OutOfDeviceMemory(f"host memory exhausted allocating {nbytes} bytes") from None
                if "OutOf" in str(e) or "out of" in str(e).lower():
                    raise OutOfDeviceMemory(f"{self.name} could not allocate {nbytes} bytes: {e}") from None
                raise
        self.note_made()
        return t, held

    def staging_buffer(self, nbytes: int) -> "Buffer":
        """A Buffer to stage nbytes of host data in: host-visible (used by the shaders directly)
        when the device's memory is host memory or the tensor is small, else device-local."""
        return Buffer(self, nbytes, host_visible=nbytes <= self.direct_staging_bytes)

    def buffer(self, nbytes: int) -> "Buffer":
        """A zero-filled device-resident buffer of at least nbytes bytes."""
        if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or nbytes <= 0:
            raise ValueError(f"nbytes must be a positive integer, got {nbytes!r}")
        return Buffer(self, int(nbytes))

    def upload(self, array) -> "Buffer":
        """A device-resident buffer holding a copy of the array's bytes (in memory order)."""
        raw = host_bytes(array, "array")
        buf = Buffer(self, max(raw.size, 1))
        buf.write(raw)
        return buf

    # ---- submission ---------------------------------------------------------------------------

    def submit(self, seq) -> None:
        """Run a recorded kp sequence and wait for it (one submission at a time per device)."""
        self._check_process()
        with self.lock:
            seq.eval()

    def submit_async(self, seq) -> None:
        """Submit a recorded kp sequence without waiting for it (wait_for() before reading its
        results or submitting it again); other submissions may follow meanwhile."""
        self._check_process()
        with self.lock:
            seq.eval_async()

    def wait_for(self, seq) -> None:
        """Wait for a sequence submitted by submit_async (the GIL and the device's lock are free
        meanwhile)."""
        seq.eval_await()

    def _sync(self, tensor, to_device: bool) -> None:
        self._check_process()
        op = kp.OpTensorSyncDevice([tensor]) if to_device else kp.OpTensorSyncLocal([tensor])
        with self.lock:
            self._transfer.clear()
            self._transfer.record(op)
            self._transfer.eval()

    def plan(self, count: int, local_size: int):
        """dispatch_plan under this device's maxComputeWorkGroupCount."""
        return dispatch_plan(count, local_size, self.max_workgroup_count)

    def push_constants(self, kernel: Kernel) -> list:
        """(push constants, workgroup grid) of each dispatch of the kernel's plan on this device."""
        return kernel_dispatches(kernel, self.max_workgroup_count)

    def algorithms(self, kernel: Kernel, tensors: list) -> list:
        """kp.Algorithms (one per dispatch of the plan) with their push constants."""
        spirv = compile_shader(kernel.shader, kernel.defines)
        spec = np.array((kernel.local_size,) + tuple(kernel.spec), dtype=np.uint32)
        if self.host_specialization and kernel.shader not in UNSPECIALIZED_SHADERS:
            spirv = specialize(spirv, tuple(int(v) for v in spec))
        out = []
        with self.lock:
            for push, grid in self.push_constants(kernel):
                out.append((self.manager.algorithm(tensors, spirv, list(grid), spec, push), push))
        self.note_made(len(out))
        return out


def host_bytes(a, what: str, writable: bool = False) -> np.ndarray:
    """The bytes of a contiguous numpy array, as a flat uint8 view (no copy)."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{what} must be a numpy array or a dmlvk.Buffer, got {type(a).__name__}")
    if not (a.flags.c_contiguous or a.flags.f_contiguous):
        raise ValueError(f"{what} must be a contiguous array (its bytes are read per the TensorDesc)")
    if writable and not a.flags.writeable:
        raise ValueError(f"{what} is read-only")
    return a.reshape(-1, order="A").view(np.uint8)


class Buffer:
    """Device-resident memory (a Kompute device tensor plus its host staging copy).

    `host` is the staging view: the mapped host memory (uint8) that a Program's uploads send to
    the device and its downloads fill (for a host-visible Buffer, the memory the shaders use);
    write() and read() go through it. `tensor` is the Kompute tensor the runtime binds.
    `version` counts the writes the buffer has seen (Buffer.write and operator outputs)."""

    def __init__(self, device: Device, nbytes: int, host_visible: bool = False):
        self.device = device
        self.nbytes = nbytes
        self.host_visible = host_visible   # one host-visible buffer, no staging copy (internal use)
        self.tensor, held = device._new_tensor(nbytes, host=host_visible)
        self.host = self.tensor.data()     # the mapped staging memory (uint8)
        self._lock = threading.Lock()
        self.version = 0
        weakref.finalize(self, device._unreserve, held)

    def __repr__(self):
        return f"<dmlvk.Buffer {self.nbytes} bytes on {self.device.name}>"

    @property
    def host_memory_flags(self) -> int:
        """The VkMemoryPropertyFlags of `host`'s memory (HOST_CACHED 0x8 where the device offered it)."""
        return self.tensor.host_memory_flags()

    def write(self, data, offset: int = 0) -> None:
        raw = host_bytes(np.asarray(data), "data")
        if offset < 0 or offset + raw.size > self.nbytes:
            raise ValueError(f"writing {raw.size} bytes at offset {offset} overruns a {self.nbytes}-byte buffer")
        with self._lock:
            if self.host_visible:
                self.device._check_process()
                self.host[offset:offset + raw.size] = raw
            else:
                if offset or raw.size < self.nbytes:
                    self.device._sync(self.tensor, to_device=False)   # keep the bytes outside the range
                self.host[offset:offset + raw.size] = raw
                self.device._sync(self.tensor, to_device=True)
            self.version += 1

    def read(self) -> np.ndarray:
        """A host copy of the buffer's bytes."""
        with self._lock:
            if self.host_visible:
                self.device._check_process()
            else:
                self.device._sync(self.tensor, to_device=False)
            return self.host[:self.nbytes].copy()

    def numpy(self, dtype, shape) -> np.ndarray:
        """The first prod(shape) elements as a packed array."""
        dt = np.dtype(dtype)
        n = int(np.prod(shape))
        return self.read()[:n * dt.itemsize].view(dt).reshape(shape)


_DEFAULT: "dict[str, Device]" = {}
_DEFAULT_LOCK = threading.Lock()


def default_device() -> Device:
    """The process-wide device the numpy-level functions use ($DMLVK_DEVICE or 0, FL 6_4)."""
    key = os.environ.get("DMLVK_DEVICE", "")
    dev = _DEFAULT.get(key)
    if dev is None:
        with _DEFAULT_LOCK:
            dev = _DEFAULT.get(key)
            if dev is None:
                dev = _DEFAULT[key] = Device()
    return dev


_FORKED_FROM: Optional[int] = None


def _fork_message(pid: int) -> str:
    return (f"this process was forked from process {pid} after that one opened a Vulkan device; a Vulkan "
            f"device cannot be used across fork(), and opening a new one in a forked child is not safe on "
            f"every driver: start worker processes with multiprocessing's 'spawn' or 'forkserver' method, "
            f"or fork before dmlvk opens a device")


def _after_fork_in_child() -> None:
    global _DEFAULT_LOCK, _FORKED_FROM
    _DEFAULT_LOCK = threading.Lock()
    _DEFAULT.clear()
    live = list(_LIVE)
    if live:
        _FORKED_FROM = live[0]._pid
    for dev in live:
        dev._after_fork_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)
