"""Device: a Kompute Manager on one Vulkan physical device, device-resident buffers, dispatch."""
from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np

from ..enums import FeatureLevel
from ..errors import DeviceLimitError, UnsupportedError
from .compiler import compile_shader
from .vkinfo import PhysicalDeviceInfo, physical_devices

try:
    import kp
except ImportError as e:  # pragma: no cover - the set-up script builds kp
    raise ImportError("dmlvk needs Kompute's Python module 'kp' (0.9.0); run ci/setup.sh") from e


class OutOfDeviceMemory(MemoryError):
    """The Vulkan device could not allocate a buffer."""


def devices() -> List[PhysicalDeviceInfo]:
    """The Vulkan devices present, in the order Device(index=...) uses."""
    return physical_devices()


@dataclass(frozen=True)
class Kernel:
    """One shader dispatch of an operator: `count` work items, `local_size` per workgroup.
    `push` holds the operator's push constants; the dispatcher appends (items, first item)."""
    shader: str
    spec: tuple           # specialization constants 1..n (constant 0 is the local size)
    push: tuple
    count: int
    slots: tuple          # which of the operator's bindings the shader's bindings 0..k are
    local_size: int = 128
    defines: tuple = ()


class Device:
    """A Vulkan device running DirectML operators at a chosen DirectML feature level.

    index: position in dmlvk.devices(); None takes $DMLVK_DEVICE, else 0.
    feature_level: the DML_FEATURE_LEVEL whose rules descriptions are validated against."""

    def __init__(self, index: Optional[int] = None, feature_level=FeatureLevel.FL_6_4):
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
        self.index = int(index)
        self.info = infos[self.index]
        self._mgr = kp.Manager(self.index)
        # Overridable in tests to exercise dispatch tiling without huge tensors.
        self.max_workgroup_count = tuple(self.info.max_compute_work_group_count)

    def __repr__(self):
        return f"<dmlvk.Device {self.index}: {self.info.name} at {self.feature_level.dml_name}>"

    @property
    def name(self) -> str:
        return self.info.name

    def create_operator(self, desc):
        """Validate an operator description against this device's feature level and compile it."""
        compile_fn = getattr(desc, "_compile", None)
        if compile_fn is None:
            raise TypeError(f"not an operator description: {type(desc).__name__}")
        return compile_fn(self)

    # ---- memory ---------------------------------------------------------------------------------

    def check_binding_size(self, nbytes: int, what: str) -> None:
        limit = self.info.max_storage_buffer_range
        if nbytes > limit:
            raise DeviceLimitError(
                f"{what} needs a {nbytes}-byte storage binding; {self.name} allows at most "
                f"{limit} bytes per binding (maxStorageBufferRange)")

    def _new_tensor(self, nbytes: int, what: str = "buffer"):
        self.check_binding_size(nbytes, what)
        words = max(1, -(-nbytes // 4))
        try:
            return self._mgr.tensor_t(np.zeros(words, np.uint32), kp.TensorTypes.device)
        except MemoryError:
            raise OutOfDeviceMemory(f"host memory exhausted allocating {nbytes} bytes") from None
        except RuntimeError as e:
            if "OutOf" in str(e) or "out of" in str(e).lower():
                raise OutOfDeviceMemory(f"{self.name} could not allocate {nbytes} bytes: {e}") from None
            raise

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

    # ---- dispatch -------------------------------------------------------------------------------

    def plan(self, count: int, local_size: int):
        """Split `count` work items into dispatches no larger than maxComputeWorkGroupCount:
        a 2-D grid per dispatch, at most 2**31 items each. Yields (first item, items, grid)."""
        max_x, max_y = self.max_workgroup_count[0], self.max_workgroup_count[1]
        per_dispatch = min(max_x * max_y * local_size, 1 << 31)
        per_dispatch -= per_dispatch % local_size
        first = 0
        while first < count:
            items = min(per_dispatch, count - first)
            groups = -(-items // local_size)
            gx = min(groups, max_x)
            gy = -(-groups // gx)
            yield first, items, (gx, gy, 1)
            first += items

    def algorithms(self, kernel: Kernel, tensors: Sequence) -> list:
        """kp.Algorithms (one per dispatch of the plan) with their push constants."""
        spirv = compile_shader(kernel.shader, kernel.defines)
        spec = np.array((kernel.local_size,) + tuple(kernel.spec), dtype=np.uint32)
        out = []
        for first, items, grid in self.plan(kernel.count, kernel.local_size):
            push = np.array(tuple(kernel.push) + (items, first), dtype=np.uint32)
            algo = self._mgr.algorithm(list(tensors), spirv, list(grid), spec, push)
            out.append((algo, push))
        return out

    def sequence(self, timestamps: int = 0):
        return self._mgr.sequence(total_timestamps=timestamps)

    def time(self, kernels: Sequence[Kernel], tensors: Sequence, repeats: int) -> List[float]:
        """GPU seconds of each of `repeats` back-to-back runs of the kernels over kp tensors
        (tensors[i] is the operator binding i; a kernel's slots pick its bindings)."""
        dispatches = []
        for k in kernels:
            dispatches += self.algorithms(k, [tensors[s] for s in k.slots])
        seq = self.sequence(timestamps=repeats * len(dispatches) + 1)
        for _ in range(repeats):
            for algo, push in dispatches:
                seq.record(kp.OpAlgoDispatch(algo, push))
        seq.eval()
        # Kompute writes a timestamp before the first operation and after each one.
        ticks = np.array(seq.get_timestamps(), dtype=np.float64)
        per_op = np.diff(ticks) * self.info.timestamp_period * 1e-9
        n = len(dispatches)
        return [float(per_op[i * n:(i + 1) * n].sum()) for i in range(repeats)]


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
    """Device-resident memory (a Kompute device tensor plus its host staging copy)."""

    def __init__(self, device: Device, nbytes: int):
        self.device = device
        self.nbytes = nbytes
        self._tensor = device._new_tensor(nbytes)
        self._to_device = device.sequence().record(kp.OpTensorSyncDevice([self._tensor]))
        self._to_host = device.sequence().record(kp.OpTensorSyncLocal([self._tensor]))

    def __repr__(self):
        return f"<dmlvk.Buffer {self.nbytes} bytes on {self.device.name}>"

    def _staging(self) -> np.ndarray:
        return self._tensor.data().view(np.uint8)

    def write(self, data, offset: int = 0) -> None:
        raw = host_bytes(np.asarray(data), "data")
        if offset < 0 or offset + raw.size > self.nbytes:
            raise ValueError(f"writing {raw.size} bytes at offset {offset} overruns a {self.nbytes}-byte buffer")
        if offset or raw.size < self.nbytes:
            self._to_host.eval()   # keep the bytes outside the written range
        self._staging()[offset:offset + raw.size] = raw
        self._to_device.eval()

    def read(self) -> np.ndarray:
        """A host copy of the buffer's bytes."""
        self._to_host.eval()
        return self._staging()[:self.nbytes].copy()

    def numpy(self, dtype, shape) -> np.ndarray:
        """The first prod(shape) elements as a packed array."""
        dt = np.dtype(dtype)
        n = int(np.prod(shape))
        return self.read()[:n * dt.itemsize].view(dt).reshape(shape)


_DEFAULT: "OrderedDict[int, Device]" = OrderedDict()


def default_device() -> Device:
    """The process-wide device the numpy-level functions use ($DMLVK_DEVICE or 0, FL 6_4)."""
    key = os.environ.get("DMLVK_DEVICE", "")
    if key not in _DEFAULT:
        _DEFAULT[key] = Device()
    return _DEFAULT[key]
