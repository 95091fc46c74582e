"""QUANTIZED_LINEAR_CONVOLUTION's variant table: one row a kernel variant (its shader, specialization
constants by name, the defines the package builds it with, what it requires of the device, the limits
it is correct within, its tuning numbers and where it measured faster). The plan that walks the table
for a description is routines.py; the shared-memory formulas are shared_memory.py. Each row's
`measured` is one sentence; the whole record of its measurements and of the experiments not kept is
benchmarks/evidence/<variant>.md (docs/kernels.md links it)."""
from __future__ import annotations

from ...runtime.capabilities import CPU_KERNELS, SUBGROUP_SHUFFLE
from ..variants import Rule, Table, Variant
from .layout import PUSH
from .shared_memory import COOPMAT_SHARED, DEPTHWISE_SHARED, DOT_SHARED

H200 = "NVIDIA H200, driver 580.159.04"
LAVAPIPE = "lavapipe (Mesa 22.3.6, 2 cores)"
_C = ("KH", "KW", "X_SIGNED", "W_SIGNED", "Y_SIGNED", "WIDE")      # every kernel's first six
_PACKED = _C + ("WM_SPEC", "PACKED_OUT", "SPLIT")
_ROWS = _C + ("SX", "DX", "SHIFT", "OPT", "INT32_OUT", "CG", "ROWS")
_INT32 = _C + (None, None, None, None, "INT32_OUT")
_DOT = _C + ("SX", "TILES", "SHIFT", "OPT", "INT32_OUT", "CG", "MB", "CL_OUT", "BLOCKS", "WSUM", "CL_IN", "WALK",
             "CL_VEC")
# the float tail's constants after a kernel's own (routines.float_output: block, order, scale bits, zero point bits)
_FLOAT_TAIL = ("D2S", "D2S_CRD", "DQ_SCALE", "DQ_ZP_BITS")
# tensor units with 64- or 128-channel tiles; emulated (64-channel tiles: routines._packed_filter), its loops
# unrolled for devices with a loop-iteration limit or rolled (routines._emulation)
EMULATIONS = ((("COOPMAT_EMULATED", 1),), (("COOPMAT_EMULATED", 1), ("COOPMAT_EMU_ROLLED", 1)))
_WIDE_BUILDS = ((("WM_FIXED", 2),), (("WM_FIXED", 4),)) + tuple((("WM_FIXED", 2),) + e for e in EMULATIONS)
_COOPMAT_BUILDS = _WIDE_BUILDS + ((("WM_FIXED", 1),),) + tuple((("WM_FIXED", 1),) + e for e in EMULATIONS)
_HALO_BUILDS = tuple((("WM_FIXED", 1),) + e for e in ((),) + EMULATIONS)



def _group(d) -> tuple:
    """(output, input) channels a group of a convolution description."""
    m, cg, _, _ = d.conv_params()["filter"]
    return m // d.group_count, cg


# Where a variant measured faster: Rule(text, test(desc, selection, **facts)), the tuning numbers by name
_DOT_WINS = Rule("at most DOT_FEW_CHANNELS output channels a group with COOPMAT_MIN_INPUT_CHANNELS input "
                 "channels or more, or DOT_NARROW_MIN_CHANNELS output channels or more with fewer input "
                 "channels, on devices other than CPUs (and CPUs where DOT_ON_CPU)",
                 lambda d, sel: (sel["DOT_ON_CPU"] or not sel.on_cpu) and (
                     _group(d)[0] <= sel["DOT_FEW_CHANNELS"] if _group(d)[1] >= sel["COOPMAT_MIN_INPUT_CHANNELS"]
                     else _group(d)[0] >= sel["DOT_NARROW_MIN_CHANNELS"]))
_GEMM_WINS = Rule("GEMM_MIN_CHANNELS output channels a group or more",
                  lambda d, sel: _group(d)[0] >= sel["GEMM_MIN_CHANNELS"])

_VARIANTS = [
    Variant("conv.coopmat", "qlinear_conv_coopmat", _PACKED,
            "int8 tensor units: the packed input and filter multiplied as 16 x 16 x 32 subgroup matrices, "
            "32 x WM output channels by 128 pixels a workgroup",
            requires=("cooperativeMatrix", "shaderInt8"), builds=_COOPMAT_BUILDS, needs=(COOPMAT_SHARED,),
            tuning=dict(COOPMAT_MIN_CHANNELS=4, COOPMAT_MIN_INPUT_CHANNELS=8, COOPMAT_MAX_PACKED_BYTES=1 << 31,
                        COOPMAT_SMALL_TILE_CHANNELS=32,
                        PACK_INPUT_QUADS_FROM=16384),
            measured="0.7-1.0x cuBLAS int8 on the benchmark's ResNet layers (batch 32); 32-channel tiles up to "
                     "COOPMAT_SMALL_TILE_CHANNELS channels a group (the ESPCN 3x3 64->32 layer: 125 us against "
                     "133 with 64-channel tiles at 540x960)",
            measured_on=H200),
    Variant("conv.coopmat.nhwc", "qlinear_conv_coopmat", _PACKED,
            "the cooperative-matrix kernel reading a channels-last input itself (channels contiguous, Cg a "
            "multiple of 32, other strides multiples of 16 bytes): each 16-byte piece of a K step from the tap's "
            "input position, the padding byte outside the input; no packed input (split K as its plan needs)",
            requires=("cooperativeMatrix", "shaderInt8"), builds=tuple(b + (("NHWC_INPUT", 1),) for b in _COOPMAT_BUILDS),
            needs=(COOPMAT_SHARED,)),
    Variant("conv.coopmat.halo", "qlinear_conv_coopmat_halo",
            _PACKED + ("CQ", "INT32_OUT", "WSUM", "TILES", "LANES", "KSPLIT", "AREG"),
            "stride and dilation 1, a channels-last input as conv.coopmat.nhwc reads it: a workgroup computes "
            "8 output rows by 32 columns for 32 channels, the tile's input window and filter rows loaded into "
            "shared memory once and each tap's fragments read from there (a 3x3 layer's input read about 1.3 "
            "times, not 9 times); several tiles a workgroup past HALO_WORKGROUPS (TILES), channels-last outputs "
            "requantized in the accumulators' lanes (LANES), the input channels in slices (KSPLIT) and the "
            "filter fragments in registers (AREG), as its evidence page describes",
            requires=("cooperativeMatrix", "shaderInt8", SUBGROUP_SHUFFLE), builds=_HALO_BUILDS, needs=(COOPMAT_SHARED,),
            tuning=dict(HALO_MIN_CHANNELS=16, HALO_MAX_CHANNELS=32, HALO_WORKGROUPS=132, HALO_LANES=True, HALO_KSPLIT=1,
                        HALO_AREG=True, HALO_AREG_FRAGMENTS=18, HALO_AREG_STAGE=True),
            wins=Rule("HALO_MIN_CHANNELS to HALO_MAX_CHANNELS output channels a group",
                      lambda d, sel: sel["HALO_MIN_CHANNELS"] <= _group(d)[0] <= sel["HALO_MAX_CHANNELS"]),
            measured="3x3 layers of 16-32 output channels reading a channels-last input: the ESPCN 64->32 "
                     "layer at 540x960 124.5 us against conv.coopmat.nhwc's 129.5 (77.9 us since its tuning); "
                     "wider groups lose",
            measured_on=H200),
    Variant("conv.coopmat.splitk", "qlinear_conv_coopmat", _PACKED,
            "the cooperative-matrix kernel with K split into slices, for small batches whose output tiles "
            "cannot fill the GPU, then a reduction",
            requires=("cooperativeMatrix", "shaderInt8"), builds=(), needs=(COOPMAT_SHARED,),
            tuning=dict(SPLITK_TARGET=128, SPLITK_BELOW=66, SPLITK_MAX_PARTIAL_BYTES=256 << 20),
            wins=Rule("fewer than SPLITK_BELOW output tiles", lambda d, sel, tiles: tiles < sel["SPLITK_BELOW"]),
            measured="fewer than SPLITK_BELOW output tiles: K split so that about SPLITK_TARGET workgroups run",
            measured_on=H200),
    Variant("conv.coopmat.pack_input", "qconv_pack_input", _PACKED + ("QUAD",),
            "the input repacked for the cooperative-matrix kernel (padded, 32 channels a block)",
            step_of="conv.coopmat"),
    Variant("conv.coopmat.pack_filter", "qconv_pack_filter", _PACKED,
            "the filter repacked for the cooperative-matrix kernel (at initialization where it is OWNED_BY_DML)",
            step_of="conv.coopmat"),
    Variant("conv.coopmat.splitk.reduce", "qlinear_conv_splitk", _PACKED,
            "split K's partial sums added and requantized", step_of="conv.coopmat.splitk"),
    Variant("conv.dot", "qlinear_conv_dot", _DOT,
            "groups with few output channels or few input channels, word-aligned input rows, horizontal "
            "dilation 1: an invocation computes OPT outputs of a row for MB channels with packed 4 x 8-bit dot "
            "products (four taps of a filter row each; with KW % 4 == 1, the last column's taps four rows a "
            "word), its input rows loaded once for all of them; whole-word "
            "output rows, or a channels-last output four channels a word, or an invocation's block of 8 or 16 "
            "channels a store where the strides come in as many bytes (CL_VEC, DOT_VEC_STORES; blocks of "
            "DOT_VEC_CHANNELS then where the channels come in as many); a workgroup computes TILES tiles of "
            "invocations one after the other, its channels' filter staged once",
            requires=("shaderIntegerDotProduct",),
            tuning=dict(DOT_OUTPUTS=8, DOT_FEW_OUTPUTS=4, DOT_FEW_INVOCATIONS=1 << 20, DOT_CHANNELS=8,
                        DOT_FEW_CHANNELS=8, DOT_NARROW_MIN_CHANNELS=16, DOT_MAX_FILTER_WORDS=4096, DOT_ON_CPU=False,
                        DOT_TILES=1, DOT_TILES_BLOCKS=4, DOT_MIN_WORKGROUPS=1024, DOT_VEC_STORES=True,
                        DOT_VEC_CHANNELS=16),
            wins=_DOT_WINS,
            needs=(DOT_SHARED,),
            measured="the ESPCN layers at 540x960: 3x3 32->4 42 us against the packed cooperative-matrix "
                     "path's 76 + 16, 5x5 1->64 60 us against conv.depthwise.rows' 94",
            measured_on=H200),
    Variant("conv.dot.nhwc", "qlinear_conv_dot", _DOT,
            "conv.dot on a channels-last input (channel stride 1, the other strides multiples of 16 bytes, "
            "16 or more input channels a group in sixteens): an invocation loads 16 channels of a window "
            "position at a time, each dot product over four channels of one tap; horizontal stride 1 and at "
            "most DOT_NHWC_MOST_TAPS taps a filter (its loops unrolled within a window row); the ONNX runner "
            "plans the layer before it to write that layout where DOT_NHWC_PLANNED. WALK where the device "
            "shuffles within subgroups, strides and dilations are 1 and one block holds the group's channels: "
            "each subgroup walks DOT_WALK output rows (DOT_FEW_WALK where that leaves fewer than "
            "DOT_WALK_MIN_SUBGROUPS subgroups), a lane an output column, each input row loaded once and the "
            "window's next KW - 1 positions taken from the next lanes",
            requires=("shaderIntegerDotProduct",), tuning=dict(DOT_NHWC_PLANNED=True, DOT_NHWC_MOST_TAPS=9,
                                                                DOT_WALK=16, DOT_FEW_WALK=8,
                                                                DOT_WALK_MIN_SUBGROUPS=4000),
            wins=_DOT_WINS,
            needs=(DOT_SHARED,),
            measured="the ESPCN 3x3 32->4 layer: 28.1 us against conv.dot's 42.5 at 540x960, 101.6 against "
                     "137.3 at 1080x1920; walking 16 rows 88.6 us against 117.5 at 1080x1920",
            measured_on=H200),
    Variant("conv.dot.float", "qlinear_conv_dot", _DOT + _FLOAT_TAIL,
            "conv.dot whose epilogue also dequantizes each output byte to float32 and stores it where a "
            "DepthToSpace puts it: the ONNX runner's QLinearConv -> [DepthToSpace ->] DequantizeLinear as one "
            "kernel (float_output), where the convolution's plan is conv.dot or conv.dot.nhwc writing rows",
            requires=("shaderIntegerDotProduct",), extends="conv.dot", measured_on=H200),
    Variant("conv.depthwise.rows", "qlinear_conv_depthwise_rows", _ROWS,
            "depthwise layers and narrow groups with word-aligned rows: an invocation holds its window rows' "
            "input words in registers (32, 16, 8 or 4 outputs), walking down the rows where stride and dilation "
            "are 1",
            tuning=dict(DEPTHWISE_ROW_WORDS=48, DEPTHWISE_ROW_MAX_TAPS=64, DEPTHWISE_WALK_OUTPUTS=8,
                        DEPTHWISE_WALK_INVOCATIONS=96 * 1024, DEPTHWISE_WALK_ON_CPU=False),
            measured="walking down the rows leaves at least DEPTHWISE_WALK_INVOCATIONS invocations; on lavapipe "
                     "the walk, and 8 outputs an invocation, took twice as long (not on CPU devices)",
            measured_on=f"{H200}; {LAVAPIPE}"),
    Variant("conv.depthwise.dot", "qlinear_conv_depthwise_rows", _ROWS,
            "the rows kernel with one packed 4 x 8-bit dot product an output and filter row (filters at most 4 "
            "taps wide, horizontal dilation 1)",
            requires=("shaderIntegerDotProduct",), builds=((("DOT", 1),),),
            tuning=dict(DEPTHWISE_DOT_ON_CPU=False),
            wins=Rule("devices other than CPUs (and CPUs where DEPTHWISE_DOT_ON_CPU)",
                      lambda d, sel: sel["DEPTHWISE_DOT_ON_CPU"] or not sel.on_cpu),
            measured="lavapipe runs the dot products lane by lane, 2-2.5x slower than the float32 products "
                     "(not on CPU devices)",
            measured_on=LAVAPIPE),
    Variant("conv.depthwise.tile", "qlinear_conv_depthwise", _C + (None, "PACKED_OUT", "TILE", "WORD_ROWS"),
            "depthwise layers: 16 x 64 output tiles whose input window and taps fit a shared-memory tile",
            tuning=dict(DEPTHWISE_TILE=(16, 64), DEPTHWISE_TILE_MAX=6144), needs=(DEPTHWISE_SHARED,)),
    Variant("conv.cpu", "qlinear_conv_cpu", _C,
            "CPU devices (lavapipe): CPU_PIXELS output pixels x 16 channels an invocation, a 16-byte filter "
            "vector and one input byte for 64 multiply-adds",
            requires=(CPU_KERNELS,), tuning=dict(CPU_MIN_CHANNELS=8, CPU_PIXELS=4, CPU_LOCAL=64), measured_on=LAVAPIPE),
    Variant("conv.cpu.pack_filter", "qconv_pack_filter_cpu", _C, "the filter packed per 16-channel tile",
            step_of="conv.cpu"),
    Variant("conv.gemm", "qlinear_conv_gemm", _C,
            "portable implicit GEMM: 64 x 64 tiles of (output channel, pixel) a group",
            tuning=dict(GEMM_MIN_CHANNELS=8),
            wins=_GEMM_WINS),
    Variant("conv.direct", "qlinear_conv", _C,
            "portable direct convolution, 4 output channels an invocation: any description DirectML accepts "
            "(narrow groups, output grids off the formula)"),
    Variant("integer.gemm", "qlinear_conv_gemm", _INT32, "ONNX ConvInteger (int32 output) through the GEMM",
            wins=_GEMM_WINS),
    Variant("integer.direct", "qlinear_conv", _INT32, "ONNX ConvInteger (int32 output), direct"),
]
# every convolution shader reads qconv_common.glsl's push block
TABLE = Table("QUANTIZED_LINEAR_CONVOLUTION", _VARIANTS, push={v.shader: PUSH for v in _VARIANTS})
