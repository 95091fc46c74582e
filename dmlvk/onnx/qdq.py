"""ONNX's QuantizeLinear and DequantizeLinear on the host, as ONNX Runtime's CPU kernels compute them."""
from __future__ import annotations

import numpy as np


def _along_axis(x: np.ndarray, scale: np.ndarray, zp: np.ndarray, axis: int) -> tuple:
    """Per-axis scale and zero point shaped to broadcast along x's axis; per-tensor ones as they are."""
    def shaped(a):
        shape = [1] * x.ndim
        shape[axis % x.ndim] = a.size
        return a.reshape(shape)
    if scale.ndim == 1 and scale.size > 1:
        return shaped(scale), shaped(zp) if zp.size > 1 else zp
    return scale, zp


def quantize_linear(x: np.ndarray, scale, zero_point=None, axis: int = 1) -> np.ndarray:
    """ONNX QuantizeLinear: saturate(round_half_even(x / scale) + zero_point), in float32; the
    result has the zero point's dtype (uint8 without one). Per-tensor or per-axis. NaN gives the
    type's lowest value, as onnxruntime's CPU kernel does."""
    x = np.asarray(x, np.float32)
    scale = np.asarray(scale, np.float32)
    zp = np.zeros((), np.uint8) if zero_point is None else np.asarray(zero_point)
    scale, zp = _along_axis(x, scale, zp, axis)
    info = np.iinfo(zp.dtype)
    with np.errstate(all="ignore"):
        q = np.rint((x / scale).astype(np.float32)) + zp.astype(np.float32)
    return np.clip(np.where(np.isnan(q), info.min, q), info.min, info.max).astype(zp.dtype)


def dequantize_linear(x: np.ndarray, scale, zero_point=None, axis: int = 1) -> np.ndarray:
    """ONNX DequantizeLinear: (x - zero_point) * scale in float32. Per-tensor or per-axis."""
    x = np.asarray(x)
    scale = np.asarray(scale, np.float32)
    zp = np.zeros((), np.int32) if zero_point is None else np.asarray(zero_point)
    scale, zp = _along_axis(x, scale, zp, axis)
    if x.dtype.itemsize <= 2 and zp.dtype.itemsize <= 2:
        # 8/16-bit values and their difference are exact in float32: the same result, one pass fewer
        return (np.subtract(x, zp, dtype=np.float32) * scale).astype(np.float32, copy=False)
    return ((x.astype(np.int32) - zp.astype(np.int32)).astype(np.float32) * scale).astype(np.float32)
