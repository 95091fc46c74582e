"""Device arrays: numpy-shaped data that stays in device memory between numpy-level calls.

    xd = dmlvk.asarray(x)                               # one upload
    yd = dmlvk.depth_to_space(xd, 2)                    # a DeviceArray: no host round trip
    y = yd.numpy()                                      # one download (np.asarray(yd) too)

A DeviceArray in host memory (host_empty) is read and written by the device in place: its .host is a
numpy view of that memory, so a frame written there is an input and an output bound there is read
with no copy on either side."""
from __future__ import annotations

from typing import Optional

import numpy as np

from .runtime.device import Buffer, Device, default_device


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

    @property
    def host(self) -> np.ndarray:
        """A DeviceArray in host memory (host_empty): a numpy view of its bytes, which the device reads
        and writes in place (write an input there before the call, read an output after it). A
        ValueError for one in device memory (numpy() copies that out)."""
        if not self.buffer.host_visible:
            raise ValueError("this DeviceArray is in device memory, which the host cannot map: numpy() copies it "
                             "out (dmlvk.host_empty makes arrays in host memory)")
        return self.buffer.host[:self.nbytes].view(self.dtype).reshape(self.shape)

    def numpy(self) -> np.ndarray:
        """A host copy."""
        return self.buffer.read()[:self.nbytes].view(self.dtype).reshape(self.shape)

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __repr__(self):
        return f"<dmlvk.DeviceArray {self.shape} {self.dtype} on {self.device.name}>"


def empty(shape, dtype, device: Device, host: bool = False) -> DeviceArray:
    """An uninitialised (zero-filled) DeviceArray; its Buffer is whole words, in host memory the device
    reads and writes in place where host (host_empty)."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return DeviceArray(Buffer(device, max(4, -(-nbytes // 4) * 4), host_visible=host), shape, dtype)


def host_empty(shape, dtype, device: Optional[Device] = None) -> DeviceArray:
    """A zero-filled DeviceArray in host memory that the device reads and writes in place (mapped and
    pinned; cached where the device has such memory): fill its .host with a frame and bind it as a
    session's or operator's input, or give it as an output (outputs={name: array}) and read .host
    after the call: no copy between the user's array and the device, which reads and writes it
    across the host link as its kernels go."""
    device = resolve_device(device)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"shape must be sizes of 0 or more, got {shape}")
    return empty(shape, dtype, device, host=True)


def asarray(x, device: Optional[Device] = None) -> DeviceArray:
    """x on a device: a DeviceArray is returned as it is (on its own device, or copied through the
    host to `device` when that differs); anything np.asarray takes is uploaded once."""
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


def as_host_array(x, name: str) -> np.ndarray:
    """A numpy-level argument as an ndarray: anything np.asarray takes (lists, objects with
    __array__ such as torch CPU tensors), or a DLPack object on the CPU."""
    if isinstance(x, np.ndarray) and x.dtype != object:
        return x
    if hasattr(x, "buffer") and isinstance(getattr(x, "buffer"), Buffer):      # a DeviceArray
        return x.numpy()
    if isinstance(x, Buffer):
        raise TypeError(f"{name} is a dmlvk.Buffer: bind Buffers through a compiled operator "
                        f"(device.create_operator(...).execute) or a command list")
    try:
        a = np.from_dlpack(x) if hasattr(x, "__dlpack__") and not hasattr(x, "__array__") else np.asarray(x)
    except (TypeError, ValueError, RuntimeError, BufferError) as e:
        raise TypeError(f"{name} must be an array (anything numpy.asarray takes), got {type(x).__name__}: {e}") from None
    if a.dtype == object:
        raise TypeError(f"{name} must be an array of numbers or bits (anything numpy.asarray takes), got "
                        f"{type(x).__name__} of dtype object")
    return a


def resolve_device(device) -> Device:
    """The device= argument of the numpy-level functions: a dmlvk.Device, or None for the default."""
    if device is None:
        return default_device()
    if not isinstance(device, Device):
        raise TypeError(f"device must be a dmlvk.Device or None, got {type(device).__name__}")
    return device
