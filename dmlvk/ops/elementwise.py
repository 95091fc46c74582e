"""ELEMENT_WISE_ADD, ELEMENT_WISE_MULTIPLY and ELEMENT_WISE_CLIP (spec zoo 5): the descriptions,
DirectML's validation and their kernel (dmlvk/shaders/elementwise.comp), element by element through
any strides (broadcasting is a stride of 0). The arithmetic is DirectML's as measured under Wine
(docs/directml.md): float32 in float32; float16 read exactly, computed in float32 and rounded once
toward zero, past the largest finite float16 an infinity; integers wrap (two's complement, 64-bit
ones too). CLIP applies x * Scale + Bias (two roundings, no fused multiply-add) where a ScaleBias is
given, then min(Max, .) and max(Min, .) (a NaN becomes Max; Min wins where Min > Max); Min and Max
as the element type's values: truncated toward zero and saturated for integers, rounded to
float16 for float16; integers under a ScaleBias go through float32, truncated toward zero."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..enums import DataType, FeatureLevel, OperatorType
from ..errors import ValidationError
from ..runtime.device import Device
from ..runtime.kernel import VariantChoice
from ..tensor import TensorDesc
from .base import CompiledOperator, check_alike, strided_geometry
from .variants import PushBlock, Table, Variant

LOCAL = 128
MAX_DIMS = 8
GEOMETRY_WORDS = 40        # the dimension count, sizes [8], three tensors' strides [8 each], then CLIP's words
_TYPE_CODE = {DataType.FLOAT32: 0, DataType.FLOAT16: 1, DataType.INT32: 2, DataType.UINT32: 3, DataType.INT16: 4,
              DataType.UINT16: 5, DataType.INT8: 6, DataType.UINT8: 7, DataType.INT64: 8, DataType.UINT64: 9}
_OP_CODE = {OperatorType.ELEMENT_WISE_ADD: 0, OperatorType.ELEMENT_WISE_MULTIPLY: 1, OperatorType.ELEMENT_WISE_CLIP: 2}
_F = {DataType.FLOAT32, DataType.FLOAT16}
_32 = {DataType.INT32, DataType.UINT32}
_64 = {DataType.INT64, DataType.UINT64}
_SMALL = {DataType.INT16, DataType.INT8, DataType.UINT16, DataType.UINT8}

TABLE = Table("ELEMENT_WISE_ADD / MULTIPLY / CLIP", [
    Variant("elementwise.elements", "elementwise", ("TYPE", "OP"),
            "an invocation per output element through the strides (a stride of 0 broadcasts); float16 "
            "computed in float32 and rounded toward zero, integers wrapping, 64-bit ones as word pairs; "
            "narrow elements written with atomicAnd/atomicOr"),
], push={"elementwise": PushBlock([("count", 1)])})


def binary_types(level: FeatureLevel) -> set:
    """Spec zoo 5.3 (ADD; MULTIPLY alike): float32 and float16; 32-bit integers from 2_1, 64-bit from
    4_1, 8- and 16-bit from 5_1."""
    types = set(_F)
    if level >= FeatureLevel.FL_2_1:
        types |= _32
    if level >= FeatureLevel.FL_4_1:
        types |= _64
    if level >= FeatureLevel.FL_5_1:
        types |= _SMALL
    return types


def clip_types(level: FeatureLevel) -> set:
    """Spec zoo 5.3 (CLIP): float32 and float16; the 8- to 32-bit integers from 2_1, 64-bit from 5_0."""
    types = set(_F)
    if level >= FeatureLevel.FL_2_1:
        types |= _32 | _SMALL
    if level >= FeatureLevel.FL_5_0:
        types |= _64
    return types


def elementwise_ranks(level: FeatureLevel, four_or_five: bool) -> set:
    """4 dimensions (ADD and MULTIPLY: 4 or 5) before 3_0, 1-8 from 3_0."""
    if level >= FeatureLevel.FL_3_0:
        return set(range(1, MAX_DIMS + 1))
    return {4, 5} if four_or_five else {4}


class ElementWiseOperator(CompiledOperator):
    """The inputs, then the output; in place where the output is an input's Buffer laid out alike."""
    _in_place = True

    def __init__(self, device: Device, desc, inputs, kernel, geometry: np.ndarray):
        self._constant_params = geometry
        super().__init__(device, desc, inputs, [desc.output_tensor], [kernel], name=desc.operator_type.dml_name)


def _bound_bits(value: float, dt: DataType) -> tuple:
    """CLIP's Min or Max as the element type's value, in two words (low, high): floats as float32
    bits; integers as DirectML converts them (measured): truncated toward zero and saturated to the
    type."""
    if dt in _F:
        return int(np.float32(value).view(np.uint32)), 0
    info = np.iinfo(dt.numpy_dtype)
    v = float(np.float32(value))
    q = info.min if np.isnan(v) else int(np.clip(np.trunc(v), info.min, info.max)) if np.isfinite(v) else \
        (info.max if v > 0 else info.min)
    bits = q & 0xFFFFFFFFFFFFFFFF
    return bits & 0xFFFFFFFF, bits >> 32


class _ElementWise:
    operator_type: OperatorType

    def _tensors(self) -> list:
        raise NotImplementedError

    def _types(self, level: FeatureLevel) -> set:
        raise NotImplementedError

    def validate(self, level: FeatureLevel, strict: bool = False) -> None:
        """Spec zoo 5.4: every tensor of one DataType, DimensionCount and Sizes; the types and ranks of
        the feature level. Broadcasting is strides of 0 at equal Sizes (a B of other Sizes is rejected,
        as DirectML rejects it)."""
        check_alike(self.operator_type.dml_name, self._tensors(), level, strict,
                    elementwise_ranks(level, self.operator_type != OperatorType.ELEMENT_WISE_CLIP), self._types(level))

    def _clip_words(self) -> list:
        return [0] * 7

    def compile(self, device: Device, choice: Optional[VariantChoice] = None) -> ElementWiseOperator:
        """IDMLDevice::CompileOperator (through Device.create_operator)."""
        self.validate(device.feature_level, device.debug)
        device.check_data_types(self.operator_type.dml_name, self._tensors())
        sel = TABLE.chosen_by(device.capabilities, choice)
        tensors = [t for _, t in self._tensors()]
        a, out = tensors[0], tensors[-1]
        b = tensors[1] if len(tensors) == 3 else a
        geo = strided_geometry(a.sizes, (a.effective_strides, b.effective_strides, out.effective_strides),
                               GEOMETRY_WORDS)
        geo[33:40] = self._clip_words()
        count = out.element_count
        binary = len(tensors) == 3
        kernel = TABLE["elementwise.elements"].kernel(
            spec=dict(TYPE=_TYPE_CODE[DataType(a.data_type)], OP=_OP_CODE[self.operator_type]),
            push=dict(count=count), count=count,
            slots=(0, 1 if binary else 0, len(tensors), len(tensors) - 1), local_size=sel.workgroup(LOCAL))
        return ElementWiseOperator(device, self, tensors[:-1], kernel, geo)


def _binary_of(cls, a: TensorDesc, b: TensorDesc):
    if not isinstance(a, TensorDesc) or not isinstance(b, TensorDesc):
        raise TypeError(f"{cls.operator_type.dml_name}: a and b must be TensorDescs")
    return cls(a, b, TensorDesc(a.data_type, a.sizes))


@dataclass(frozen=True)
class ElementWiseAddDesc(_ElementWise):
    """DML_ELEMENT_WISE_ADD_OPERATOR_DESC (FL 1_0): A + B."""
    a_tensor: Optional[TensorDesc]
    b_tensor: Optional[TensorDesc]
    output_tensor: Optional[TensorDesc]
    operator_type = OperatorType.ELEMENT_WISE_ADD

    @classmethod
    def of(cls, a: TensorDesc, b: TensorDesc) -> "ElementWiseAddDesc":
        """A + B, the output packed, of A's type and Sizes (broadcast B through strides of 0)."""
        return _binary_of(cls, a, b)

    def _tensors(self) -> list:
        return [("A", self.a_tensor), ("B", self.b_tensor), ("Output", self.output_tensor)]

    def _types(self, level: FeatureLevel) -> set:
        return binary_types(level)


@dataclass(frozen=True)
class ElementWiseMultiplyDesc(ElementWiseAddDesc):
    """DML_ELEMENT_WISE_MULTIPLY_OPERATOR_DESC (FL 1_0): A x B."""
    operator_type = OperatorType.ELEMENT_WISE_MULTIPLY


@dataclass(frozen=True)
class ElementWiseClipDesc(_ElementWise):
    """DML_ELEMENT_WISE_CLIP_OPERATOR_DESC (FL 1_0): max(Min, min(Max, x * Scale + Bias)), the
    ScaleBias (Scale, Bias) optional (None: x); 64-bit integers take none but (1, 0), as the release
    DirectML rules (measured)."""
    input_tensor: Optional[TensorDesc]
    output_tensor: Optional[TensorDesc]
    scale_bias: Optional[tuple]
    min: float
    max: float
    operator_type = OperatorType.ELEMENT_WISE_CLIP

    @classmethod
    def of(cls, input: TensorDesc, min: float, max: float, scale_bias: Optional[tuple] = None) -> "ElementWiseClipDesc":
        if not isinstance(input, TensorDesc):
            raise TypeError(f"{cls.operator_type.dml_name}: input must be a TensorDesc, got {type(input).__name__}")
        return cls(input, TensorDesc(input.data_type, input.sizes), scale_bias, min, max)

    def _tensors(self) -> list:
        return [("Input", self.input_tensor), ("Output", self.output_tensor)]

    def _types(self, level: FeatureLevel) -> set:
        return clip_types(level)

    def validate(self, level: FeatureLevel, strict: bool = False) -> None:
        op = self.operator_type.dml_name
        for name, v in (("Min", self.min), ("Max", self.max)):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise TypeError(f"{op}: {name} must be a FLOAT, got {v!r}")
        if self.scale_bias is not None:
            sb = self.scale_bias
            if not (hasattr(sb, "__len__") and len(sb) == 2 and all(
                    not isinstance(v, bool) and isinstance(v, (int, float, np.integer, np.floating)) for v in sb)):
                raise TypeError(f"{op}: scale_bias must be None or (Scale, Bias) FLOATs, got {sb!r}")
        super().validate(level, strict)
        if DataType(self.input_tensor.data_type) in _64 and not self._no_scale_bias():        # measured
            raise ValidationError(f"{op}: ScaleBias {tuple(self.scale_bias)} on {DataType(self.input_tensor.data_type).dml_name}; "
                                  f"64-bit integers take no ScaleBias but (1, 0).", member="ScaleBias")

    def _clip_words(self) -> list:
        """The kernel's CLIP words: the ScaleBias flag, Scale and Bias, Min and Max (see
        elementwise.comp). An integer ScaleBias of (1, 0) is no ScaleBias (measured: DirectML keeps
        int32 values past 2^24 exact under it)."""
        dt = DataType(self.input_tensor.data_type)
        sb = None if dt not in _F and self._no_scale_bias() else self.scale_bias
        scale, bias = (1.0, 0.0) if sb is None else sb
        if sb is not None and dt not in _F:                   # the bounds in float32, as the values
            bound = lambda v: (int(np.float32(v).view(np.uint32)), 0)
        elif dt == DataType.FLOAT16:                          # rounded to float16 (to nearest) first
            bound = lambda v: (int(np.float32(np.float16(v)).view(np.uint32)), 0)
        else:
            bound = lambda v: _bound_bits(v, dt)
        return [int(sb is not None), int(np.float32(scale).view(np.uint32)), int(np.float32(bias).view(np.uint32)),
                *bound(self.min), *bound(self.max)]

    def _no_scale_bias(self) -> bool:
        """No ScaleBias, or (1, 0) as float32s."""
        return self.scale_bias is None or tuple(float(np.float32(v)) for v in self.scale_bias) == (1.0, 0.0)

