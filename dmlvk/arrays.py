"""Device arrays: numpy-shaped data that stays in device memory between numpy-level calls.

    xd = dmlvk.asarray(x)                               # one upload
    yd = dmlvk.depth_to_space(xd, 2)                    # a DeviceArray: no host round trip
    y = yd.numpy()                                      # one download (np.asarray(yd) too)"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .runtime.device import Buffer, Device


class DeviceArray:
    """A C-ordered array held in a dmlvk.Buffer on one device."""

    def __init__(self, buffer: Buffer, shape, dtype):
        self.buffer = buffer
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        if self.nbytes > buffer.nbytes:
            raise ValueError(f"a {self.shape} {self.dtype} array needs {self.nbytes} bytes; the Buffer holds {buffer.nbytes}")

    @property
    def device(self) -> Device:
        return self.buffer.device

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def strides(self) -> tuple:
        """Byte strides, as numpy gives them (the layout is always C order)."""
        out, acc = [], self.itemsize
        for s in reversed(self.shape):
            out.append(acc)
            acc *= s
        return tuple(reversed(out))

    def numpy(self) -> np.ndarray:
        """A host copy."""
        return self.buffer.read()[:self.nbytes].view(self.dtype).reshape(self.shape)

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __repr__(self):
        return f"<dmlvk.DeviceArray {self.shape} {self.dtype} on {self.device.name}>"


def empty(shape, dtype, device: Device) -> DeviceArray:
    """An uninitialised (zero-filled) DeviceArray; its Buffer is whole words."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return DeviceArray(device.buffer(max(4, -(-nbytes // 4) * 4)), shape, dtype)


def asarray(x, device: Optional[Device] = None) -> DeviceArray:
    """x on a device: a DeviceArray is returned as it is (on its own device, or copied through the
    host to `device` when that differs); anything np.asarray takes is uploaded once."""
    from .ops.base import as_host_array, resolve_device
    if isinstance(x, DeviceArray):
        if device is None or device is x.device:
            return x
        x = x.numpy()
    device = resolve_device(device)
    a = np.ascontiguousarray(as_host_array(x, "x"))
    out = empty(a.shape, a.dtype, device)
    if a.nbytes:
        raw = np.zeros(out.buffer.nbytes, np.uint8)
        raw[:a.nbytes] = a.reshape(-1).view(np.uint8)
        out.buffer.write(raw)
    return out
