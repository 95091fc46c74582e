"""ONNX QuantizeLinear and DequantizeLinear on the device, for dmlvk.onnx (not DirectML
operators; dmlvk's API does not offer them): float32 <-> 8 bits per tensor or per axis, with
onnxruntime's CPU arithmetic (dmlvk/shaders/quantize_linear.comp, dequantize_linear.comp).

The scales and zero points are the model's constants: they are bound as one small input Buffer
(params(), the scale bits then the zero points, one word each per channel)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..enums import DataType
from ..errors import UnsupportedError
from ..runtime.capabilities import Capabilities
from ..runtime.device import Device
from ..runtime.kernel import Kernel
from ..tensor import TensorDesc
from .base import CompiledOperator
from .variants import PushBlock, Table, Variant

LOCAL = 128
FLOAT64 = "shaderFloat64"
# One kernel each way, four bytes an invocation; the push block both shaders declare.
TABLE = Table("QuantizeLinear / DequantizeLinear (ONNX)", [
    Variant("quantize", "quantize_linear", ("SIGNED", "PER_AXIS"),
            "float32 to 8 bits, x / scale in double precision (the correctly rounded float32 quotient), "
            "rounded half to even, plus the zero point, saturated; NaN to the type's lowest value",
            requires=(FLOAT64,)),
    Variant("dequantize", "dequantize_linear", ("SIGNED", "PER_AXIS", "CLAMP"),
            "8 bits to float32: float32(q - zero point) * scale (CLAMP: then a Clip's min(max(y, lo), hi))"),
], push={s: PushBlock([("count", 1), ("inner", 1), ("channels", 1)]) for s in ("quantize_linear", "dequantize_linear")})


@dataclass(frozen=True)
class QuantizeLinearDesc:
    """quantize: float32 -> `dtype` (uint8 or int8); else the reverse. shape: the tensor's sizes;
    axis: the per-channel axis (None: per tensor); clip: (lo, hi) float32 bounds a DequantizeLinear's
    output is clipped to (an ONNX Clip after it), or None."""
    quantize: bool
    shape: tuple
    dtype: type
    axis: Optional[int] = None
    clip: Optional[tuple] = None

    def __post_init__(self):
        if np.dtype(self.dtype) not in (np.uint8, np.int8):
            raise TypeError(f"QuantizeLinear/DequantizeLinear on the device take uint8 or int8, got {np.dtype(self.dtype)}")
        if self.clip is not None and self.quantize:
            raise ValueError("a clip follows a DequantizeLinear only")
        object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))

    @property
    def name(self) -> str:
        return "QuantizeLinear" if self.quantize else "DequantizeLinear"

    @property
    def channels(self) -> int:
        return 1 if self.axis is None else self.shape[self.axis % len(self.shape)]

    @property
    def inner(self) -> int:
        return 1 if self.axis is None else int(np.prod(self.shape[self.axis % len(self.shape) + 1:], dtype=np.int64))

    @staticmethod
    def runs_on(capabilities: Optional[Capabilities], quantize: bool) -> bool:
        """Whether the device computes it exactly: QuantizeLinear needs double-precision
        division (shaderFloat64); DequantizeLinear runs everywhere."""
        return not quantize or (capabilities is not None and capabilities.has(FLOAT64))

    def params(self, scale, zero_point) -> np.ndarray:
        """The parameter Buffer's words for these constants."""
        c = self.channels
        scale = np.asarray(scale, np.float32).reshape(-1)
        zp = np.zeros(1, np.int32) if zero_point is None else np.asarray(zero_point).astype(np.int32).reshape(-1)
        if scale.size not in (1, c) or zp.size not in (1, scale.size):
            raise ValueError(f"{self.name}: {scale.size} scales and {zp.size} zero points for {c} channel(s)")
        words = np.empty(2 * c + (2 if self.clip is not None else 0), np.uint32)
        words[:c] = np.broadcast_to(scale, (c,)).view(np.uint32)
        words[c:2 * c] = np.broadcast_to(zp, (c,)).view(np.uint32)
        if self.clip is not None:
            words[2 * c:] = np.asarray(self.clip, np.float32).view(np.uint32)
        return words

    def kernel(self) -> Kernel:
        count = int(np.prod(self.shape, dtype=np.int64))
        if count >= 2**32 - 4:
            raise UnsupportedError(f"{self.name}: {count} elements; at most 2^32 - 5 run on the device")
        spec = dict(SIGNED=int(np.dtype(self.dtype) == np.int8), PER_AXIS=int(self.axis is not None))
        if not self.quantize:
            spec["CLAMP"] = int(self.clip is not None)
        return TABLE["quantize" if self.quantize else "dequantize"].kernel(
            spec=spec,
            push=dict(count=count, inner=self.inner, channels=self.channels),
            count=-(-count // 4), slots=(0, 1, 2), local_size=LOCAL)

    def compile(self, device: Device, choice=None) -> "QuantizeLinearOperator":
        if choice is not None and choice.strict and (choice.force is not None or choice.tuning):
            raise ValueError(f"{self.name} has one kernel: no variant to force, no tuning numbers")
        if not self.runs_on(device.capabilities, self.quantize):
            raise UnsupportedError(f"{self.name}: {device.name} has no shaderFloat64, which the exact "
                                   f"division needs (dmlvk.onnx quantizes on the host there)")
        return QuantizeLinearOperator(device, self)


class QuantizeLinearOperator(CompiledOperator):
    def __init__(self, device: Device, desc: QuantizeLinearDesc):
        self.operator_name = desc.name
        f32, q = DataType.FLOAT32, DataType.from_numpy(np.dtype(desc.dtype))
        x, y = (f32, q) if desc.quantize else (q, f32)
        params = TensorDesc(DataType.UINT32, (2 * desc.channels + (2 if desc.clip is not None else 0),))
        super().__init__(device, desc, [TensorDesc(x, desc.shape), params], [TensorDesc(y, desc.shape)],
                         [desc.kernel()])
