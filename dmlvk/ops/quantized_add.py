"""ELEMENT_WISE_QUANTIZED_LINEAR_ADD (spec zoo 2): the description, DirectML's validation, and its
kernel (dmlvk/shaders/quantized_add.comp), which looks each pair of 8-bit inputs up in a 256 x 256
table the host computes from the bound scales and zero points. Two arithmetics fill the table:

- DirectML's documented formula (the operator): float32 (A - AZeroPoint) * AScale plus the same of B,
  divided by OutputScale (the correctly rounded float32 quotient), rounded half to even, plus
  OutputZeroPoint, saturated; a NaN quotient (a NaN scale, 0 / 0) gives the type's lowest value. As
  the release DirectML computes it: equal on 7,864,320 pairs of bytes under 120 random parameter sets,
  and for zero, NaN, infinite and negative output scales (dmlvk_lab/directml, tests/test_directml.py);
  adding the zero point before rounding differed on 21 of them.
- onnxruntime's QLinearAdd on x86 CPUs with AVX2 and FMA (MLAS; spec zoo 10.2), which the ONNX
  runner follows: the ratios AScale / OutputScale and BScale / OutputScale and the offset
  OutputZeroPoint - fma(AZeroPoint, ratio_A, ratio_B * BZeroPoint) in float32, then per element
  fma(a, ratio_A, fma(b, ratio_B, offset)) rounded half to even and saturated. Where B is a single
  value its term is folded into the offset once by the same fma; where A is (or both are), onnxruntime
  swaps the roles: fma(b, ratio_B, fma(a, ratio_A, offset)), which differs at ties.

The table makes the device's result the host's, bit for bit, on every device: the kernel does no
arithmetic but indexing."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..enums import DataType, FeatureLevel, OperatorType
from ..errors import ValidationError
from ..runtime.capabilities import Capabilities
from ..runtime.device import Device
from ..runtime.kernel import Kernel, VariantChoice
from ..tensor import TensorChecker, TensorDesc, packed_strides, same_data_type
from .base import CompiledOperator, read_elements
from .variants import PushBlock, Table, Variant

OP = "DML_OPERATOR_ELEMENT_WISE_QUANTIZED_LINEAR_ADD"
NAMES = ("A", "AScale", "AZeroPoint", "B", "BScale", "BZeroPoint", "OutputScale", "OutputZeroPoint", "Output")
A, A_SCALE, A_ZP, B, B_SCALE, B_ZP, OUT_SCALE, OUT_ZP, OUTPUT = range(9)
PARAMS = 9                      # the parameter block's slot, after the bindings
TABLE_WORDS = 16384             # 65,536 bytes: entry 256 a + b
MAX_DIMS = 8
LOCAL = 128
_EIGHT_BIT = {DataType.UINT8, DataType.INT8}

TABLE = Table(OperatorType.ELEMENT_WISE_QUANTIZED_LINEAR_ADD.dml_name, [
    Variant("add.words", "quantized_add", ("WORDS",),
            "a packed output: an invocation writes one output word (4 elements), each looked up in the "
            "256 x 256 table by its A and B bytes, read through any strides"),
    Variant("add.elements", "quantized_add", ("WORDS",),
            "any output layout: an invocation per element, written with atomicAnd/atomicOr into its word"),
], push={"quantized_add": PushBlock([("count", 1)])})


def _saturated(q: np.ndarray, data_type: DataType) -> np.ndarray:
    """float32 values (integral or NaN, clamped) as the 8-bit type's bytes."""
    lo, hi = (-128, 127) if data_type == DataType.INT8 else (0, 255)
    return np.clip(np.nan_to_num(q, nan=0.0), lo, hi).astype(np.int64).astype(np.uint8)


def _values_of(data_type: DataType) -> np.ndarray:
    """The 256 byte values of an 8-bit type as their integers, in byte order (0..255)."""
    return np.arange(256, dtype=np.uint8).view(np.int8 if data_type == DataType.INT8 else np.uint8).astype(np.int64)


def directml_table(a_scale, a_zp, b_scale, b_zp, out_scale, out_zp, a_type, b_type, out_type) -> np.ndarray:
    """The 65,536 output bytes (entry 256 a + b for the bytes a, b) by DirectML's documented formula."""
    f32 = np.float32
    av = (_values_of(a_type) - int(a_zp)).astype(f32) * f32(a_scale)
    bv = (_values_of(b_type) - int(b_zp)).astype(f32) * f32(b_scale)
    with np.errstate(all="ignore"):
        q = (av[:, None] + bv[None, :]) / f32(out_scale)
        lo, hi = (-128, 127) if out_type == DataType.INT8 else (0, 255)
        q = np.rint(np.clip(q, f32(lo - int(out_zp) - 1), f32(hi - int(out_zp) + 1)))     # half to even
        q = np.where(np.isnan(q), f32(lo), q + f32(int(out_zp)))          # NaN: the lowest value (measured)
    return _saturated(q, out_type).reshape(-1)


def _fma32(x: np.ndarray, y, z) -> np.ndarray:
    """float32 fused multiply-add, x * y + z rounded once (the product is exact in float64; the sum's
    rounding error, from TwoSum, breaks the ties that rounding float64 to float32 would misjudge)."""
    p = np.asarray(x, np.float64) * np.float64(np.float32(y)) if np.ndim(y) == 0 else \
        np.asarray(x, np.float64) * np.asarray(y, np.float64)
    z = np.asarray(z, np.float64)
    s = p + z
    bb = s - p
    err = (p - (s - bb)) + (z - bb)
    r = s.astype(np.float32)
    toward = np.where(s > r.astype(np.float64), np.float32(np.inf), np.float32(-np.inf)).astype(np.float32)
    other = np.nextafter(r, toward)
    midpoint = (s != r.astype(np.float64)) & (2 * s == r.astype(np.float64) + other.astype(np.float64))
    fix = midpoint & (err != 0)
    up = np.maximum(r, other)
    down = np.minimum(r, other)
    return np.where(fix, np.where(err > 0, up, down), r).astype(np.float32)


def onnxruntime_table(a_scale, a_zp, b_scale, b_zp, out_scale, out_zp, a_type, b_type, out_type,
                      scalar: Optional[str] = None) -> np.ndarray:
    """The 65,536 output bytes as onnxruntime's QLinearAdd computes them on x86 with AVX2 and FMA
    (scalar: "A" or "B" where that input is one value broadcast over the other's span; "B" computes
    as two spans do). Measured against the installed onnxruntime on every pair of bytes
    (tests/test_quantized_add.py)."""
    f32 = np.float32
    if scalar == "A":                # onnxruntime swaps the roles: the span is B's
        swapped = onnxruntime_table(b_scale, b_zp, a_scale, a_zp, out_scale, out_zp, b_type, a_type, out_type, "B")
        return swapped.reshape(256, 256).T.reshape(-1)
    r_a, r_b = f32(f32(a_scale) / f32(out_scale)), f32(f32(b_scale) / f32(out_scale))
    # the offset's product and sum contracted into one fma, as the shipped build computes it (measured:
    # 0 of 19,660,800 table entries differ from the installed onnxruntime, 29 without the fma)
    offset = f32(f32(int(out_zp)) - _fma32(np.float32(int(a_zp)), r_a, f32(r_b * f32(int(b_zp)))))
    a = _values_of(a_type).astype(f32)[:, None]
    b = _values_of(b_type).astype(f32)[None, :]
    with np.errstate(all="ignore"):
        inner = _fma32(np.broadcast_to(b, (1, 256)), r_b, offset)     # a scalar B's term: once, the same fma
        v = _fma32(np.broadcast_to(a, (256, 256)), r_a, np.broadcast_to(inner, (256, 256)))
        q = np.rint(v)
    return _saturated(q, out_type).reshape(-1)


def onnxruntime_mul_table(a_scale, a_zp, b_scale, b_zp, out_scale, out_zp, a_type, b_type, out_type) -> np.ndarray:
    """The 65,536 output bytes of onnxruntime's QLinearMul on x86 (MLAS, no FMA; spec zoo 10.3): the
    integer product (a - AZeroPoint)(b - BZeroPoint), times float32(float32(AScale * BScale) /
    OutputScale) in float32, plus OutputZeroPoint in float32, rounded half to even, saturated; the
    same for a single value broadcast (measured against the installed onnxruntime on every pair)."""
    f32 = np.float32
    ratio = f32(f32(f32(a_scale) * f32(b_scale)) / f32(out_scale))
    product = (_values_of(a_type) - int(a_zp))[:, None] * (_values_of(b_type) - int(b_zp))[None, :]
    with np.errstate(all="ignore"):
        v = ((product.astype(f32) * ratio).astype(f32) + f32(int(out_zp))).astype(f32)
        q = np.rint(v)
    return _saturated(q, out_type).reshape(-1)


ARITHMETICS = ("directml", "onnxruntime", "onnxruntime-scalar-a", "onnxruntime-scalar-b", "onnxruntime-mul")


@dataclass(frozen=True)
class ElementWiseQuantizedLinearAddDesc:
    """DML_ELEMENT_WISE_QUANTIZED_LINEAR_ADD_OPERATOR_DESC (FL 4_0). arithmetic: "directml" (the
    operator), or "onnxruntime" / "onnxruntime-scalar-a" / "onnxruntime-scalar-b" (the ONNX runner's
    QLinearAdd) or "onnxruntime-mul" (its QLinearMul: the same kernel over another table), none
    part of DirectML's description."""
    a_tensor: Optional[TensorDesc]
    a_scale_tensor: Optional[TensorDesc]
    a_zero_point_tensor: Optional[TensorDesc]
    b_tensor: Optional[TensorDesc]
    b_scale_tensor: Optional[TensorDesc]
    b_zero_point_tensor: Optional[TensorDesc]
    output_scale_tensor: Optional[TensorDesc]
    output_zero_point_tensor: Optional[TensorDesc]
    output_tensor: Optional[TensorDesc]
    arithmetic: str = "directml"
    operator_type = OperatorType.ELEMENT_WISE_QUANTIZED_LINEAR_ADD

    @classmethod
    def of(cls, a: TensorDesc, b: TensorDesc, *, zero_points: bool = True, output_data_type=None,
           arithmetic: str = "directml") -> "ElementWiseQuantizedLinearAddDesc":
        """The description of A + B (TensorDescs of equal Sizes; broadcast with 0 strides), its scales
        and zero points one element each at A's rank (the zero points present or not, of their
        tensor's type), the output packed, of output_data_type (A's type when None)."""
        for name, t in (("a", a), ("b", b)):
            if not isinstance(t, TensorDesc):
                raise TypeError(f"{OP}: {name} must be a TensorDesc, got {type(t).__name__}")
        ones = (1,) * len(a.sizes)
        out_type = DataType(output_data_type or a.data_type)
        one = lambda dt: TensorDesc(dt, ones)
        zp = lambda dt: one(dt) if zero_points else None
        return cls(a, one(DataType.FLOAT32), zp(a.data_type), b, one(DataType.FLOAT32), zp(b.data_type),
                   one(DataType.FLOAT32), zp(out_type), TensorDesc(out_type, a.sizes), arithmetic)

    def tensors(self) -> tuple:
        return (self.a_tensor, self.a_scale_tensor, self.a_zero_point_tensor, self.b_tensor, self.b_scale_tensor,
                self.b_zero_point_tensor, self.output_scale_tensor, self.output_zero_point_tensor, self.output_tensor)

    def validate(self, level: FeatureLevel, strict: bool = False) -> None:
        """Spec zoo 2.4: FL 4_0; the six required tensors present; one DimensionCount for all nine;
        8-bit A, B and output with zero points of their type; float32 scales; every scale and zero
        point one element; A, B and the output of equal Sizes."""
        if level < FeatureLevel.FL_4_0:                                                # rule 1
            raise ValidationError(f"{OP} requires {FeatureLevel.FL_4_0.dml_name}; the device was created at "
                                  f"{level.dml_name}.")
        ranks = set(range(1, MAX_DIMS + 1))
        checkers = {}
        for k, (name, t) in enumerate(zip(NAMES, self.tensors())):
            if t is None and k in (A_ZP, B_ZP, OUT_ZP):
                continue
            c = TensorChecker(OP, name, t, level, strict).required()                  # rule 2
            types = {DataType.FLOAT32} if "Scale" in name else _EIGHT_BIT             # rule 7
            c.common(is_output=k == OUTPUT, ranks=ranks, types=types)
            checkers[k] = c
        rank = len(self.a_tensor.sizes)
        for k, c in checkers.items():                                                 # rule 3
            if len(c.desc.sizes) != rank:
                c.fail(f"has DimensionCount {len(c.desc.sizes)}; every tensor of {OP} must have A's, {rank}.")
        for value, zp in ((A, A_ZP), (B, B_ZP), (OUTPUT, OUT_ZP)):                    # rule 4
            if zp in checkers:
                same_data_type(OP, NAMES[value], self.tensors()[value], NAMES[zp], self.tensors()[zp])
        for k in (A_SCALE, A_ZP, B_SCALE, B_ZP, OUT_SCALE, OUT_ZP):                    # rule 5
            if k in checkers and checkers[k].desc.element_count != 1:
                checkers[k].fail(f"has Sizes {list(checkers[k].desc.sizes)}; it must hold exactly 1 element.")
        checkers[B].sizes_equal(self.a_tensor.sizes, "A's Sizes: broadcast with 0 strides")   # rule 6
        checkers[OUTPUT].sizes_equal(self.a_tensor.sizes, "A's Sizes")
        if self.arithmetic not in ARITHMETICS:
            raise ValueError(f"{OP}: unknown arithmetic {self.arithmetic!r}")

    def kernel(self, capabilities: Optional[Capabilities] = None, force: Optional[str] = None, tuning=None) -> Kernel:
        """The kernel: add.words where the output is packed, else add.elements (force: either)."""
        return _kernel(self, TABLE.selection(capabilities, force, tuning))

    def compile(self, device: Device, choice: Optional[VariantChoice] = None) -> "QuantizedLinearAddOperator":
        """IDMLDevice::CompileOperator (through Device.create_operator)."""
        self.validate(device.feature_level, device.debug)
        device.check_data_types(OP, zip(NAMES, self.tensors()))
        return QuantizedLinearAddOperator(device, self, _kernel(self, TABLE.chosen_by(device.capabilities, choice)))


def _kernel(desc: ElementWiseQuantizedLinearAddDesc, sel) -> Kernel:
    out = desc.output_tensor
    packed = tuple(out.effective_strides) == tuple(packed_strides(out.sizes))
    name = sel.force or ("add.words" if packed and "add.words" not in sel.off else "add.elements")
    if name == "add.words" and not packed:
        raise ValueError(f"{OP}: add.words writes a packed output only; the output has Strides "
                         f"{list(out.effective_strides)}")
    count = out.element_count
    items = -(-count // 4) if name == "add.words" else count
    return TABLE[name].kernel(spec=dict(WORDS=int(name == "add.words")), push=dict(count=count), count=items,
                              slots=(A, B, PARAMS, OUTPUT), local_size=sel.workgroup(LOCAL))


class QuantizedLinearAddOperator(CompiledOperator):
    operator_name = OP
    _param_slots = (A_SCALE, A_ZP, B_SCALE, B_ZP, OUT_SCALE, OUT_ZP)

    def __init__(self, device: Device, desc: ElementWiseQuantizedLinearAddDesc, kernel: Kernel):
        super().__init__(device, desc, list(desc.tensors()[:8]), [desc.output_tensor], [kernel])
        geometry = np.zeros(1 + 4 * MAX_DIMS, np.uint32)
        rank = len(desc.output_tensor.sizes)
        geometry[0] = rank
        for k, t in enumerate((None, desc.a_tensor, desc.b_tensor, desc.output_tensor)):
            row = desc.output_tensor.sizes if t is None else t.effective_strides
            geometry[1 + k * MAX_DIMS:1 + k * MAX_DIMS + rank] = row
        self._geometry = geometry

    def _parameters(self, srcs: dict) -> np.ndarray:
        """The table for the bound scales and zero points (an absent zero point: 0), then the geometry."""
        d = self.desc
        value = lambda slot: (0 if self.input_descs[slot] is None
                              else read_elements(self.input_descs[slot], srcs[slot],
                                                 self.input_descs[slot].data_type.numpy_dtype)[0])
        args = [value(k) for k in (A_SCALE, A_ZP, B_SCALE, B_ZP, OUT_SCALE, OUT_ZP)]
        types = (d.a_tensor.data_type, d.b_tensor.data_type, d.output_tensor.data_type)
        if d.arithmetic == "directml":
            table = directml_table(*args, *types)
        elif d.arithmetic == "onnxruntime-mul":
            table = onnxruntime_mul_table(*args, *types)
        else:
            scalar = {"onnxruntime": None, "onnxruntime-scalar-a": "A", "onnxruntime-scalar-b": "B"}[d.arithmetic]
            table = onnxruntime_table(*args, *types, scalar=scalar)
        return np.concatenate([table.view(np.uint32), self._geometry])
