"""JOIN and TILE (spec zoo 3 and 7): the descriptions, DirectML's validation and their kernel, a copy
of 1-, 2-, 4- or 8-byte elements through any strides (dmlvk/shaders/strided_copy.comp): JOIN one
dispatch per input, into its slice of the output along the axis; TILE one over the output, each
input coordinate taken modulo the input's size."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ..enums import DataType, FeatureLevel, OperatorType
from ..errors import ValidationError
from ..runtime.device import Device
from ..runtime.kernel import VariantChoice
from ..tensor import TensorChecker, TensorDesc, same_data_type
from .base import CompiledOperator
from .variants import PushBlock, Table, Variant

LOCAL = 128
MAX_DIMS = 8
GEOMETRY_WORDS = 34
_16_32 = {DataType.FLOAT32, DataType.FLOAT16, DataType.INT32, DataType.INT16, DataType.UINT32, DataType.UINT16}
_8 = {DataType.INT8, DataType.UINT8}
_64 = {DataType.FLOAT64, DataType.INT64, DataType.UINT64}

TABLE = Table("JOIN / TILE", [
    Variant("copy.elements", "strided_copy", ("ELEM_BYTES",),
            "an invocation per output element, its input element found through the strides (TILE: each "
            "coordinate modulo the input's size); narrow elements written with atomicAnd/atomicOr"),
], push={"strided_copy": PushBlock([("count", 1), ("geo", 1)])})


def join_types(level: FeatureLevel) -> set:
    """Spec zoo 3.3: 16/32-bit types from 1_0, 8-bit from 2_1, 64-bit from 4_1."""
    return _16_32 | (_8 if level >= FeatureLevel.FL_2_1 else set()) | (_64 if level >= FeatureLevel.FL_4_1 else set())


def tile_types(level: FeatureLevel) -> set:
    """Spec zoo 7.3: FLOAT32 and FLOAT16 from 1_0, the 8/16/32-bit integers from 2_1, 64-bit types from
    4_1: FLOAT64 too, which the spec's table leaves out and the release DirectML accepts (measured at
    FL 6_4, tests/test_directml.py)."""
    types = {DataType.FLOAT32, DataType.FLOAT16}
    if level >= FeatureLevel.FL_2_1:
        types |= (_16_32 | _8)
    if level >= FeatureLevel.FL_4_1:
        types |= _64
    return types


def ranks(level: FeatureLevel, five_from_3_0: bool) -> set:
    """4 dimensions, 4-5 from 3_0 (JOIN), 1-8 from 3_1 (the feature-level history's raise)."""
    if level >= FeatureLevel.FL_3_1:
        return set(range(1, MAX_DIMS + 1))
    return {4, 5} if five_from_3_0 and level >= FeatureLevel.FL_3_0 else {4}


def _geometry(sizes, in_strides, wrap, out_strides, out_offset) -> np.ndarray:
    geo = np.zeros(GEOMETRY_WORDS, np.uint32)
    rank = len(sizes)
    geo[0] = rank
    geo[1:1 + rank], geo[9:9 + rank], geo[17:17 + rank], geo[25:25 + rank] = sizes, in_strides, wrap, out_strides
    geo[33] = out_offset
    return geo


def _kernels(parts: Sequence[tuple], element_bytes: int, sel) -> tuple:
    """(Kernels, the parameter words) of parts [(sizes, input strides, wrap, output strides, offset)]."""
    kernels, words = [], []
    n = len(parts)
    for k, part in enumerate(parts):
        count = int(np.prod(part[0], dtype=np.int64))
        kernels.append(TABLE["copy.elements"].kernel(spec=dict(ELEM_BYTES=element_bytes),
                                                     push=dict(count=count, geo=k * GEOMETRY_WORDS), count=count,
                                                     slots=(k, n + 1, n), local_size=sel.workgroup(LOCAL)))
        words.append(_geometry(*part))
    return kernels, np.concatenate(words)


class CopyOperator(CompiledOperator):
    """JOIN's and TILE's compiled operator: the inputs, then the output; the parts' geometry a
    constant parameter block."""

    def __init__(self, device: Device, desc, inputs, output, kernels, geometry: np.ndarray):
        self._constant_params = geometry
        super().__init__(device, desc, inputs, [output], kernels, name=desc.operator_type.dml_name)


@dataclass(frozen=True)
class JoinDesc:
    """DML_JOIN_OPERATOR_DESC (FL 1_0): InputCount is len(input_tensors)."""
    input_tensors: tuple
    output_tensor: Optional[TensorDesc]
    axis: int
    operator_type = OperatorType.JOIN

    def __post_init__(self):
        if isinstance(self.input_tensors, TensorDesc) or not hasattr(self.input_tensors, "__iter__"):
            raise TypeError(f"{OperatorType.JOIN.dml_name}: input_tensors must be a sequence of TensorDescs")
        object.__setattr__(self, "input_tensors", tuple(self.input_tensors))

    @classmethod
    def of(cls, inputs: Sequence[TensorDesc], axis: int) -> "JoinDesc":
        """The inputs joined along axis, the output packed, of their type and summed sizes."""
        inputs = tuple(inputs)
        if not inputs or not all(isinstance(t, TensorDesc) for t in inputs):
            raise TypeError(f"{OperatorType.JOIN.dml_name}: inputs must be one or more TensorDescs")
        sizes = list(inputs[0].sizes)
        if 0 <= axis < len(sizes):
            sizes[axis] = sum(int(t.sizes[axis]) if axis < len(t.sizes) else 0 for t in inputs)
        return cls(inputs, TensorDesc(inputs[0].data_type, sizes), axis)

    def validate(self, level: FeatureLevel, strict: bool = False) -> None:
        """Spec zoo 3.4: at least one input; one type and DimensionCount for all; the axis below it;
        the other sizes equal the output's; the axis' sizes sum to the output's."""
        op = self.operator_type.dml_name
        if len(self.input_tensors) < 1:                                                        # rule 1
            raise ValidationError(f"{op}: InputCount is 0; it must be at least 1.", member="InputCount")
        types, allowed = join_types(level), ranks(level, True)
        out = TensorChecker(op, "Output", self.output_tensor, level, strict).required()
        out.common(is_output=True, ranks=allowed, types=types)
        for k, t in enumerate(self.input_tensors):
            c = TensorChecker(op, f"Inputs[{k}]", t, level, strict).required()
            c.common(is_output=False, ranks=allowed, types=types)
            same_data_type(op, f"Inputs[{k}]", t, "Output", self.output_tensor)                 # rule 2
            if len(t.sizes) != len(self.output_tensor.sizes):
                c.fail(f"has DimensionCount {len(t.sizes)}; the output's is {len(self.output_tensor.sizes)}.")
        rank = len(self.output_tensor.sizes)
        a = self.axis
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)) or not 0 <= a < rank:      # rule 3
            raise ValidationError(f"{op}: Axis is {a}; it must be below the DimensionCount {rank}.", member="Axis")
        want = list(self.output_tensor.sizes)
        for k, t in enumerate(self.input_tensors):                                               # rule 4
            other = [s for d, s in enumerate(t.sizes) if d != a]
            if other != [s for d, s in enumerate(want) if d != a]:
                TensorChecker(op, f"Inputs[{k}]", t, level).fail(
                    f"has Sizes {list(t.sizes)}; off the axis {a} they must be the output's {want}.")
        total = sum(int(t.sizes[a]) for t in self.input_tensors)                                # rule 5
        if total != want[a]:
            out.fail(f"has Sizes {want}; along the axis {a} the inputs' sizes sum to {total}.")

    def compile(self, device: Device, choice: Optional[VariantChoice] = None) -> CopyOperator:
        """IDMLDevice::CompileOperator (through Device.create_operator)."""
        self.validate(device.feature_level, device.debug)
        device.check_data_types(self.operator_type.dml_name,
                                [(f"Inputs[{k}]", t) for k, t in enumerate(self.input_tensors)]
                                + [("Output", self.output_tensor)])
        sel = TABLE.chosen_by(device.capabilities, choice)
        out = self.output_tensor
        parts, offset = [], 0
        for t in self.input_tensors:
            parts.append((t.sizes, t.effective_strides, (0,) * len(t.sizes), out.effective_strides,
                          offset * out.effective_strides[self.axis]))
            offset += t.sizes[self.axis]
        kernels, geometry = _kernels(parts, out.element_bytes, sel)
        return CopyOperator(device, self, list(self.input_tensors), out, kernels, geometry)


@dataclass(frozen=True)
class TileDesc:
    """DML_TILE_OPERATOR_DESC (FL 1_0): RepeatsCount is len(repeats)."""
    input_tensor: Optional[TensorDesc]
    output_tensor: Optional[TensorDesc]
    repeats: tuple
    operator_type = OperatorType.TILE

    def __post_init__(self):
        if not hasattr(self.repeats, "__iter__"):
            raise TypeError(f"{OperatorType.TILE.dml_name}: repeats must be a sequence of UINTs")
        object.__setattr__(self, "repeats", tuple(self.repeats))

    @classmethod
    def of(cls, input: TensorDesc, repeats: Sequence[int]) -> "TileDesc":
        """The input repeated, the output packed, of its type and sizes times the repeats."""
        if not isinstance(input, TensorDesc):
            raise TypeError(f"{OperatorType.TILE.dml_name}: input must be a TensorDesc, got {type(input).__name__}")
        repeats = tuple(repeats)
        sizes = [int(s) * int(r) for s, r in zip(input.sizes, repeats)] if len(repeats) == len(input.sizes) \
            else list(input.sizes)
        return cls(input, TensorDesc(input.data_type, sizes), repeats)

    def validate(self, level: FeatureLevel, strict: bool = False) -> None:
        """Spec zoo 7.4: one type and DimensionCount; RepeatsCount the DimensionCount; every repeat
        at least 1; the output's sizes the input's times the repeats."""
        op = self.operator_type.dml_name
        types, allowed = tile_types(level), ranks(level, False)
        inp = TensorChecker(op, "Input", self.input_tensor, level, strict).required()
        out = TensorChecker(op, "Output", self.output_tensor, level, strict).required()
        inp.common(is_output=False, ranks=allowed, types=types)
        out.common(is_output=True, ranks=allowed, types=types)
        same_data_type(op, "Input", self.input_tensor, "Output", self.output_tensor)          # rule 1
        rank = len(self.input_tensor.sizes)
        if len(self.output_tensor.sizes) != rank:
            out.fail(f"has DimensionCount {len(self.output_tensor.sizes)}; the input's is {rank}.")
        if len(self.repeats) != rank:                                                       # rule 2
            raise ValidationError(f"{op}: RepeatsCount is {len(self.repeats)}; it must be the input's "
                                  f"DimensionCount {rank}.", member="RepeatsCount")
        for r in self.repeats:                                                              # rule 3
            if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or not 1 <= r <= 0xFFFFFFFF:
                raise ValidationError(f"{op}: Repeats {list(self.repeats)}; each must be a UINT of at least 1.",
                                      member="Repeats")
        out.sizes_equal([int(s) * int(r) for s, r in zip(self.input_tensor.sizes, self.repeats)],
                        "the input's Sizes times Repeats")                                   # rule 4

    def compile(self, device: Device, choice: Optional[VariantChoice] = None) -> CopyOperator:
        """IDMLDevice::CompileOperator (through Device.create_operator)."""
        self.validate(device.feature_level, device.debug)
        device.check_data_types(self.operator_type.dml_name,
                                (("Input", self.input_tensor), ("Output", self.output_tensor)))
        sel = TABLE.chosen_by(device.capabilities, choice)
        inp, out = self.input_tensor, self.output_tensor
        kernels, geometry = _kernels([(out.sizes, inp.effective_strides, inp.sizes, out.effective_strides, 0)],
                                     out.element_bytes, sel)
        return CopyOperator(device, self, [inp], out, kernels, geometry)
