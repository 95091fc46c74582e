"""DEPTH_TO_SPACE, SPACE_TO_DEPTH and their "1" forms: the descriptions and DirectML's validation
(spec 3, validation spec 5.2). Their kernels are chosen in variants.py."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ...enums import DataType, DepthSpaceOrder, FeatureLevel, OperatorType
from ...errors import ValidationError
from ...runtime.capabilities import Capabilities
from ...runtime.device import Device
from ...runtime.kernel import Kernel, VariantChoice
from ...tensor import TensorChecker, TensorDesc, same_data_type
from ..base import CompiledOperator
from .routines import select
from .variants import TABLE

_FLOAT = {DataType.FLOAT32, DataType.FLOAT16}
_INT = {DataType.INT32, DataType.INT16, DataType.INT8, DataType.UINT32, DataType.UINT16, DataType.UINT8}
_WIDE = {DataType.FLOAT64, DataType.INT64, DataType.UINT64}


def supported_types(level: FeatureLevel) -> set:
    """Spec 3.4: FP32/FP16 from 1_0, 8/16/32-bit integers from 2_1, 64-bit types from 5_0."""
    types = set(_FLOAT)
    if level >= FeatureLevel.FL_2_1:
        types |= _INT
    if level >= FeatureLevel.FL_5_0:
        types |= _WIDE
    return types


class _DepthSpaceDesc:
    operator_type: OperatorType
    depth_to_space: bool
    min_level: FeatureLevel

    @property
    def effective_order(self) -> DepthSpaceOrder:
        return DepthSpaceOrder.DEPTH_COLUMN_ROW   # the non-1 operators (spec 3.1)

    def output_sizes(self, input_sizes) -> tuple:
        n, c, h, w = input_sizes
        b = self.block_size
        if self.depth_to_space:
            return (n, c // (b * b), h * b, w * b)
        return (n, c * b * b, h // b, w // b)

    @classmethod
    def of(cls, input: TensorDesc, block_size: int, *order):
        """The description of this operator on `input` (order: the "1" forms' DepthSpaceOrder),
        its output a packed tensor of the input's type and the sizes spec 3.3's formula gives. The
        block size and the input's sizes are checked first (the rules validate() applies)."""
        if not isinstance(input, TensorDesc):
            raise TypeError(f"input must be a TensorDesc, got {type(input).__name__}")
        probe = cls(input, input, block_size, *order)
        probe._check_block(TensorChecker(cls.operator_type.dml_name, "Input", input, FeatureLevel.FL_6_4, False))
        return cls(input, TensorDesc(input.data_type, probe.output_sizes(input.sizes)), block_size, *order)

    def _check_block(self, inp: TensorChecker) -> None:
        """Spec 5.2 rules 4-7: the block size, the order, and the input's sizes against them."""
        op = self.operator_type.dml_name
        b = self.block_size
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)):
            raise TypeError(f"{op}: block_size must be an integer, got {b!r}")
        if b < 1:                                                                  # 5.2 rule 4
            raise ValidationError(f"{op}: BlockSize is {b}; it must be at least 1.", member="BlockSize")
        if b > 0xFFFFFFFF:
            raise ValidationError(f"{op}: BlockSize {b} does not fit a UINT.", member="BlockSize")
        if not isinstance(getattr(self, "order", DepthSpaceOrder.DEPTH_COLUMN_ROW), DepthSpaceOrder):            # 5.2 rule 5
            raise ValidationError(f"{op}: Order is {self.order!r}; it must be "
                                  f"DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW (0) or _COLUMN_ROW_DEPTH (1).",
                                  member="Order")
        if len(self.input_tensor.sizes) != 4:
            inp.fail(f"has {len(self.input_tensor.sizes)} dimensions; it must have 4.")
        n, c, h, w = self.input_tensor.sizes
        if self.depth_to_space:                                                    # 5.2 rule 6
            if c % (b * b):
                inp.fail(f"has {c} channels, which is not divisible by BlockSize^2 = {b * b}.")
        elif h % b or w % b:                                                       # 5.2 rule 7
            inp.fail(f"has height {h} and width {w}; both must be divisible by BlockSize {b}.")

    def validate(self, level: FeatureLevel, strict: bool = False) -> None:
        """What DirectML checks at CreateOperator; strict adds the documented checks the release
        DirectML.dll skips (Device(debug=True))."""
        op = self.operator_type.dml_name
        if level < self.min_level:                                                # 5.2 rule 8
            raise ValidationError(f"{op} requires {self.min_level.dml_name}; the device was created "
                                  f"at {level.dml_name}.")
        types = supported_types(level)
        inp = TensorChecker(op, "Input", self.input_tensor, level, strict).required()   # 5.2 rule 1, 3
        out = TensorChecker(op, "Output", self.output_tensor, level, strict).required()
        inp.common(is_output=False, ranks={4}, types=types)
        out.common(is_output=True, ranks={4}, types=types)
        same_data_type(op, "Input", self.input_tensor, "Output", self.output_tensor)  # 5.2 rule 2
        self._check_block(inp)
        why = ("{N, C/(BlockSize^2), H*BlockSize, W*BlockSize}" if self.depth_to_space
               else "{N, C*BlockSize^2, H/BlockSize, W/BlockSize}")
        out.sizes_equal(self.output_sizes(self.input_tensor.sizes), why)

    def kernel(self, capabilities: Optional[Capabilities] = None, force: Optional[str] = None,
               tuning=None) -> Kernel:
        """The kernel a device with these capabilities runs (None: the portable variants only);
        force: a variant's name, tuning: numbers instead of the table's (variants.select)."""
        return select(self, TABLE.selection(capabilities, force, tuning))

    def sides(self) -> tuple:
        """(depth side, space side): the input and the output in the operator's direction."""
        inp, out = self.input_tensor, self.output_tensor
        return (inp, out) if self.depth_to_space else (out, inp)

    def compile(self, device: Device, choice: Optional[VariantChoice] = None) -> CompiledOperator:
        """IDMLDevice::CompileOperator (through Device.create_operator): validated at the device's
        feature level, its kernel chosen for the device's capabilities."""
        self.validate(device.feature_level, device.debug)
        device.check_data_types(self.operator_type.dml_name,
                                (("Input", self.input_tensor), ("Output", self.output_tensor)))
        kernel = select(self, TABLE.chosen_by(device.capabilities, choice))
        return CompiledOperator(device, self, [self.input_tensor], [self.output_tensor], [kernel],
                                name=self.operator_type.dml_name)

@dataclass(frozen=True)
class DepthToSpaceDesc(_DepthSpaceDesc):
    """DML_DEPTH_TO_SPACE_OPERATOR_DESC (FL 1_0; always DEPTH_COLUMN_ROW)."""
    input_tensor: Optional[TensorDesc]
    output_tensor: Optional[TensorDesc]
    block_size: int
    operator_type = OperatorType.DEPTH_TO_SPACE
    depth_to_space = True
    min_level = FeatureLevel.FL_1_0


@dataclass(frozen=True)
class SpaceToDepthDesc(_DepthSpaceDesc):
    """DML_SPACE_TO_DEPTH_OPERATOR_DESC (FL 1_0; always DEPTH_COLUMN_ROW)."""
    input_tensor: Optional[TensorDesc]
    output_tensor: Optional[TensorDesc]
    block_size: int
    operator_type = OperatorType.SPACE_TO_DEPTH
    depth_to_space = False
    min_level = FeatureLevel.FL_1_0


def _order_field(order):
    try:
        return DepthSpaceOrder(order)
    except (ValueError, TypeError):
        return order        # kept as given; validation rejects it as DirectML would


class _Ordered:
    """The "1" operators' Order member: kept as a DepthSpaceOrder where it is one (validation
    rejects other values as DirectML does)."""

    def __post_init__(self):
        object.__setattr__(self, "order", _order_field(self.order))

    @property
    def effective_order(self):
        return self.order


@dataclass(frozen=True)
class DepthToSpace1Desc(_Ordered, _DepthSpaceDesc):
    """DML_DEPTH_TO_SPACE1_OPERATOR_DESC (FL 2_1)."""
    input_tensor: Optional[TensorDesc]
    output_tensor: Optional[TensorDesc]
    block_size: int
    order: DepthSpaceOrder
    operator_type = OperatorType.DEPTH_TO_SPACE1
    depth_to_space = True
    min_level = FeatureLevel.FL_2_1


@dataclass(frozen=True)
class SpaceToDepth1Desc(_Ordered, _DepthSpaceDesc):
    """DML_SPACE_TO_DEPTH1_OPERATOR_DESC (FL 2_1)."""
    input_tensor: Optional[TensorDesc]
    output_tensor: Optional[TensorDesc]
    block_size: int
    order: DepthSpaceOrder
    operator_type = OperatorType.SPACE_TO_DEPTH1
    depth_to_space = False
    min_level = FeatureLevel.FL_2_1
