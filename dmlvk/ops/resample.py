"""RESAMPLE, RESAMPLE1, RESAMPLE2 and RESAMPLE3 (spec zoo 6): the descriptions, DirectML's validation
and their kernel (dmlvk/shaders/resample.comp).

Every version maps output coordinate o of dimension d to the input coordinate
x = (o - OutputPixelOffset) * (1 / Scale) - InputPixelOffset, each step in float32 (the reciprocal too):
DirectML multiplies by the scale's reciprocal rather than dividing (measured: its linear weights equal
this bit for bit where a division gives others). RESAMPLE is RESAMPLE1 with InputPixelOffsets 0.5
and OutputPixelOffsets -0.5. Nearest neighbour picks floor(x + 0.5) (RESAMPLE and RESAMPLE1 of float
types), floor(x) (RESAMPLE and RESAMPLE1 of 8-bit types: measured), ceil(x) (RESAMPLE2/3, RoundingDirection
INCREASING) or floor(x) (DECREASING); linear clamps x into [0, size - 1] first, then takes the input
elements floor(x) and floor(x) + 1 with weights 1 - w and w, w = x - floor(x). Every index is clamped
to [0, size - 1]. Those coordinates are computed here on the host, one table entry an output
coordinate of each dimension (a GPU's arithmetic may differ, spec zoo 1.6), so the kernel only
gathers and, for linear, weighs. docs/directml.md names where DirectML's linear weights differ.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ..enums import AxisDirection, DataType, FeatureLevel, InterpolationMode, OperatorType
from ..errors import UnsupportedError, ValidationError
from ..runtime.device import Device
from ..runtime.kernel import VariantChoice
from ..tensor import TensorChecker, TensorDesc, same_data_type
from .base import CompiledOperator
from .variants import PushBlock, Table, Variant

LOCAL = 128
MAX_DIMS = 4
HEADER_WORDS = 21           # the dimension count, output sizes [4], output strides [4], input strides [4], tables [4],
                            # input sizes [4]
_FLOATS = {DataType.FLOAT32, DataType.FLOAT16}
_EIGHT = {DataType.INT8, DataType.UINT8}
_TYPE_CODE = {DataType.FLOAT32: 0, DataType.FLOAT16: 1, DataType.INT8: 2, DataType.UINT8: 3}
# the feature level each version came with (spec zoo 1.1)
INTRODUCED = {OperatorType.RESAMPLE: FeatureLevel.FL_2_0, OperatorType.RESAMPLE1: FeatureLevel.FL_2_1,
              OperatorType.RESAMPLE2: FeatureLevel.FL_5_1, OperatorType.RESAMPLE3: FeatureLevel.FL_6_4}

TABLE = Table("RESAMPLE", [
    Variant("resample.elements", "resample", ("TYPE", "LINEAR"),
            "an invocation per output element through the strides: nearest neighbour a gather through one "
            "host-made table of input indices per dimension; linear the 2^d neighbours weighed in float32, "
            "v0 + (v1 - v0) * w dimension by dimension from the first (float16 rounded once toward zero, 8-bit "
            "truncated toward zero, as DirectML); narrow elements written with atomicAnd/atomicOr"),
], push={"resample": PushBlock([("count", 1)])})


def resample_types(level: FeatureLevel) -> set:
    """Spec zoo 6.3: FLOAT32 and FLOAT16; INT8 and UINT8 from 6_2."""
    return _FLOATS | (_EIGHT if level >= FeatureLevel.FL_6_2 else set())


def resample_ranks(level: FeatureLevel) -> set:
    """Spec zoo 6.3: 4 dimensions; 1 to 4 from 5_1 (RESAMPLE2 and RESAMPLE3 came at 5_1 or later)."""
    return set(range(1, MAX_DIMS + 1)) if level >= FeatureLevel.FL_5_1 else {4}


def input_coordinates(out_size: int, scale: float, input_offset: float, output_offset: float) -> np.ndarray:
    """x = (o - OutputPixelOffset) * (1 / Scale) - InputPixelOffset for o = 0 .. out_size - 1, each
    step a float32 operation (spec zoo 6.2, with DirectML's reciprocal)."""
    f32 = np.float32
    o = np.arange(out_size, dtype=np.float64).astype(f32)
    with np.errstate(all="ignore"):
        inverse = f32(1) / f32(scale)
        return ((o - f32(output_offset)) * inverse - f32(input_offset)).astype(f32)


def nearest_indices(in_size: int, x: np.ndarray, version: int, rounding: AxisDirection,
                    eight_bit: bool = False) -> np.ndarray:
    """The input index nearest to each coordinate: floor(x + 0.5) for RESAMPLE and RESAMPLE1 (floor(x)
    for their 8-bit types), ceil(x) or floor(x) by RoundingDirection for RESAMPLE2/3, clamped to the
    input (NaN: index 0)."""
    with np.errstate(all="ignore"):
        if version < 2 and eight_bit:
            pick = np.floor(x)
        elif version < 2:
            pick = np.floor((x + np.float32(0.5)).astype(np.float32))
        else:
            pick = np.ceil(x) if rounding == AxisDirection.INCREASING else np.floor(x)
    pick = np.where(np.isnan(pick), 0, pick)
    return np.clip(pick, 0, in_size - 1).astype(np.int64)


def linear_taps(in_size: int, x: np.ndarray) -> tuple:
    """(first index, second index, first weight, second weight) of each coordinate clamped into
    [0, in_size - 1] (NaN: 0): floor(x) and floor(x) + 1 (at most in_size - 1), weights 1 - w and w for
    w = x - floor(x), in float32."""
    x = np.where(np.isnan(x), np.float32(0), np.clip(x, np.float32(0), np.float32(in_size - 1))).astype(np.float32)
    x0 = np.floor(x)
    w = (x - x0).astype(np.float32)
    i0 = x0.astype(np.int64)
    i1 = np.minimum(i0 + 1, in_size - 1)
    return i0, i1, (np.float32(1) - w).astype(np.float32), w


class ResampleOperator(CompiledOperator):
    """The input, then the output; the geometry and index tables a constant parameter block."""

    def __init__(self, device: Device, desc, kernel, params: np.ndarray):
        self._constant_params = params
        super().__init__(device, desc, [desc.input_tensor], [desc.output_tensor], [kernel],
                         name=desc.operator_type.dml_name)


def geometry(inp: TensorDesc, out: TensorDesc, tables: Sequence[np.ndarray]) -> np.ndarray:
    """The parameter block: the header, then each dimension's table (nearest: an index an output
    coordinate; linear: two indices and two weights' bits). Dimensions are right-aligned to 4 (the
    leading ones of size 1, a table of one zero)."""
    rank = len(out.sizes)
    pad = MAX_DIMS - rank
    sizes = (1,) * pad + tuple(out.sizes)
    ostr = (0,) * pad + tuple(out.effective_strides)
    istr = (0,) * pad + tuple(inp.effective_strides)
    width = tables[0].shape[1] if tables and tables[0].ndim == 2 else 1
    tabs = [np.zeros((1, width), np.uint32)] * pad + [np.asarray(t, np.uint32).reshape(len(t), -1) for t in tables]
    head = np.zeros(HEADER_WORDS, np.uint32)
    head[0] = MAX_DIMS
    head[1:5], head[5:9], head[9:13] = sizes, ostr, istr
    head[17:21] = (1,) * pad + tuple(inp.sizes)
    at = HEADER_WORDS
    for d, t in enumerate(tabs):
        head[13 + d] = at
        at += t.size
    return np.concatenate([head] + [t.reshape(-1) for t in tabs])


def source_tables(desc) -> list:
    """Each dimension's table of desc (see geometry)."""
    inp, out = desc.input_tensor, desc.output_tensor
    tables = []
    for d, (i, o) in enumerate(zip(inp.sizes, out.sizes)):
        x = input_coordinates(o, desc.scales[d], desc.offsets_in()[d], desc.offsets_out()[d])
        if desc.interpolation_mode == InterpolationMode.NEAREST_NEIGHBOR:
            eight = DataType(inp.data_type) in _EIGHT
            tables.append(nearest_indices(i, x, desc.version, desc.rounding(), eight).astype(np.uint32).reshape(-1, 1))
        else:
            i0, i1, w0, w1 = linear_taps(i, x)
            tables.append(np.stack([i0.astype(np.uint32), i1.astype(np.uint32), w0.view(np.uint32),
                                    w1.view(np.uint32)], 1))
    return tables


def _floats(op: str, member: str, values, count: int) -> tuple:
    if values is None:
        raise ValidationError(f"{op}: {member} is null; it must hold {count} FLOATs.", member=member)
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{op}: {member} must be a sequence of FLOATs, got {values!r}")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"{op}: {member} must be a sequence of FLOATs, got {list(values)!r}")
        out.append(float(np.float32(v)))
    return tuple(out)


class _Resample:
    """What the four versions share; version: 0 (RESAMPLE) to 3 (RESAMPLE3)."""
    operator_type: OperatorType
    version: int

    def offsets_in(self) -> tuple:
        return getattr(self, "input_pixel_offsets", None) or (0.5,) * len(self.scales)

    def offsets_out(self) -> tuple:
        return getattr(self, "output_pixel_offsets", None) or (-0.5,) * len(self.scales)

    def rounding(self) -> AxisDirection:
        return AxisDirection(getattr(self, "rounding_direction", AxisDirection.DECREASING))

    def _count_member(self) -> str:
        return "ScaleCount" if self.version == 0 else "DimensionCount"

    def validate(self, level: FeatureLevel, strict: bool = False) -> None:
        """Spec zoo 6.4: the version's feature level; Input and Output of one DataType and
        DimensionCount, of the level's types and ranks; as many Scales (and offsets) as dimensions;
        a known InterpolationMode (and RoundingDirection). Scales must be above 0 (measured: the
        release DirectML rejects 0, negative and NaN scales and takes an infinite one)."""
        op = self.operator_type.dml_name
        need = INTRODUCED[self.operator_type]
        if level < need:
            raise ValidationError(f"{op} requires {need.dml_name}; the device was created at {level.dml_name}.")
        types, ranks = resample_types(level), resample_ranks(level)
        inp = TensorChecker(op, "Input", self.input_tensor, level, strict).required()
        out = TensorChecker(op, "Output", self.output_tensor, level, strict).required()
        inp.common(is_output=False, ranks=ranks, types=types)
        out.common(is_output=True, ranks=ranks, types=types)
        same_data_type(op, "Input", self.input_tensor, "Output", self.output_tensor)          # rule 1
        rank = len(self.input_tensor.sizes)
        if len(self.output_tensor.sizes) != rank:
            out.fail(f"has DimensionCount {len(self.output_tensor.sizes)}; the input's is {rank}.")
        mode = self.interpolation_mode
        if isinstance(mode, bool) or not isinstance(mode, (int, np.integer)) or int(mode) not in (0, 1):     # rule 6
            raise ValidationError(f"{op}: InterpolationMode is {mode!r}; it must be NEAREST_NEIGHBOR (0) or "
                                  f"LINEAR (1).", member="InterpolationMode")
        if self.version >= 2:
            r = self.rounding_direction
            if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or int(r) not in (0, 1):
                raise ValidationError(f"{op}: RoundingDirection is {r!r}; it must be INCREASING (0) or "
                                      f"DECREASING (1).", member="RoundingDirection")
        arrays = [("Scales", self.scales)]
        if self.version >= 1:
            arrays += [("InputPixelOffsets", self.input_pixel_offsets),
                       ("OutputPixelOffsets", self.output_pixel_offsets)]
        for member, values in arrays:                                                        # rule 2
            vals = _floats(op, member, values, rank)
            if len(vals) != rank:
                raise ValidationError(f"{op}: {self._count_member()} is {len(vals)}; it must be the tensors' "
                                      f"DimensionCount {rank}.", member=self._count_member())
        for s in _floats(op, "Scales", self.scales, rank):                                  # rule 5, measured
            if not s > 0:
                raise ValidationError(f"{op}: Scales {list(self.scales)}; each must be above 0 (and not NaN).",
                                      member="Scales")

    def compile(self, device: Device, choice: Optional[VariantChoice] = None) -> ResampleOperator:
        """IDMLDevice::CompileOperator (through Device.create_operator)."""
        self.validate(device.feature_level, device.debug)
        device.check_data_types(self.operator_type.dml_name,
                                (("Input", self.input_tensor), ("Output", self.output_tensor)))
        linear = self.interpolation_mode == InterpolationMode.LINEAR
        if linear and getattr(self, "antialiased", False) and any(float(np.float32(s)) < 1 for s in self.scales):
            raise UnsupportedError(f"{self.operator_type.dml_name}: antialiased linear downscaling (a Scale "
                                   f"below 1) is not implemented; dmlvk runs antialiased resamples that scale "
                                   f"up or keep the size, and any that are not antialiased")
        words = HEADER_WORDS + (4 if linear else 1) * sum(int(o) for o in self.output_tensor.sizes)
        device.check_binding_size(4 * words, f"{self.operator_type.dml_name}'s coordinate tables (a word or four "
                                             f"an output coordinate of each dimension)")
        return resample_operator(device, self, source_tables(self), choice)


def resample_operator(device: Device, desc, tables: list, choice: Optional[VariantChoice] = None) -> ResampleOperator:
    """The compiled operator of a validated description and its dimensions' tables (source_tables)."""
    sel = TABLE.chosen_by(device.capabilities, choice)
    out = desc.output_tensor
    linear = desc.interpolation_mode == InterpolationMode.LINEAR
    params = geometry(desc.input_tensor, out, tables)
    count = out.element_count
    kernel = TABLE["resample.elements"].kernel(
        spec=dict(TYPE=_TYPE_CODE[DataType(out.data_type)], LINEAR=int(linear)), push=dict(count=count),
        count=count, slots=(0, 2, 1), local_size=sel.workgroup(LOCAL))
    return ResampleOperator(device, desc, kernel, params)


def _sizes_of(op: OperatorType, input: TensorDesc, scales) -> list:
    if not isinstance(input, TensorDesc):
        raise TypeError(f"{op.dml_name}: input must be a TensorDesc, got {type(input).__name__}")
    scales = tuple(scales)
    if len(scales) != len(input.sizes):
        return list(input.sizes)
    return [max(1, int(np.floor(np.float32(s) * np.float32(i)))) for s, i in zip(scales, input.sizes)]


def _built(op: OperatorType, input: TensorDesc, scales, input_offsets, output_offsets) -> tuple:
    """A builder's (output, scales, input offsets, output offsets): the output packed, of
    floor(size x scale) each dimension; offsets pixel centres (0.5, -0.5) unless given."""
    scales = tuple(scales)
    out = TensorDesc(input.data_type, _sizes_of(op, input, scales))
    return (out, scales, tuple(input_offsets or (0.5,) * len(scales)),
            tuple(output_offsets or (-0.5,) * len(scales)))


@dataclass(frozen=True)
class ResampleDesc(_Resample):
    """DML_RESAMPLE_OPERATOR_DESC (FL 2_0): ScaleCount is len(scales); pixel centres (offsets 0.5
    and -0.5), nearest neighbour floor(x + 0.5)."""
    input_tensor: Optional[TensorDesc]
    output_tensor: Optional[TensorDesc]
    interpolation_mode: int
    scales: tuple
    operator_type = OperatorType.RESAMPLE
    version = 0

    def __post_init__(self):
        if self.scales is not None and hasattr(self.scales, "__iter__"):
            object.__setattr__(self, "scales", tuple(self.scales))

    @classmethod
    def of(cls, input: TensorDesc, scales: Sequence[float],
           mode: InterpolationMode = InterpolationMode.NEAREST_NEIGHBOR) -> "ResampleDesc":
        """The input resampled by scales, the output packed, of floor(size x scale) each dimension."""
        return cls(input, TensorDesc(input.data_type, _sizes_of(cls.operator_type, input, scales)), mode, tuple(scales))


@dataclass(frozen=True)
class Resample1Desc(_Resample):
    """DML_RESAMPLE1_OPERATOR_DESC (FL 2_1): DimensionCount is len(scales); nearest neighbour
    floor(x + 0.5)."""
    input_tensor: Optional[TensorDesc]
    output_tensor: Optional[TensorDesc]
    interpolation_mode: int
    scales: tuple
    input_pixel_offsets: tuple
    output_pixel_offsets: tuple
    operator_type = OperatorType.RESAMPLE1
    version = 1

    def __post_init__(self):
        for name in ("scales", "input_pixel_offsets", "output_pixel_offsets"):
            v = getattr(self, name)
            if v is not None and hasattr(v, "__iter__"):
                object.__setattr__(self, name, tuple(v))

    @classmethod
    def of(cls, input: TensorDesc, scales: Sequence[float], mode: InterpolationMode = InterpolationMode.NEAREST_NEIGHBOR,
           input_pixel_offsets: Optional[Sequence[float]] = None,
           output_pixel_offsets: Optional[Sequence[float]] = None) -> "Resample1Desc":
        """As ResampleDesc.of; offsets default to pixel centres (0.5 and -0.5)."""
        out, scales, ipo, opo = _built(cls.operator_type, input, scales, input_pixel_offsets, output_pixel_offsets)
        return cls(input, out, mode, scales, ipo, opo)


@dataclass(frozen=True)
class Resample2Desc(_Resample):
    """DML_RESAMPLE2_OPERATOR_DESC (FL 5_1): RESAMPLE1 with a RoundingDirection for nearest
    neighbour (INCREASING: ceil(x), DECREASING: floor(x))."""
    input_tensor: Optional[TensorDesc]
    output_tensor: Optional[TensorDesc]
    interpolation_mode: int
    rounding_direction: int
    scales: tuple
    input_pixel_offsets: tuple
    output_pixel_offsets: tuple
    operator_type = OperatorType.RESAMPLE2
    version = 2

    __post_init__ = Resample1Desc.__post_init__

    @classmethod
    def of(cls, input: TensorDesc, scales: Sequence[float], mode: InterpolationMode = InterpolationMode.NEAREST_NEIGHBOR,
           rounding: AxisDirection = AxisDirection.DECREASING, input_pixel_offsets: Optional[Sequence[float]] = None,
           output_pixel_offsets: Optional[Sequence[float]] = None) -> "Resample2Desc":
        """As Resample1Desc.of, rounding DECREASING (floor) unless given."""
        out, scales, ipo, opo = _built(cls.operator_type, input, scales, input_pixel_offsets, output_pixel_offsets)
        return cls(input, out, mode, rounding, scales, ipo, opo)


@dataclass(frozen=True)
class Resample3Desc(Resample2Desc):
    """DML_RESAMPLE3_OPERATOR_DESC (FL 6_4): RESAMPLE2 with Antialiased. Antialiased linear
    downscaling (a scale below 1) raises UnsupportedError at compile; antialiasing changes nothing
    elsewhere (spec zoo 6.2)."""
    antialiased: bool = False
    operator_type = OperatorType.RESAMPLE3
    version = 3

    @classmethod
    def of(cls, input: TensorDesc, scales: Sequence[float], mode: InterpolationMode = InterpolationMode.NEAREST_NEIGHBOR,
           rounding: AxisDirection = AxisDirection.DECREASING, input_pixel_offsets: Optional[Sequence[float]] = None,
           output_pixel_offsets: Optional[Sequence[float]] = None, antialiased: bool = False) -> "Resample3Desc":
        """As Resample2Desc.of, not antialiased unless asked."""
        out, scales, ipo, opo = _built(cls.operator_type, input, scales, input_pixel_offsets, output_pixel_offsets)
        return cls(input, out, mode, rounding, scales, ipo, opo, antialiased)
