"""QUANTIZED_LINEAR_CONVOLUTION (spec 4, validation spec 5.3)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional, Sequence, Union

import numpy as np

from ..enums import DataType, FeatureLevel, OperatorType, TensorFlags
from ..errors import UnsupportedError, ValidationError
from ..runtime.capabilities import Capabilities
from ..runtime.commands import Program
from ..runtime.device import Buffer, Device, Kernel, host_bytes
from ..tensor import TensorChecker, TensorDesc, same_data_type
from ..arrays import DeviceArray, empty
from .base import (CompiledOperator, array_binding, as_host_array, cached_operator, check_out, device_for,
                   into_out, resolve_device)

OP = OperatorType.QUANTIZED_LINEAR_CONVOLUTION.dml_name
_Q8 = {DataType.INT8, DataType.UINT8}
# Binding slots, DirectML's order (spec 4.1), then the output.
(INPUT, INPUT_SCALE, INPUT_ZP, FILTER, FILTER_SCALE, FILTER_ZP, BIAS, OUTPUT_SCALE, OUTPUT_ZP,
 OUTPUT) = range(10)
_PARAMS = 10      # the operator's own buffer of host-computed requantization parameters
_CPU_FILTER = 11   # the CPU path's scratch: the filter packed by qconv_pack_filter_cpu.comp
_XP, _WP, _PART = 11, 12, 13  # the cooperative-matrix path's scratch: the repacked input and filter,
                               # and split-K partials
_WP_SCRATCH = _WP - _XP       # the repacked filter's place among the scratch Buffers
_NAMES = ("Input", "InputScale", "InputZeroPoint", "Filter", "FilterScale", "FilterZeroPoint",
          "Bias", "OutputScale", "OutputZeroPoint", "Output")


# Output channels per group from which the implicit-GEMM shader is used (depthwise and other
# narrow groups keep the direct shader, which does not waste a 64-channel tile).
GEMM_MIN_CHANNELS = 8
# The cooperative-matrix path (int8 tensor units) is used from this many output channels and
# input channels per group (input channels are padded to 32 in its packed operand), on devices
# listing int8 x int8 -> int32 16x16x32 subgroup matrices with a subgroup size of 32, while its
# packed operands stay under COOPMAT_MAX_PACKED_BYTES each.
COOPMAT_MIN_CHANNELS = 4
COOPMAT_MIN_INPUT_CHANNELS = 8
COOPMAT_MAX_PACKED_BYTES = 1 << 31
# CPU devices (lavapipe) take dmlvk/shaders/qlinear_conv_cpu.comp from this many output channels
# per group: CPU_PIXELS output pixels x 16 channels per invocation, CPU_LOCAL invocations per workgroup.
CPU_MIN_CHANNELS = 8
CPU_PIXELS = 4
CPU_LOCAL = 64
# Small batches: when fewer output tiles than this exist (they cannot fill a large GPU), K is
# split into slices of at least 2 steps so that about SPLITK_TARGET workgroups run.
SPLITK_TARGET = 128
SPLITK_BELOW = 66
SPLITK_MAX_PARTIAL_BYTES = 256 << 20
# The loop iterations a kernel may run per tap of an output, for drivers that end loops early
# (_check_loop_limit), 1 x 1 windows and larger ones. Measured on Mesa 22.3.6's lavapipe, the most
# of any kernel: 1.01 and 2.02 (3 x 3; 5 x 5 1.52, 7 x 7 1.35, 11 x 11 1.21), with a margin.
LOOP_ITERATIONS_PER_TAP = (1.1, 2.5)

# Its input packing (qconv_pack_input.comp) loads whole words of 4 columns where the input's
# columns are contiguous and that makes at least this many invocations, else one byte at a time
# (on an H200, 7-18 % faster at batch 32 on the benchmark's layers, 1-1.5 us slower at batch 1,
# where the fewer invocations leave the GPU waiting on memory).
PACK_INPUT_QUADS_FROM = 16384
# Depthwise layers (one input and one output channel per group) take a shared-memory tile kernel
# when a 16 x 64 output tile's input window and the KH x KW taps fit its 6144-element tile.
DEPTHWISE_TILE = (16, 64)
DEPTHWISE_TILE_MAX = 6144
# Depthwise layers and narrow groups with word-aligned input and output rows:
# qlinear_conv_depthwise_rows.comp, whose invocations hold the input words of all their window rows
# of one input channel in registers (at most DEPTHWISE_ROW_WORDS; 32, 16, 8 or 4 outputs an
# invocation, the most that fit) and whose float32 sums hold up to DEPTHWISE_ROW_MAX_TAPS products
# (input channels of a group x filter taps) exactly.
DEPTHWISE_ROW_WORDS = 48
DEPTHWISE_ROW_MAX_TAPS = 64
# With vertical stride and dilation 1 its invocations walk down the output rows instead, with
# DEPTHWISE_WALK_OUTPUTS outputs of each row, down as many rows as leave at least
# DEPTHWISE_WALK_INVOCATIONS invocations (so that layers of a batch still fill a GPU; a small layer
# gets one row an invocation, and DEPTHWISE_WALK_OUTPUTS outputs of it). Not on CPU devices
# (DEPTHWISE_WALK_ON_CPU): on lavapipe the walk, and 8 outputs an invocation, took twice as long.
DEPTHWISE_WALK_OUTPUTS = 8
DEPTHWISE_WALK_INVOCATIONS = 96 * 1024
DEPTHWISE_WALK_ON_CPU = False
# Where the device has packed 4 x 8-bit integer dot products (shaderIntegerDotProduct), filters
# at most 4 taps wide with horizontal dilation 1 take one dot product an output and filter row
# instead of KW float32 multiply-adds (DEPTHWISE_DOT). Not on CPU devices (DEPTHWISE_DOT_ON_CPU):
# lavapipe runs them lane by lane, 2-2.5x slower than the float32 products.
DEPTHWISE_DOT = True
DEPTHWISE_DOT_ON_CPU = False


def requantization_multipliers(input_scale, filter_scale, output_scale) -> np.ndarray:
    """ONNX Runtime's float32 arithmetic: float32(float32(x_scale * w_scale[m]) / y_scale)."""
    xs = np.float32(input_scale)
    ws = np.asarray(filter_scale, np.float32).reshape(-1)
    ys = np.float32(output_scale)
    with np.errstate(all="ignore"):       # a zero or NaN scale is undefined behaviour (spec 4.4)
        return ((xs * ws).astype(np.float32) / ys).astype(np.float32)


def _as_4d(values, fill) -> tuple:
    """A rank-3 {N,C,W} tuple as {N,C,fill,W} (spec 4.2 recommendation); rank 4 unchanged."""
    values = tuple(values)
    return values if len(values) == 4 else (values[0], values[1], fill, values[2])


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

    # ---- geometry ---------------------------------------------------------------------------

    def conv_params(self) -> dict:
        """Everything in 4-D form: rank-3 tensors {N,C,W} are {N,C,1,W} (spec 4.2 recommendation)
        and a DimensionCount of 1 describes the W axis."""
        def pair(v, fill):       # DirectML reads the first two entries of longer arrays
            return tuple(v[:2]) if len(v) >= 2 else (fill,) + tuple(v)
        return dict(input=_as_4d(self.input_tensor.sizes, 1), filter=_as_4d(self.filter_tensor.sizes, 1),
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
        chk = [TensorChecker(OP, name, d, level, strict) for name, d in zip(_NAMES, t)]
        for i in (INPUT, INPUT_SCALE, FILTER, FILTER_SCALE, OUTPUT_SCALE, OUTPUT):      # rule 2
            chk[i].required()
        for i, d in enumerate(t):
            if d is not None and not isinstance(d, TensorDesc):
                raise TypeError(f"{OP}: '{_NAMES[i]}' must be a TensorDesc or None")
        wide = level >= FeatureLevel.FL_4_0                                              # rule 4
        main_ranks = {3, 4} if wide else {4}
        small_ranks = {1, 2, 3, 4} if wide else {4}
        filter_scale_ranks = ({1, 2, 3, 4} if level >= FeatureLevel.FL_5_2 else {3, 4}) if wide else {4}
        types = {INPUT: _Q8, INPUT_SCALE: {DataType.FLOAT32}, INPUT_ZP: _Q8, FILTER: _Q8,         # rule 3
                 FILTER_SCALE: {DataType.FLOAT32}, FILTER_ZP: _Q8, BIAS: {DataType.INT32},
                 OUTPUT_SCALE: {DataType.FLOAT32}, OUTPUT_ZP: _Q8, OUTPUT: _Q8}
        ranks = {INPUT: main_ranks, FILTER: main_ranks, OUTPUT: main_ranks, BIAS: main_ranks,
                 FILTER_SCALE: filter_scale_ranks, FILTER_ZP: filter_scale_ranks}
        for i, d in enumerate(t):
            if d is not None:
                chk[i].common(is_output=i == OUTPUT, ranks=ranks.get(i, small_ranks), types=types[i])
        for zp, of in ((INPUT_ZP, INPUT), (FILTER_ZP, FILTER), (OUTPUT_ZP, OUTPUT)):
            if t[zp] is not None:
                same_data_type(OP, _NAMES[of], t[of], _NAMES[zp], t[zp])
        for zp, sc in ((INPUT_ZP, INPUT_SCALE), (FILTER_ZP, FILTER_SCALE), (OUTPUT_ZP, OUTPUT_SCALE)):
            if t[zp] is not None and t[zp].sizes != t[sc].sizes:                       # DirectML's rule
                chk[zp].fail(f"has Sizes {list(t[zp].sizes)}; a zero point must have its scale's Sizes "
                             f"({_NAMES[sc]}: {list(t[sc].sizes)}).")
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
                raise ValidationError(f"{OP}: {name} has {len(vals)} entries; DimensionCount is {dc}.")
            if any(not 0 <= v <= 0xFFFFFFFF for v in vals):
                raise ValidationError(f"{OP}: {name} {list(vals)}; its entries are UINT (0..2^32-1).")
        spatial = rank - 2
        if strict and dc not in ({2} if rank == 4 else {1, 2}):
            raise ValidationError(f"{OP}: DimensionCount is {dc}; it must be 2"
                                  + (" (or 1 for rank-3 tensors)." if rank == 3 else "."))
        if dc < spatial:
            # The release DirectML accepts it, then reads past the arrays (dmlvk's choice: reject).
            raise ValidationError(f"{OP}: DimensionCount is {dc}; Strides, Dilations and the paddings "
                                  f"need an entry for each of the {spatial} spatial dimensions of the tensors.")
        if strict and any(s == 0 for s in self.strides):
            raise ValidationError(f"{OP}: Strides {list(self.strides)}; every stride must be at least 1.")
        if strict and any(d == 0 for d in self.dilations):
            raise ValidationError(f"{OP}: Dilations {list(self.dilations)}; every dilation must be at least 1.")
        g = self.group_count                                                             # rule 7
        if isinstance(g, bool) or not isinstance(g, (int, np.integer)):
            raise TypeError(f"{OP}: group_count must be an integer, got {g!r}")
        geo = self.conv_params()
        n, c, h, w = geo["input"]
        m, fc, kh, kw = geo["filter"]
        if g < 1:
            raise ValidationError(f"{OP}: GroupCount is {g}; it must be at least 1.")
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
            past = self._kernel_past_padding()                                            # rule 9
            if past:
                axis, k, d, eff, padded = past
                chk[FILTER].fail(f"has an effective kernel {axis} of {eff} (size {k}, dilation {d}), larger "
                                 f"than the padded input {axis} {padded}.")
            chk[OUTPUT].sizes_equal(self.output_sizes(), "{Input N, Filter N, OH, OW} per the convolution's "
                                                         "output-size formula")
        else:
            # The release DirectML checks N and C only and computes over the grid it is given.
            chk[OUTPUT].sizes_equal((n, m) + tuple(t[OUTPUT].sizes[2:]), "{Input N, Filter N, ...}: the "
                                    "output's batch and channels")

    @staticmethod
    def _channel_shape(rank: int, m: int) -> list:
        """A per-channel tensor's Sizes: M in dimension 1 (DirectML rejects a rank-1 {M})."""
        return [1, m] + [1] * (rank - 2)

    @classmethod
    def _per_channel(cls, sizes, m: int) -> bool:
        return len(sizes) >= 2 and list(sizes) == cls._channel_shape(len(sizes), m)

    # ---- compilation --------------------------------------------------------------------------

    def _spec_push(self) -> tuple:
        """(specialization constants 1-6, push constants) shared by every kernel of the operator."""
        geo = self.conv_params()
        t = self.tensors()
        n, c, h, w = geo["input"]
        m, cg, kh, kw = geo["filter"]
        strides4 = lambda d: _as_4d(d.effective_strides, 0)
        out4 = _as_4d(self.output_grid(), 1)
        spec = (kh, kw, int(t[INPUT].data_type == DataType.INT8), int(t[FILTER].data_type == DataType.INT8),
                int(t[OUTPUT].data_type == DataType.INT8), int(self._wide_taps()))
        push = ((n, c, h, w) + strides4(t[INPUT]) + strides4(t[FILTER]) + out4 + strides4(t[OUTPUT])
                + geo["strides"] + geo["dilations"] + geo["start"] + (cg, m // self.group_count))
        return spec, push

    def kernel(self, capabilities: Optional[Capabilities] = None) -> Kernel:
        """The portable kernel for this description (plan() gives what a device runs)."""
        spec, push = self._spec_push()
        m, _, _, _ = self.conv_params()["filter"]
        out4 = _as_4d(self.output_grid(), 1)
        mg = m // self.group_count
        slots = (INPUT, FILTER, _PARAMS, OUTPUT)
        if mg >= GEMM_MIN_CHANNELS:
            # dmlvk/shaders/qlinear_conv_gemm.comp: 64 x 64 tiles of (output channel, pixel) per group
            pixels = out4[0] * out4[2] * out4[3]
            groups = self.group_count * -(-mg // 64) * -(-pixels // 64)
            return Kernel(shader="qlinear_conv_gemm", spec=spec, push=push, count=groups * 256,
                          slots=slots, local_size=256)
        tiles = -(-mg // 4)
        return Kernel(
            shader="qlinear_conv",
            spec=spec, push=push, count=out4[0] * self.group_count * tiles * out4[2] * out4[3],
            slots=slots, local_size=64)

    def plan(self, capabilities: Optional[Capabilities] = None) -> tuple:
        """(kernels, scratch Buffer sizes in bytes) a device with these capabilities runs: the
        depthwise tile kernel, or the cooperative-matrix path, where they fit (see DEPTHWISE_*,
        COOPMAT_*), else the CPU kernel on CPU devices, else the portable kernel. Narrow groups take
        the depthwise rows kernel except where the CPU kernel applies."""
        if self.off_formula():
            return [self.kernel(capabilities)], ()
        depthwise, cpu = self._depthwise_kernel(capabilities), self._cpu_plan(capabilities)
        if depthwise is not None and (self.conv_params()["filter"][1] == 1 or cpu is None):
            return [depthwise], ()
        geo = self._packed_geometry(capabilities)
        if geo is None:
            return cpu if cpu is not None else ([self.kernel(capabilities)], ())
        spec, push = self._spec_push()
        spec += (geo["wm"], int(self._packed_output()), geo["split"])
        tiles = geo["tiles"]
        split = geo["split"] > 1
        quad = (_as_4d(self.tensors()[INPUT].effective_strides, 0)[3] == 1
                and geo["quad_items"] >= PACK_INPUT_QUADS_FROM)
        kernels = [
            Kernel(shader="qconv_pack_input", spec=spec + (int(quad),), push=push,
                   count=geo["quad_items"] if quad else geo["xp_bytes"] // 32,
                   slots=(INPUT, FILTER, _PARAMS, _XP), local_size=128),
            Kernel(shader="qconv_pack_filter", spec=spec, push=push, count=self.group_count * geo["mp"] * 256,
                   slots=(INPUT, FILTER, _PARAMS, _WP), local_size=256),
            Kernel(shader="qlinear_conv_coopmat", spec=spec, push=push, count=tiles * geo["split"] * 256,
                   slots=(_XP, _WP, _PARAMS, _PART if split else OUTPUT), local_size=256,
                   defines=(("WM_FIXED", geo["wm"]),) + ((("COOPMAT_EMULATED", 1),)
                                                         if capabilities.emulated_cooperative_matrix else ()))]
        if split:
            m = self.conv_params()["filter"][0]
            kernels.append(Kernel(shader="qlinear_conv_splitk", spec=spec, push=push,
                                  count=m * -(-geo["pixels"] // 4), slots=(_PART, _WP, _PARAMS, OUTPUT),
                                  local_size=128))
            return kernels, (geo["xp_bytes"], geo["wp_bytes"], geo["part_bytes"])
        return kernels, (geo["xp_bytes"], geo["wp_bytes"])

    def _cpu_plan(self, capabilities: Optional[Capabilities]) -> Optional[tuple]:
        """On CPU devices (lavapipe), groups of CPU_MIN_CHANNELS output channels or more: the
        filter packed per 16-channel tile (dmlvk/shaders/qconv_pack_filter_cpu.comp), then
        dmlvk/shaders/qlinear_conv_cpu.comp, which loads a 16-byte filter vector and one input byte
        per pixel for 64 multiply-adds. None elsewhere."""
        if capabilities is None or not capabilities.cpu_kernels:
            return None
        geo = self.conv_params()
        m, cg, kh, kw = geo["filter"]
        mg = m // self.group_count
        if mg < CPU_MIN_CHANNELS:
            return None
        spec, push = self._spec_push()
        out4 = _as_4d(self.output_grid(), 1)
        tiles, k = -(-mg // 16), cg * kh * kw
        pixels = out4[0] * out4[2] * out4[3]
        per_group = CPU_LOCAL * CPU_PIXELS
        return ([Kernel(shader="qconv_pack_filter_cpu", spec=spec, push=push, count=self.group_count * tiles * k,
                        slots=(INPUT, FILTER, _PARAMS, _CPU_FILTER), local_size=64),
                 Kernel(shader="qlinear_conv_cpu", spec=spec, push=push,
                        count=self.group_count * tiles * -(-pixels // per_group) * CPU_LOCAL,
                        slots=(INPUT, _CPU_FILTER, _PARAMS, OUTPUT), local_size=CPU_LOCAL)],
                (self.group_count * tiles * k * 16,))

    def _packed_geometry(self, capabilities: Optional[Capabilities]) -> Optional[dict]:
        """The packed operands' sizes (dmlvk/shaders/qconv_packed.glsl) if the cooperative-matrix
        path runs this description on such a device, else None."""
        caps = capabilities
        # The kernel's subgroups are 32 invocations (emulated ones are, whatever the device's size).
        if (caps is None or (16, 16, 32) not in caps.cooperative_matrix("int8", "int8", "int32")
                or not caps.int8_arithmetic
                or not caps.emulated_cooperative_matrix and (
                    caps.subgroup_size != 32 or caps.min_subgroup_size not in (0, 32)
                    or caps.max_subgroup_size not in (0, 32))):
            return None
        geo = self.conv_params()
        n = geo["input"][0]
        m, cg, kh, kw = geo["filter"]
        mg, groups = m // self.group_count, self.group_count
        if mg < COOPMAT_MIN_CHANNELS or cg < COOPMAT_MIN_INPUT_CHANNELS or self._wide_taps():
            return None
        _, _, oh, ow = _as_4d(self.output_grid(), 1)
        (sh, sw), (dh, dw) = geo["strides"], geo["dilations"]
        cp = -(-cg // 32) * 32
        hp, wp = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
        kp = -(-kh * kw * cp // 64) * 64
        wm = 2 if mg <= 64 else 4
        bm = 32 * wm
        mp = -(-mg // bm) * bm
        xp_bytes = n * hp * wp * groups * cp
        wp_bytes = ((2 * m + 3) & ~3) * 4 + groups * mp * kp
        if max(xp_bytes, wp_bytes) > COOPMAT_MAX_PACKED_BYTES:
            return None
        pixels = n * oh * ow
        tiles = groups * (mp // bm) * -(-pixels // 128)
        steps = kp // 64
        split, part_bytes = 1, 0
        if tiles < SPLITK_BELOW and steps >= 4:
            split = min(steps // 2, -(-SPLITK_TARGET // tiles))
            pp = -(-pixels // 128) * 128
            part_bytes = split * groups * (mp + 16) * pp * 4
            if part_bytes > SPLITK_MAX_PARTIAL_BYTES:
                split, part_bytes = 1, 0
        quad_items = n * hp * -(-wp // 4) * groups * cp // 16
        return dict(wm=wm, bm=bm, mp=mp, xp_bytes=xp_bytes, wp_bytes=wp_bytes, quad_items=quad_items,
                    pixels=pixels, tiles=tiles, split=split, part_bytes=part_bytes)

    def _depthwise_kernel(self, capabilities: Optional[Capabilities] = None) -> Optional[Kernel]:
        """A depthwise shader where one applies, else None: qlinear_conv_depthwise_rows.comp where
        the input and output rows are word aligned (also for narrow groups: fewer than
        COOPMAT_MIN_INPUT_CHANNELS input channels a group, at most DEPTHWISE_ROW_MAX_TAPS products
        an output; walking down the output rows where DEPTHWISE_WALK_* allow it; with packed dot
        products where DEPTHWISE_DOT* allow it; on devices with these capabilities, None: any),
        else, for depthwise layers, qlinear_conv_depthwise.comp where its tile fits."""
        geo = self.conv_params()
        m, cg, kh, kw = geo["filter"]
        depthwise = cg == 1 and m == self.group_count
        if not (depthwise or 1 < cg < COOPMAT_MIN_INPUT_CHANNELS) or self._wide_taps():
            return None
        n, _, oh, ow = _as_4d(self.output_grid(), 1)
        (sh, sw), (dh, dw) = geo["strides"], geo["dilations"]
        spec, push = self._spec_push()
        slots = (INPUT, FILTER, _PARAMS, OUTPUT)
        n_in, c_in, h_in, w_in = _as_4d(self.input_tensor.effective_strides, 0)
        word_rows = w_in == 1 and all(s % 4 == 0 for s in (n_in, c_in, h_in))
        strides = _as_4d(self.output_tensor.effective_strides, 0)
        whole_words = strides[3] == 1 and ow % 4 == 0 and all(s % 4 == 0 for s in strides[:3])
        shift = -geo["start"][1] % 4       # the window's first column less its word-aligned start
        cpu = capabilities is not None and capabilities.cpu_kernels
        dot = (DEPTHWISE_DOT and capabilities is not None and capabilities.integer_dot_product
               and kw <= 4 and dw == 1 and (DEPTHWISE_DOT_ON_CPU or not cpu))
        # Input columns of a window row: with dot products, each output's 4 bytes from its first tap.
        columns = lambda o: (o - 1) * sw + (4 if dot else (kw - 1) * dw + 1)
        words = lambda o: (shift + columns(o) + 3) // 4    # of a window row
        walk, rows = DEPTHWISE_WALK_OUTPUTS, 1
        on_cpu = cpu and not DEPTHWISE_WALK_ON_CPU
        if ((sh, dh) == (1, 1) and not on_cpu and kh * walk <= 64
                and max(kh, 2 * cg) * words(walk) <= DEPTHWISE_ROW_WORDS):
            # walking: KH rows of sums, this input row's words and the next one's in registers
            opt = walk
            per_row = n * m * -(-ow // opt)      # invocations with one output row each
            rows = -(-oh // min(oh, -(-DEPTHWISE_WALK_INVOCATIONS // per_row)))
        else:
            # outputs an invocation: the most whose window rows fit its registers
            opt = next((o for o in (32, 16, 8, 4) if kh * words(o) <= DEPTHWISE_ROW_WORDS), None)
        if word_rows and whole_words and opt is not None and cg * kh * kw <= DEPTHWISE_ROW_MAX_TAPS:
            return Kernel(shader="qlinear_conv_depthwise_rows", spec=spec + (sw, dw, shift, opt, 0, cg, rows),
                          push=push, count=n * m * -(-oh // rows) * -(-ow // opt), slots=slots, local_size=128,
                          defines=(("DOT", 1),) if dot else ())
        if not depthwise:
            return None
        th, tw = DEPTHWISE_TILE
        # Word-aligned input rows are read a word at a time, from up to 3 columns early.
        row = (tw - 1) * sw + (kw - 1) * dw + 1
        row = (row + 6) & ~3 if word_rows else row
        tile = ((th - 1) * sh + (kh - 1) * dh + 1) * row + kh * kw
        if tile > DEPTHWISE_TILE_MAX:
            return None
        tiles = n * m * -(-oh // th) * -(-ow // tw)
        return Kernel(shader="qlinear_conv_depthwise", spec=spec + (0, int(whole_words), tile, int(word_rows)),
                      push=push, count=tiles * 256, slots=slots, local_size=256)

    def _packed_output(self) -> bool:
        """Whether the output is packed NCHW with OH * OW a multiple of 4 (whole-word stores)."""
        n, m, oh, ow = _as_4d(self.output_grid(), 1)
        sn, sm, sh, sw = _as_4d(self.output_tensor.effective_strides, 0)
        return ((oh * ow) % 4 == 0 and sw == 1 and (oh == 1 or sh == ow) and sm == oh * ow
                and (n == 1 or sn == m * oh * ow))

    def _wide_taps(self) -> bool:
        """Whether some input position o * stride + k * dilation - start_pad, or the input's height
        or width, passes the int32 range the shaders' fast tap arithmetic uses."""
        geo = self.conv_params()
        out = _as_4d(self.output_grid(), 1)
        for o, size, k, s, d, pad in zip(out[2:], geo["input"][2:], geo["filter"][2:], geo["strides"],
                                         geo["dilations"], geo["start"]):
            if (o - 1) * s + (k - 1) * d >= 2**31 or pad >= 2**31 or size >= 2**31:
                return True
        return False

    def compile(self, device: Device, force: Optional[str] = None, tuning=None) -> "QuantizedLinearConvolutionOperator":
        self.validate(device.feature_level, device.debug)
        device.check_data_types(OP, zip(_NAMES, self.tensors()))
        self._check_loop_limit(device)
        return QuantizedLinearConvolutionOperator(device, self)

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

    def plan(self, capabilities: Optional[Capabilities] = None) -> tuple:
        k = self.kernel()
        return [dataclasses.replace(k, spec=tuple(k.spec) + (0, 0, 0, 0, 1))], ()


def _read_elements(desc: TensorDesc, binding, dtype) -> np.ndarray:
    """The logical elements of a small tensor (scale, zero point, bias) as a flat array."""
    raw = binding.read() if isinstance(binding, Buffer) else host_bytes(binding, "binding")
    dt = np.dtype(dtype)
    whole = desc.total_bytes // dt.itemsize * dt.itemsize   # the total need not be whole elements
    view = np.lib.stride_tricks.as_strided(raw[:whole].view(dt), shape=desc.sizes,
                                           strides=tuple(s * dt.itemsize for s in desc.effective_strides))
    return np.array(view).reshape(-1)


class QuantizedLinearConvolutionOperator(CompiledOperator):
    operator_name = OP
    _param_slots = (INPUT_SCALE, INPUT_ZP, FILTER_SCALE, FILTER_ZP, BIAS, OUTPUT_SCALE, OUTPUT_ZP)

    def __init__(self, device: Device, desc: QuantizedLinearConvolutionDesc):
        kernels, scratch = desc.plan(device.capabilities)
        # The cooperative-matrix path packs the filter at initialization instead of at every
        # execution where the filter, and the zero points its packing reads, are OWNED_BY_DML
        # (bound once, at initialization: "DML may reformat it"; see constant_filter).
        owned = lambda t: t is None or bool(t.flags & TensorFlags.OWNED_BY_DML)
        t = desc.tensors()
        self._filter_packing = None
        packing = next((k for k in kernels if k.shader == "qconv_pack_filter"), None)
        if packing is not None and t[FILTER] is not None and all(owned(t[s]) for s in (FILTER, INPUT_ZP, FILTER_ZP)):
            w = _WP_SCRATCH         # its scratch Buffer, made at initialize instead
            self._filter_packing, self._packed_filter_bytes = packing, scratch[w]
            kernels = [k for k in kernels if k is not packing]
            scratch = tuple(scratch[:w]) + (4,) + tuple(scratch[w + 1:])
        self._packed_filter = None
        super().__init__(device, desc, t[:OUTPUT], [desc.output_tensor], kernels, scratch)
        self.m = desc.conv_params()["filter"][0]

    def initialize(self, inputs: Sequence) -> None:
        super().initialize(inputs)
        if self._filter_packing is None:
            return
        m = self.m
        params = np.zeros(3 + 3 * m, np.int32)      # what qconv_pack_filter.comp reads: the zero points
        params[0] = self._values(self._owned, INPUT_ZP, 0)[0]
        params[2 + m:2 + 2 * m] = self._per_m(self._values(self._owned, FILTER_ZP, 0))
        if self._packed_filter is None:
            self._packed_filter = Buffer(self.device, self._packed_filter_bytes)
        unused = Buffer(self.device, 4)          # the input binding, which the filter packing does not read
        Program(self.device, [(self._filter_packing, (unused, self._owned[FILTER], self.device.upload(params),
                                                       self._packed_filter))]).run()

    def _scratch(self, state) -> list:
        bufs = super()._scratch(state)
        if self._filter_packing is None:
            return bufs
        return bufs[:_WP_SCRATCH] + [self._packed_filter] + bufs[_WP_SCRATCH + 1:]

    def _values(self, srcs: dict, slot: int, default) -> np.ndarray:
        d = self.input_descs[slot]
        if d is None:
            return np.array([default])
        return _read_elements(d, srcs[slot], d.data_type.numpy_dtype)

    def _per_m(self, v: np.ndarray) -> np.ndarray:
        return np.broadcast_to(v, (self.m,)) if v.size == 1 else v

    def _parameters(self, srcs: dict) -> np.ndarray:
        """Requantization parameters (binding _PARAMS), computed on the host from the bound scale,
        zero-point and bias tensors (spec 4.3; the multiplier as ONNX Runtime computes it, in
        float32)."""
        d = self.input_descs
        values = lambda slot, default: self._values(srcs, slot, default)
        m, per_m = self.m, self._per_m
        mult = requantization_multipliers(values(INPUT_SCALE, 1)[0], per_m(values(FILTER_SCALE, 1)),
                                          values(OUTPUT_SCALE, 1)[0])
        params = np.empty(3 + 3 * m, np.int32)
        params[0] = values(INPUT_ZP, 0)[0]
        params[1] = values(OUTPUT_ZP, 0)[0]
        params[2:2 + m] = mult.view(np.int32)
        params[2 + m:2 + 2 * m] = wzp = per_m(values(FILTER_ZP, 0))
        params[2 + 2 * m:2 + 3 * m] = per_m(values(BIAS, 0))
        # The cooperative-matrix path needs the input's window sums where some filter zero point
        # differs from the value its int8 shift removes (qconv_pack_filter.comp: cw != 0).
        shift = 0 if d[FILTER].data_type == DataType.INT8 else 128
        params[2 + 3 * m] = int(np.any(wzp.astype(np.int64) != shift))
        return params


# ---- numpy-level API --------------------------------------------------------------------------

def _flat(name, a: np.ndarray, counts) -> np.ndarray:
    if a.size not in counts:
        raise ValueError(f"{name} must hold {' or '.join(map(str, sorted(set(counts))))} elements, got {a.size}")
    return np.ascontiguousarray(a.reshape(-1))


def _scale(name, v, counts) -> np.ndarray:
    if isinstance(v, bool):
        raise TypeError(f"{name} must be a float or a float32 array, got {v!r}")
    if isinstance(v, (float, int)):
        return np.array([v], np.float32)
    if isinstance(v, np.ndarray) or isinstance(v, np.floating):
        a = np.asarray(v)
        if a.dtype != np.float32:
            raise TypeError(f"{name} must be float32, got {a.dtype}")
        return _flat(name, a, counts)
    raise TypeError(f"{name} must be a float or a float32 array, got {type(v).__name__}")


def _zero_point(name, v, dtype, counts) -> Optional[np.ndarray]:
    if v is None:
        return None
    if isinstance(v, bool):
        raise TypeError(f"{name} must be an integer or a numpy value, got {v!r}")
    if isinstance(v, int):
        info = np.iinfo(dtype)
        if not info.min <= v <= info.max:
            raise ValueError(f"{name} {v} does not fit {np.dtype(dtype)}")
        return np.array([v], dtype)
    if isinstance(v, (np.ndarray, np.generic)):
        a = np.asarray(v)
        if a.dtype != np.dtype(dtype):
            raise TypeError(f"{name} has dtype {a.dtype}; it must be {np.dtype(dtype)}, its tensor's type")
        return _flat(name, a, counts)
    raise TypeError(f"{name} must be an integer or a numpy value, got {type(v).__name__}")


def _small_desc(data_type: DataType, count: int, rank: int) -> TensorDesc:
    """{1,1,1,1} or {1,M,1,1} in the conv's rank (the C axis carries M, as ONNX Runtime does)."""
    shape = [1] * rank
    shape[1] = count
    return TensorDesc(data_type, shape)


def _pair(name, v):
    is_int = lambda i: isinstance(i, (int, np.integer)) and not isinstance(i, bool)
    if is_int(v):
        v = (v, v)
    if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__") or not all(is_int(i) for i in v):
        raise TypeError(f"{name} must be an int or a pair of ints, got {v!r}")
    t = tuple(int(i) for i in v)
    if len(t) != 2 or any(not 0 <= i <= 0xFFFFFFFF for i in t):
        raise ValueError(f"{name} must be two integers in 0..2**32-1 (DirectML's UINT), got {v!r}")
    return t


ArrayLike = Union[np.ndarray, Sequence, np.generic, float, int]


def quantized_linear_convolution(input: ArrayLike, input_scale: ArrayLike, input_zero_point: Optional[ArrayLike],
                                 filter: ArrayLike, filter_scale: ArrayLike, filter_zero_point: Optional[ArrayLike],
                                 bias: Optional[np.ndarray], output_scale: ArrayLike,
                                 output_zero_point: Optional[ArrayLike], *,
                                 strides=(1, 1), dilations=(1, 1), start_padding=(0, 0),
                                 end_padding=(0, 0), group_count=1, output_dtype=None,
                                 device: Optional[Device] = None, out: Optional[np.ndarray] = None) -> np.ndarray:
    """QUANTIZED_LINEAR_CONVOLUTION of an NCHW int8/uint8 array with an (M, C/groups, KH, KW)
    int8/uint8 filter. Scales: floats or float32 arrays (filter: 1 or M elements); zero points:
    numpy values of their tensor's dtype (a Python int takes the input's or filter's dtype), or
    None; bias: None or M int32 values. The output dtype is output_zero_point's when that is a
    numpy value, else output_dtype. input and filter: anything np.asarray takes; an empty batch
    gives an empty result; out: a preallocated result array. Returns the NCHW output."""
    on_device, device = device_for(input, device, "input")
    if not on_device:
        input = as_host_array(input, "input")
    if not isinstance(filter, DeviceArray):
        filter = as_host_array(filter, "filter")
    empty_batch = not on_device and input.ndim == 4 and input.shape[0] == 0 and 0 not in input.shape[1:]
    if empty_batch:       # checked and shaped through a batch of one; the result is empty
        input = np.zeros((1,) + input.shape[1:], input.dtype)
    op, inputs, result, finish = prepare_call(
        input, input_scale, input_zero_point, filter, filter_scale, filter_zero_point, bias,
        output_scale, output_zero_point, strides=strides, dilations=dilations,
        start_padding=start_padding, end_padding=end_padding, group_count=group_count,
        output_dtype=output_dtype, device=device)
    shape, dtype = op.output_descs[0].sizes, op.output_descs[0].data_type.numpy_dtype
    shape = ((0,) + tuple(shape[1:])) if empty_batch else tuple(shape)
    check_out(out, shape, dtype, DeviceArray if on_device else np.ndarray)
    if on_device:         # Buffer to Buffer: the result stays on the device
        y = out if out is not None else empty(shape, dtype, device)
        op.execute(inputs=inputs, outputs=[y.buffer])
        return y
    if empty_batch:
        return into_out(out, np.empty(shape, dtype))
    op.execute(inputs=inputs, outputs=[result])
    return into_out(out, finish())


def small_tensor_bytes(a) -> Optional[np.ndarray]:
    """A scale, zero-point or bias array's bytes, padded past the 4 bytes a tensor's total size
    rounds up to (None stays None)."""
    if a is None:
        return None
    return np.concatenate([np.ascontiguousarray(a).reshape(-1).view(np.uint8), np.zeros(4, np.uint8)])


def _binding(a, name: str):
    """(TensorDesc, binding) of the input or filter: a DeviceArray's Buffer, or host bytes."""
    if isinstance(a, DeviceArray):
        return TensorDesc(DataType.from_numpy(a.dtype), a.shape), a.buffer
    return array_binding(a, name)


def constant_filter(op: QuantizedLinearConvolutionOperator, inputs: list) -> tuple:
    """A new operator like `op` whose filter and zero points (where present) are OWNED_BY_DML,
    initialized with those of `inputs` (a model's constant weights: the cooperative-matrix path
    then packs the filter once, here, instead of at every execution), and the inputs to execute it
    with (those slots None)."""
    d = op.desc
    owned = lambda t: None if t is None else dataclasses.replace(t, flags=t.flags | TensorFlags.OWNED_BY_DML)
    desc = dataclasses.replace(d, filter_tensor=owned(d.filter_tensor),
                               input_zero_point_tensor=owned(d.input_zero_point_tensor),
                               filter_zero_point_tensor=owned(d.filter_zero_point_tensor))
    new = op.device.create_operator(desc)
    slots = [s for s in (FILTER, INPUT_ZP, FILTER_ZP) if new.input_descs[s] is not None]
    new.initialize([b if i in slots else None for i, b in enumerate(inputs)])
    return new, [None if i in slots else b for i, b in enumerate(inputs)]


def prepare_call(input, input_scale, input_zero_point, filter, filter_scale, filter_zero_point,
                 bias, output_scale, output_zero_point, *, strides, dilations, start_padding,
                 end_padding, group_count, output_dtype, device):
    """quantized_linear_convolution's arguments as (operator, input bindings, output binding,
    a function returning the output array once the operator has run)."""
    for name, a in (("input", input), ("filter", filter)):
        if not isinstance(a, (np.ndarray, DeviceArray)):
            raise TypeError(f"{name} must be a numpy array or a dmlvk.DeviceArray, got {type(a).__name__}")
        if a.dtype not in (np.int8, np.uint8):
            raise TypeError(f"{name} must be int8 or uint8, got {a.dtype}")
        if a.ndim != 4:
            raise ValueError(f"{name} must be 4-D, got shape {a.shape}")
        if a.size == 0:
            raise ValueError(f"{name} has an empty dimension: shape {a.shape}")
    m = filter.shape[0]
    xs = _scale("input_scale", input_scale, {1})
    ws = _scale("filter_scale", filter_scale, {1, m})
    ys = _scale("output_scale", output_scale, {1})
    xzp = _zero_point("input_zero_point", input_zero_point, input.dtype, {1})
    wzp = _zero_point("filter_zero_point", filter_zero_point, filter.dtype, {1, m})
    if wzp is not None and wzp.size != ws.size:   # DirectML wants a zero point of its scale's Sizes
        ws, wzp = np.broadcast_to(ws, (m,)).copy(), np.broadcast_to(wzp, (m,)).copy()
    if isinstance(output_zero_point, (np.ndarray, np.generic)):
        zp_dtype = np.asarray(output_zero_point).dtype
        if output_dtype is not None and np.dtype(output_dtype) != zp_dtype:
            raise ValueError(f"output_dtype {np.dtype(output_dtype)} conflicts with output_zero_point's dtype {zp_dtype}")
        out_dtype = zp_dtype
    elif output_dtype is None:
        raise ValueError("output_dtype is required when output_zero_point is not a numpy value")
    else:
        out_dtype = np.dtype(output_dtype)
    if out_dtype not in (np.int8, np.uint8):
        raise TypeError(f"the output dtype must be int8 or uint8, got {out_dtype}")
    yzp = _zero_point("output_zero_point", output_zero_point, out_dtype, {1})
    if bias is not None:
        if not isinstance(bias, np.ndarray) or bias.dtype != np.int32:
            raise TypeError("bias must be an int32 numpy array")
        if bias.size != m:
            raise ValueError(f"bias must hold {m} elements (one per output channel), got {bias.size}")
        bias = np.ascontiguousarray(bias.reshape(-1))
    strides, dilations = _pair("strides", strides), _pair("dilations", dilations)
    start_padding, end_padding = _pair("start_padding", start_padding), _pair("end_padding", end_padding)
    if isinstance(group_count, bool) or not isinstance(group_count, (int, np.integer)) or group_count < 1:
        raise ValueError(f"group_count must be a positive integer, got {group_count!r}")
    if input.shape[1] % group_count or m % group_count or filter.shape[1] * group_count != input.shape[1]:
        raise ValueError(f"group_count {group_count} does not fit input channels {input.shape[1]}, "
                         f"filter shape {filter.shape}")

    in_desc, x_raw = _binding(input, "input")
    f_desc, w_raw = _binding(filter, "filter")
    qdt = DataType.from_numpy
    desc = QuantizedLinearConvolutionDesc(
        in_desc, _small_desc(DataType.FLOAT32, 1, 4),
        None if xzp is None else _small_desc(qdt(input.dtype), 1, 4),
        f_desc, _small_desc(DataType.FLOAT32, ws.size, 4),
        None if wzp is None else _small_desc(qdt(filter.dtype), wzp.size, 4),
        None if bias is None else _small_desc(DataType.INT32, m, 4),
        _small_desc(DataType.FLOAT32, 1, 4),
        None if yzp is None else _small_desc(qdt(out_dtype), 1, 4),
        None,                                       # set once the output sizes are known
        strides, dilations, start_padding, end_padding, int(group_count))
    try:
        out_sizes = desc.output_sizes()
    except ZeroDivisionError:
        raise ValueError("strides must be at least 1") from None
    if any(s < 1 for s in out_sizes):
        raise ValueError(f"the (dilated) kernel is larger than the padded input: output sizes {out_sizes}")
    out_desc = TensorDesc(qdt(out_dtype), out_sizes)
    desc = dataclasses.replace(desc, output_tensor=out_desc)
    device = resolve_device(device)
    op = cached_operator(device, desc)
    out = np.empty(out_desc.total_bytes, np.uint8)
    pad4 = small_tensor_bytes
    inputs = [x_raw, pad4(xs), pad4(xzp), w_raw, pad4(ws), pad4(wzp), pad4(bias), pad4(ys), pad4(yzp)]
    return op, inputs, out, lambda: out[:out_desc.element_count].view(out_dtype).reshape(out_sizes)
