"""QUANTIZED_LINEAR_CONVOLUTION: the description, its geometry and DirectML's validation (spec 4,
validation spec 5.3). Its kernels are planned in variants.py."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ...enums import DataType, FeatureLevel, OperatorType, TensorFlags
from ...errors import UnsupportedError, ValidationError
from ...runtime.capabilities import Capabilities
from ...runtime.device import Device
from ...runtime.kernel import VariantChoice
from ...tensor import TensorChecker, TensorDesc, same_data_type
from .layout import (BIAS, FILTER, FILTER_SCALE, FILTER_ZP, INPUT, INPUT_SCALE, INPUT_ZP, NAMES, OP, OUTPUT,
                     OUTPUT_SCALE, OUTPUT_ZP, Q8, as_4d)
from .operator import QuantizedLinearConvolutionOperator
from .routines import plan
from .variants import TABLE

# The loop iterations a kernel may run per tap of an output, for drivers that end loops early
# (_check_loop_limit), 1 x 1 windows and larger ones. Measured on Mesa 22.3.6's lavapipe, the most
# of any kernel: 1.01 and 2.02 (3 x 3; 5 x 5 1.52, 7 x 7 1.35, 11 x 11 1.21), with a margin.
LOOP_ITERATIONS_PER_TAP = (1.1, 2.5)


def _uint_list(name, values):
    if values is None or isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"{OP}: {name} must be a sequence of integers (UINT), got {values!r}")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{OP}: {name} must hold integers (UINT), got {values!r}")
        out.append(int(v))
    return tuple(out)


def most_taps(loop_iteration_limit: int, kh: int, kw: int) -> int:
    """The most taps per output a convolution with a KH x KW window runs under that limit."""
    return int(loop_iteration_limit / LOOP_ITERATIONS_PER_TAP[kh * kw > 1])


@dataclass(frozen=True)
class QuantizedLinearConvolutionDesc:
    """DML_QUANTIZED_LINEAR_CONVOLUTION_OPERATOR_DESC. DimensionCount is len(strides)."""
    input_tensor: Optional[TensorDesc]
    input_scale_tensor: Optional[TensorDesc]
    input_zero_point_tensor: Optional[TensorDesc]
    filter_tensor: Optional[TensorDesc]
    filter_scale_tensor: Optional[TensorDesc]
    filter_zero_point_tensor: Optional[TensorDesc]
    bias_tensor: Optional[TensorDesc]
    output_scale_tensor: Optional[TensorDesc]
    output_zero_point_tensor: Optional[TensorDesc]
    output_tensor: Optional[TensorDesc]
    strides: Sequence[int] = (1, 1)
    dilations: Sequence[int] = (1, 1)
    start_padding: Sequence[int] = (0, 0)
    end_padding: Sequence[int] = (0, 0)
    group_count: int = 1
    operator_type = OperatorType.QUANTIZED_LINEAR_CONVOLUTION
    int32_output = False          # ConvIntegerDesc: the int32 accumulator is the output

    def __post_init__(self):
        for f in ("strides", "dilations", "start_padding", "end_padding"):
            object.__setattr__(self, f, _uint_list(f, getattr(self, f)))

    @property
    def dimension_count(self) -> int:
        return len(self.strides)

    def tensors(self) -> list:
        return [self.input_tensor, self.input_scale_tensor, self.input_zero_point_tensor,
                self.filter_tensor, self.filter_scale_tensor, self.filter_zero_point_tensor,
                self.bias_tensor, self.output_scale_tensor, self.output_zero_point_tensor,
                self.output_tensor]

    @classmethod
    def of(cls, input: TensorDesc, filter: TensorDesc, *, filter_scale_count: int = 1,
           input_zero_point: bool = False, filter_zero_point: bool = False, bias: bool = False,
           output_data_type: Optional[DataType] = None, output_zero_point: bool = False,
           strides=(1, 1), dilations=(1, 1), start_padding=(0, 0), end_padding=(0, 0), group_count: int = 1,
           owned_constants: bool = False, int32_output: bool = False) -> "QuantizedLinearConvolutionDesc":
        """The description of a convolution of `input` with `filter` (TensorDescs), its small tensors
        as a numpy-level call or an ONNX QLinearConv gives them: per-tensor input and output scales,
        filter_scale_count filter scales (1 or M), each zero point present or not (of its tensor's
        type; the filter's of its scale's Sizes), an INT32 bias of M values or none. The output is a
        packed tensor of output_data_type (the input's type when None) with the sizes of spec 4.3's
        formula, checked first (a stride of at least 1, a kernel within the padded input).
        owned_constants: the filter and the zero points OWNED_BY_DML (a model's constant weights,
        bound once at initialization); int32_output: ONNX's ConvInteger (ConvIntegerDesc), its
        output the INT32 accumulator."""
        for name, t in (("input", input), ("filter", filter)):
            if not isinstance(t, TensorDesc):
                raise TypeError(f"{OP}: {name} must be a TensorDesc, got {type(t).__name__}")
        rank, m = len(input.sizes), filter.sizes[0] if filter.sizes else 1

        def small(data_type, count=1, owned=False):
            shape = [1] * rank
            shape[1] = count                     # the C axis carries M, as ONNX Runtime does
            return TensorDesc(data_type, shape, flags=TensorFlags.OWNED_BY_DML if owned else TensorFlags.NONE)

        owned = lambda t: dataclasses.replace(t, flags=t.flags | TensorFlags.OWNED_BY_DML) if owned_constants else t
        out_type = DataType.INT32 if int32_output else DataType(output_data_type or input.data_type)
        desc_cls = ConvIntegerDesc if int32_output else cls
        desc = desc_cls(
            input, small(DataType.FLOAT32), small(input.data_type, owned=owned_constants) if input_zero_point else None,
            owned(filter), small(DataType.FLOAT32, filter_scale_count),
            small(filter.data_type, filter_scale_count, owned_constants) if filter_zero_point else None,
            small(DataType.INT32, m) if bias else None, small(DataType.FLOAT32),
            small(out_type) if output_zero_point else None, None,
            strides, dilations, start_padding, end_padding, group_count)
        desc._check_formula()
        return dataclasses.replace(desc, output_tensor=TensorDesc(out_type, desc.output_sizes()))

    # ---- geometry ---------------------------------------------------------------------------

    def conv_params(self) -> dict:
        """Everything in 4-D form: rank-3 tensors {N,C,W} are {N,C,1,W} (spec 4.2 recommendation)
        and a DimensionCount of 1 describes the W axis."""
        def pair(v, fill):       # DirectML reads the first two entries of longer arrays
            return tuple(v[:2]) if len(v) >= 2 else (fill,) + tuple(v)
        return dict(input=as_4d(self.input_tensor.sizes, 1), filter=as_4d(self.filter_tensor.sizes, 1),
                    strides=pair(self.strides, 1), dilations=pair(self.dilations, 1),
                    start=pair(self.start_padding, 0), end=pair(self.end_padding, 0))

    def output_grid(self) -> tuple:
        """The output grid the operator computes: the Output tensor's sizes, which DirectML does
        not require to follow the formula (output_sizes); taps outside the input read as padding."""
        return tuple(self.output_tensor.sizes)

    def off_formula(self) -> bool:
        """Whether the description leaves the convolution's formula (an output grid of other sizes,
        a zero stride or dilation, a kernel larger than the padded input, DimensionCount above 2):
        accepted as the release DirectML accepts them, and run by the portable kernel alone."""
        g = self.conv_params()
        if len(self.strides) > 2 or 0 in g["strides"] or 0 in g["dilations"] or self._kernel_past_padding():
            return True
        return self.output_grid() != tuple(self.output_sizes())

    def _kernel_past_padding(self) -> Optional[tuple]:
        """(axis, kernel size, dilation, effective kernel extent, padded input extent) of the first
        spatial axis whose dilated kernel is larger than the padded input, or None."""
        g = self.conv_params()
        for axis, size, k, d, a, b in zip(("height", "width"), g["input"][2:], g["filter"][2:], g["dilations"],
                                          g["start"], g["end"]):
            if (k - 1) * d + 1 > size + a + b:
                return axis, k, d, (k - 1) * d + 1, size + a + b
        return None

    def output_sizes(self) -> tuple:
        """Spec 4.3's formula, in the input's rank."""
        g = self.conv_params()
        n, _, h, w = g["input"]
        m, _, kh, kw = g["filter"]
        out = [n, m]
        for size, k, s, d, a, b in zip((h, w), (kh, kw), g["strides"], g["dilations"], g["start"], g["end"]):
            out.append((size + a + b - ((k - 1) * d + 1)) // s + 1)
        return tuple(out) if len(self.input_tensor.sizes) == 4 else (out[0], out[1], out[3])

    # ---- validation (spec 5.3) ----------------------------------------------------------------

    def validate(self, level: FeatureLevel, strict: bool = False) -> None:
        """What the release DirectML.dll checks at CreateOperator (measured; see README, "Semantics
        choices"); strict adds the documented checks it skips (Device(debug=True))."""
        if level < FeatureLevel.FL_2_1:                                                 # rule 1
            raise ValidationError(f"{OP} requires DML_FEATURE_LEVEL_2_1; the device was created at {level.dml_name}.")
        t = self.tensors()
        chk = [TensorChecker(OP, name, d, level, strict) for name, d in zip(NAMES, t)]
        for i in (INPUT, INPUT_SCALE, FILTER, FILTER_SCALE, OUTPUT_SCALE, OUTPUT):      # rule 2
            chk[i].required()
        for i, d in enumerate(t):
            if d is not None and not isinstance(d, TensorDesc):
                raise TypeError(f"{OP}: '{NAMES[i]}' must be a TensorDesc or None")
        wide = level >= FeatureLevel.FL_4_0                                              # rule 4
        main_ranks = {3, 4} if wide else {4}
        small_ranks = {1, 2, 3, 4} if wide else {4}
        filter_scale_ranks = ({1, 2, 3, 4} if level >= FeatureLevel.FL_5_2 else {3, 4}) if wide else {4}
        types = {INPUT: Q8, INPUT_SCALE: {DataType.FLOAT32}, INPUT_ZP: Q8, FILTER: Q8,         # rule 3
                 FILTER_SCALE: {DataType.FLOAT32}, FILTER_ZP: Q8, BIAS: {DataType.INT32},
                 OUTPUT_SCALE: {DataType.FLOAT32}, OUTPUT_ZP: Q8, OUTPUT: Q8}
        ranks = {INPUT: main_ranks, FILTER: main_ranks, OUTPUT: main_ranks, BIAS: main_ranks,
                 FILTER_SCALE: filter_scale_ranks, FILTER_ZP: filter_scale_ranks}
        for i, d in enumerate(t):
            if d is not None:
                chk[i].common(is_output=i == OUTPUT, ranks=ranks.get(i, small_ranks), types=types[i])
        for zp, of in ((INPUT_ZP, INPUT), (FILTER_ZP, FILTER), (OUTPUT_ZP, OUTPUT)):
            if t[zp] is not None:
                same_data_type(OP, NAMES[of], t[of], NAMES[zp], t[zp])
        for zp, sc in ((INPUT_ZP, INPUT_SCALE), (FILTER_ZP, FILTER_SCALE), (OUTPUT_ZP, OUTPUT_SCALE)):
            if t[zp] is not None and t[zp].sizes != t[sc].sizes:                       # DirectML's rule
                chk[zp].fail(f"has Sizes {list(t[zp].sizes)}; a zero point must have its scale's Sizes "
                             f"({NAMES[sc]}: {list(t[sc].sizes)}).")
        rank = t[INPUT].dimension_count
        # The release DirectML lets Bias be of rank 3 or 4 whatever the Input's rank; the documented
        # rule (strict) wants one rank for all four.
        for i in (FILTER, OUTPUT, BIAS) if strict else (FILTER, OUTPUT):
            if t[i] is not None and t[i].dimension_count != rank:
                chk[i].fail(f"has DimensionCount {t[i].dimension_count}; Input, Filter, Output"
                            f"{' and Bias' if strict else ''} must share one DimensionCount ({rank}).")
        dc = self.dimension_count                                                        # rule 5
        for name, vals in (("Strides", self.strides), ("Dilations", self.dilations),       # rule 6
                           ("StartPadding", self.start_padding), ("EndPadding", self.end_padding)):
            if len(vals) != dc:
                raise ValidationError(f"{OP}: {name} has {len(vals)} entries; DimensionCount is {dc}.", member=name)
            if any(not 0 <= v <= 0xFFFFFFFF for v in vals):
                raise ValidationError(f"{OP}: {name} {list(vals)}; its entries are UINT (0..2^32-1).", member=name)
        spatial = rank - 2
        if strict and dc not in ({2} if rank == 4 else {1, 2}):
            raise ValidationError(f"{OP}: DimensionCount is {dc}; it must be 2"
                                  + (" (or 1 for rank-3 tensors)." if rank == 3 else "."))
        if dc < spatial:
            # The release DirectML accepts it, then reads past the arrays (dmlvk's choice: reject).
            raise ValidationError(f"{OP}: DimensionCount is {dc}; Strides, Dilations and the paddings "
                                  f"need an entry for each of the {spatial} spatial dimensions of the tensors.")
        g = self.group_count                                                             # rule 7
        if isinstance(g, bool) or not isinstance(g, (int, np.integer)):
            raise TypeError(f"{OP}: group_count must be an integer, got {g!r}")
        geo = self.conv_params()
        n, c, h, w = geo["input"]
        m, fc, kh, kw = geo["filter"]
        if g < 1:
            raise ValidationError(f"{OP}: GroupCount is {g}; it must be at least 1.", member="GroupCount")
        if c % g:
            chk[INPUT].fail(f"has {c} channels, which is not divisible by GroupCount {g}.")
        if m % g:
            chk[FILTER].fail(f"has {m} output channels (dimension 0), which is not divisible by GroupCount {g}.")
        if fc != c // g:
            chk[FILTER].fail(f"has {fc} channels (dimension 1); expected Input channels / GroupCount = {c // g}.")
        for i in (INPUT_SCALE, INPUT_ZP, OUTPUT_SCALE, OUTPUT_ZP):                       # rule 8
            if t[i] is not None and t[i].element_count != 1:
                chk[i].fail(f"has Sizes {list(t[i].sizes)}; it must hold exactly one element (per-tensor).")
        for i in (FILTER_SCALE, FILTER_ZP):
            if t[i] is not None and not (t[i].element_count == 1 or self._per_channel(t[i].sizes, m)):
                chk[i].fail(f"has Sizes {list(t[i].sizes)}; expected one element or {m} in dimension 1 "
                            f"({self._channel_shape(max(2, t[i].dimension_count), m)}).")
        if t[BIAS] is not None and not self._per_channel(t[BIAS].sizes, m):
            chk[BIAS].fail(f"has Sizes {list(t[BIAS].sizes)}; expected "
                           f"{self._channel_shape(max(2, t[BIAS].dimension_count), m)}.")
        if strict:
            self._check_formula()
            chk[OUTPUT].sizes_equal(self.output_sizes(), "{Input N, Filter N, OH, OW} per the convolution's "
                                                         "output-size formula")
        else:
            # The release DirectML checks N and C only and computes over the grid it is given.
            chk[OUTPUT].sizes_equal((n, m) + tuple(t[OUTPUT].sizes[2:]), "{Input N, Filter N, ...}: the "
                                    "output's batch and channels")

    def _check_formula(self) -> None:
        """The documented rules the output-size formula needs (the release DirectML skips them):
        strides and dilations of at least 1, and (rule 9) a dilated kernel within the padded input."""
        for name, vals in (("Strides", self.strides), ("Dilations", self.dilations)):
            if any(v == 0 for v in vals):
                raise ValidationError(f"{OP}: {name} {list(vals)}; every {name[:-1].lower()} must be at least 1.",
                                      member=name)
        past = self._kernel_past_padding()                                                # rule 9
        if past:
            axis, k, d, eff, padded = past
            raise ValidationError(f"{OP}: tensor 'Filter' has an effective kernel {axis} of {eff} (size {k}, "
                                  f"dilation {d}), larger than the padded input {axis} {padded}.", tensor="Filter")

    @staticmethod
    def _channel_shape(rank: int, m: int) -> list:
        """A per-channel tensor's Sizes: M in dimension 1 (DirectML rejects a rank-1 {M})."""
        return [1, m] + [1] * (rank - 2)

    @classmethod
    def _per_channel(cls, sizes, m: int) -> bool:
        return len(sizes) >= 2 and list(sizes) == cls._channel_shape(len(sizes), m)

    def wide_taps(self) -> bool:
        """Whether some input position o * stride + k * dilation - start_pad, or the input's height
        or width, passes the int32 range the shaders' fast tap arithmetic uses."""
        geo = self.conv_params()
        out = as_4d(self.output_grid(), 1)
        for o, size, k, s, d, pad in zip(out[2:], geo["input"][2:], geo["filter"][2:], geo["strides"],
                                         geo["dilations"], geo["start"]):
            if (o - 1) * s + (k - 1) * d >= 2**31 or pad >= 2**31 or size >= 2**31:
                return True
        return False

    def plan(self, capabilities: Optional[Capabilities] = None, force: Optional[str] = None,
             tuning=None) -> tuple:
        """(kernels, scratch Buffer sizes) a device with these capabilities runs (None: the portable
        kernels only); force: a variant's name, tuning: numbers instead of the table's (variants.plan)."""
        return plan(self, TABLE.selection(capabilities, force, tuning))

    def compile(self, device: Device, choice: Optional[VariantChoice] = None):
        """IDMLDevice::CompileOperator (through Device.create_operator)."""
        self._check_for(device)
        return QuantizedLinearConvolutionOperator(device, self, choice)

    def compile_dequantized(self, device: Device, tail: tuple):
        """The ONNX runner's QLinearConv -> [DepthToSpace ->] DequantizeLinear as one compiled operator
        whose output is the float32 image (QuantizedLinearConvolutionOperator.dequantizing; tail:
        (block, crd, scale, zero point)), under the device's variant choice; None where its plan
        cannot fold them."""
        self._check_for(device)
        return QuantizedLinearConvolutionOperator.dequantizing(device, self, tail, device.choice())

    def _check_for(self, device: Device) -> None:
        """What compiling on this device checks first: the description at its feature level, the
        data types the device can hold, the loop limit."""
        self.validate(device.feature_level, device.debug)
        device.check_data_types(OP, zip(NAMES, self.tensors()))
        self._check_loop_limit(device)

    def _check_loop_limit(self, device: Device) -> None:
        """Refuses, rather than answer wrongly, where the driver stops an invocation's loops early
        (Capabilities.loop_iteration_limit) and this convolution's taps might reach that: the
        kernels loop over the K = C/groups x KH x KW taps of an output (most_taps)."""
        limit = device.capabilities.loop_iteration_limit
        _, cg, kh, kw = self.conv_params()["filter"]
        taps = cg * kh * kw
        if limit and taps > most_taps(limit, kh, kw):
            raise UnsupportedError(
                f"{OP}: {taps} taps per output (C/groups x KH x KW) is more than {device.name}'s driver "
                f"computes exactly: it ends a shader invocation's loops after {limit} iterations in all "
                f"(llvmpipe before Mesa 25); at most {most_taps(limit, kh, kw)} taps of a {kh} x {kw} "
                f"window run there. Mesa 25's lavapipe or a GPU driver has no such limit")


@dataclass(frozen=True)
class ConvIntegerDesc(QuantizedLinearConvolutionDesc):
    """ONNX's ConvInteger, for dmlvk.onnx (not among the DirectML operators dmlvk's API offers): a
    QUANTIZED_LINEAR_CONVOLUTION description whose output is the INT32 accumulator itself, with no
    bias and no requantization (the scale tensors are required by the layout but unused). It is
    validated as the convolution with an 8-bit output of the same sizes, and runs the portable
    shaders with their INT32_OUT specialization."""

    def validate(self, level: FeatureLevel, strict: bool = False) -> None:
        out = self.output_tensor
        if out is None or out.data_type != DataType.INT32:
            raise ValidationError(f"{OP} (ConvInteger): the output tensor must be INT32")
        if self.bias_tensor is not None:
            raise ValidationError(f"{OP} (ConvInteger): there is no bias")
        proxy = dataclasses.replace(self, output_tensor=TensorDesc(DataType.UINT8, out.sizes))
        QuantizedLinearConvolutionDesc.validate(proxy, level, strict)

    int32_output = True
