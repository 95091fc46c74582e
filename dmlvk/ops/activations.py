"""ACTIVATION_LEAKY_RELU and ACTIVATION_PARAMETERIZED_RELU (spec zoo 4): the descriptions, DirectML's
validation and their kernel (dmlvk/shaders/activation.comp): y = x >= 0 ? x : a * x, a the Alpha or the
slope tensor's element, through any strides. Both may run in place (the output bound to the input's
own Buffer, laid out alike)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..enums import DataType, FeatureLevel, OperatorType
from ..runtime.device import Device
from ..runtime.kernel import VariantChoice
from ..tensor import TensorDesc
from .base import CompiledOperator, check_alike, strided_geometry
from .variants import PushBlock, Table, Variant

LOCAL = 128
MAX_DIMS = 8
_FLOATS = {DataType.FLOAT32, DataType.FLOAT16}
_TYPE_CODE = {DataType.FLOAT32: 0, DataType.FLOAT16: 1, DataType.INT32: 2, DataType.INT16: 3, DataType.INT8: 4}

TABLE = Table("ACTIVATION_LEAKY_RELU / ACTIVATION_PARAMETERIZED_RELU", [
    Variant("activation.elements", "activation", ("TYPE", "PRELU"),
            "an invocation per element through the strides; float16 computed in float32 and rounded once "
            "toward zero (as DirectML, in integer arithmetic); narrow elements written with atomicAnd/atomicOr"),
], push={"activation": PushBlock([("count", 1)])})


def activation_ranks(level: FeatureLevel) -> set:
    """Spec zoo 4.3: 4 dimensions, 4-5 from 2_0, 1-8 from 3_0."""
    if level >= FeatureLevel.FL_3_0:
        return set(range(1, MAX_DIMS + 1))
    return {4, 5} if level >= FeatureLevel.FL_2_0 else {4}


class ActivationOperator(CompiledOperator):
    """The input (and PRELU's slope), then the output; in place where the output is the input's Buffer
    and its layout is the input's."""
    _in_place = True

    def __init__(self, device: Device, desc, inputs, kernel, geometry: np.ndarray):
        self._constant_params = geometry
        super().__init__(device, desc, inputs, [desc.output_tensor], [kernel], name=desc.operator_type.dml_name)


class _Activation:
    operator_type: OperatorType

    def _tensors(self) -> list:
        raise NotImplementedError

    def _types(self, level: FeatureLevel) -> set:
        return set(_FLOATS)

    def validate(self, level: FeatureLevel, strict: bool = False) -> None:
        """Spec zoo 4.4: every tensor of one DataType, DimensionCount and Sizes; the types and ranks
        of the feature level."""
        check_alike(self.operator_type.dml_name, self._tensors(), level, strict, activation_ranks(level),
                    self._types(level))

    def compile(self, device: Device, choice: Optional[VariantChoice] = None) -> ActivationOperator:
        """IDMLDevice::CompileOperator (through Device.create_operator)."""
        self.validate(device.feature_level, device.debug)
        device.check_data_types(self.operator_type.dml_name, self._tensors())
        sel = TABLE.chosen_by(device.capabilities, choice)
        tensors = [t for _, t in self._tensors()]
        inp, out = tensors[0], tensors[-1]
        slope = tensors[1] if len(tensors) == 3 else inp
        geo = strided_geometry(inp.sizes, (inp.effective_strides, slope.effective_strides, out.effective_strides), 34)
        geo[33] = np.float32(getattr(self, "alpha", 0.0)).view(np.uint32)
        count = inp.element_count
        prelu = len(tensors) == 3
        kernel = TABLE["activation.elements"].kernel(
            spec=dict(TYPE=_TYPE_CODE[DataType(inp.data_type)], PRELU=int(prelu)), push=dict(count=count),
            count=count, slots=(0, 1 if prelu else 0, len(tensors), len(tensors) - 1),
            local_size=sel.workgroup(LOCAL))
        return ActivationOperator(device, self, tensors[:-1], kernel, geo)


@dataclass(frozen=True)
class ActivationLeakyReluDesc(_Activation):
    """DML_ACTIVATION_LEAKY_RELU_OPERATOR_DESC (FL 1_0): FLOAT32, FLOAT16."""
    input_tensor: Optional[TensorDesc]
    output_tensor: Optional[TensorDesc]
    alpha: float = 0.01
    operator_type = OperatorType.ACTIVATION_LEAKY_RELU

    @classmethod
    def of(cls, input: TensorDesc, alpha: float = 0.01) -> "ActivationLeakyReluDesc":
        if not isinstance(input, TensorDesc):
            raise TypeError(f"{cls.operator_type.dml_name}: input must be a TensorDesc, got {type(input).__name__}")
        return cls(input, TensorDesc(input.data_type, input.sizes), alpha)

    def _tensors(self) -> list:
        return [("Input", self.input_tensor), ("Output", self.output_tensor)]

    def validate(self, level: FeatureLevel, strict: bool = False) -> None:
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float, np.floating, np.integer)):
            raise TypeError(f"{self.operator_type.dml_name}: alpha must be a FLOAT, got {self.alpha!r}")
        super().validate(level, strict)


@dataclass(frozen=True)
class ActivationParameterizedReluDesc(_Activation):
    """DML_ACTIVATION_PARAMETERIZED_RELU_OPERATOR_DESC (FL 1_0): FLOAT32, FLOAT16; INT32, INT16, INT8
    from FL 5_1. A slope per channel is given at the input's Sizes with 0 strides elsewhere."""
    input_tensor: Optional[TensorDesc]
    slope_tensor: Optional[TensorDesc]
    output_tensor: Optional[TensorDesc]
    operator_type = OperatorType.ACTIVATION_PARAMETERIZED_RELU

    @classmethod
    def of(cls, input: TensorDesc, slope: TensorDesc) -> "ActivationParameterizedReluDesc":
        if not isinstance(input, TensorDesc) or not isinstance(slope, TensorDesc):
            raise TypeError(f"{cls.operator_type.dml_name}: input and slope must be TensorDescs")
        return cls(input, slope, TensorDesc(input.data_type, input.sizes))

    def _tensors(self) -> list:
        return [("Input", self.input_tensor), ("Slope", self.slope_tensor), ("Output", self.output_tensor)]

    def _types(self, level: FeatureLevel) -> set:
        extra = {DataType.INT32, DataType.INT16, DataType.INT8} if level >= FeatureLevel.FL_5_1 else set()
        return set(_FLOATS) | extra
