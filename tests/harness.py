"""Shared helpers: DirectML-strided host buffers, layouts, bitwise comparison."""
from __future__ import annotations

import numpy as np
import pytest

from dmlvk import DataType, TensorDesc, ValidationError, calc_buffer_tensor_size, packed_strides


def layout(kind: str, sizes, rng=None) -> tuple:
    """Element strides for a named layout of NCHW sizes."""
    n, c, h, w = sizes
    if kind == "packed":
        return packed_strides(sizes)
    if kind == "padded":          # row pitch and plane pitch with gaps
        row = w + 3
        plane = h * row + 5
        return (c * plane + 7, plane, row, 1)
    if kind == "nhwc":
        return (h * w * c, 1, w * c, c)
    if kind == "nhwc_padded":
        pc = c + 1
        return (h * (w * pc + 1) + 2, 1, w * pc + 1, pc)
    if kind == "broadcast":       # inputs only: zero strides on N and W
        return (0, h, 1, 0) if w > 1 or n > 1 else (0, h, 1, 0)
    if kind == "nonnested":       # no two elements alias, yet no nesting order exists
        row = 2 * w - 1 if w > 1 else 3
        plane = h * row + 1
        return (c * plane + 1, plane, row, 2)
    if kind == "permuted":        # a random permutation of the dims, with gaps
        perm = rng.permutation(4)
        strides, acc = [0] * 4, 1
        for d in reversed(perm):
            strides[d] = acc
            acc *= sizes[d] + int(rng.integers(0, 2))
        return tuple(strides)
    raise ValueError(kind)


def strided_view(buf: np.ndarray, dtype, sizes, strides) -> np.ndarray:
    """The logical tensor a DirectML TensorDesc describes over a byte buffer."""
    dt = np.dtype(dtype)
    return np.lib.stride_tricks.as_strided(buf[:].view(dt), shape=tuple(sizes),
                                           strides=tuple(s * dt.itemsize for s in strides))


def element_mask(nbytes: int, itemsize: int, sizes, strides) -> np.ndarray:
    """True for every byte that belongs to a logical element."""
    mask = np.zeros(nbytes, bool)
    offs = np.zeros(1, np.int64)
    for s, st in zip(sizes, strides):
        offs = (offs[:, None] + np.arange(s, dtype=np.int64)[None, :] * st).ravel()
    for k in range(itemsize):
        mask[offs * itemsize + k] = True
    return mask


def random_bytes(rng, nbytes: int) -> np.ndarray:
    return rng.integers(0, 256, nbytes, dtype=np.uint8)


def bits(a: np.ndarray) -> np.ndarray:
    """A bitwise view for exact comparison (NaN payloads, -0)."""
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")


def make_tensor(rng, data_type: DataType, sizes, strides):
    """(TensorDesc, host buffer with random bytes) for a tensor in the given layout."""
    desc = TensorDesc(data_type, sizes, strides)
    buf = random_bytes(rng, calc_buffer_tensor_size(data_type, sizes, strides))
    return desc, buf


def padded(a) -> np.ndarray:
    """An array's bytes with zeros after them to a whole word and one more: enough for any
    TotalTensorSizeInBytes of them (which rounds up to 4)."""
    raw = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    return np.concatenate([raw, np.zeros(-raw.size % 4 + 4, np.uint8)])


def check_validation(desc, level, match) -> None:
    """desc validates at level (match None), or fails with a ValidationError matching `match`."""
    if match is None:
        desc.validate(level)
        return
    with pytest.raises(ValidationError, match=match):
        desc.validate(level)
