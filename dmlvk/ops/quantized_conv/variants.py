"""QUANTIZED_LINEAR_CONVOLUTION's variant table and the plan that walks it.

A plan is the kernels one execution runs and the scratch memory they pass data through: the
cooperative-matrix path (int8 tensor units: the input and filter repacked, then 16 x 16 x 32
matrix products, with split K for small batches), the depthwise kernels, the CPU-device kernel
(lavapipe), or the portable direct and implicit-GEMM kernels, which run every description DirectML
accepts. Measurements: NVIDIA H200 and Mesa 22.3.6's lavapipe, as each variant says."""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from ...enums import DataType
from ...runtime.capabilities import CPU_KERNELS, SUBGROUP_SHUFFLE
from ...runtime.kernel import Kernel
from ...tensor import TensorDesc
from ..variants import Need, Rule, Selection, Table, Variant
from .layout import CPU_FILTER, FILTER, INPUT, OUTPUT, PARAMS, PART, PUSH, WP, XP, as_4d

H200 = "NVIDIA H200, driver 580.159.04"
LAVAPIPE = "lavapipe (Mesa 22.3.6, 2 cores)"
_C = ("KH", "KW", "X_SIGNED", "W_SIGNED", "Y_SIGNED", "WIDE")      # every kernel's first six
_PACKED = _C + ("WM_SPEC", "PACKED_OUT", "SPLIT")
_ROWS = _C + ("SX", "DX", "SHIFT", "OPT", "INT32_OUT", "CG", "ROWS")
_INT32 = _C + (None, None, None, None, "INT32_OUT")
_DOT = _C + ("SX", "TILES", "SHIFT", "OPT", "INT32_OUT", "CG", "MB", "CL_OUT", "BLOCKS", "WSUM", "CL_IN", "WALK",
             "CL_VEC")
# the float tail's constants after a kernel's own (float_output: block, order, scale bits, zero point bits)
_FLOAT_TAIL = ("D2S", "D2S_CRD", "DQ_SCALE", "DQ_ZP_BITS")
# tensor units with 64- or 128-channel tiles; emulated (64-channel tiles: _packed_filter), its loops
# unrolled for devices with a loop-iteration limit or rolled (_emulation)
_EMULATIONS = ((("COOPMAT_EMULATED", 1),), (("COOPMAT_EMULATED", 1), ("COOPMAT_EMU_ROLLED", 1)))
_GATHERING_BUILDS = ((("WM_FIXED", 2),), (("WM_FIXED", 4),)) + tuple((("WM_FIXED", 2),) + e for e in _EMULATIONS)
_COOPMAT_BUILDS = _GATHERING_BUILDS + ((("WM_FIXED", 1),),) + tuple((("WM_FIXED", 1),) + e for e in _EMULATIONS)
_NARROW_BUILDS = tuple(b + (("NARROW", 1),) for b in _GATHERING_BUILDS)
_ROW_TILE_BUILDS = tuple(b + (("ROW_TILES", 1),) for b in _GATHERING_BUILDS)
_HALO_BUILDS = tuple((("WM_FIXED", 1),) + e + (("HALO", 1),) for e in ((),) + _EMULATIONS)
_PAIR_BUILDS = tuple(b + (("PAIR", 1),) for b in _HALO_BUILDS)
_WINDOW_BUILDS = tuple((("WM_FIXED", wm),) + e + (("WINDOW_TAPS", 1),) for wm in (1, 2) for e in ((),) + _EMULATIONS)

def coopmat_shared_bytes(constants: dict, defines) -> int:
    """Shared memory of a qlinear_conv_coopmat.comp kernel: the window and filter rows (HALO: 8 + KH - 1
    rows of 32 + KW - 1 positions, 32 filter rows (none with AREG 2 and real matrices: one vector),
    each with 16 bytes of padding, and their channels' three numbers), the row tiles Xt
    (ROW_TILES: KH rows of 128 + KW - 1 positions of 32 channels) or the A and B tiles (32 x WM
    channels and 128 pixels, BK = 64 bytes of K and 16 of padding a row), and its epilogue's 8 KiB
    stage, which with real matrices and no row tiles (with HALO always) is the B tile's memory."""
    defines = tuple(defines)
    if ("WINDOW_TAPS", 1) in defines:
        kh, kw = constants["KH"], constants["KW"]
        return 48 * (32 * constants["WM_SPEC"] + 256) + 4 * ((8 + kh - 1) * (32 + kw - 1) * (32 // (kh * kw)) // 4 + 2) + 128
    if ("HALO", 1) in defines:
        kh, kw, cq = constants["KH"], constants["KW"], constants["CQ"]
        cqw = cq // constants["KSPLIT"]                       # a slice's vectors (KSPLIT; the pair's is 1)
        window, rows, channels = (8 + kh - 1) * (32 + kw - 1), 32 * (kh * kw * cqw + 1), 32 * 3 * 4
        emulated = ("COOPMAT_EMULATED", 1) in defines
        lanes = 1024 if emulated else 0                               # the emulation's lane exchanges
        if constants.get("AREG") == 2 and not emulated:               # the filter rows in registers alone
            rows = 1
        if ("PAIR", 1) not in defines:
            return 16 * (window * (cqw + 1) + rows) + channels + lanes
        # the layer before's filter rows and its subgroups' B tiles in the rows' memory, its input window's
        # bytes, its channels' numbers, its taps' table and a flag
        first = (8 + kh + constants["KH1"] - 2) * (32 + kw + constants["KW1"] - 2)
        return (16 * (window * (cq + 1) + max(rows, 32 * cq + 256)) + channels + 4 * (-(-first // 4)) + 192 * cq
                + 132 + lanes)
    if ("ROW_TILES", 1) in defines:
        return 8192 + constants["KH"] * (128 + constants["KW"] - 1) * 2 * 16
    stage = 8192 if ("COOPMAT_EMULATED", 1) in defines else 0
    return stage + (32 * constants["WM_SPEC"] + 128) * 5 * 16


_COOPMAT_SHARED = Need("its tiles within maxComputeSharedMemorySize (12,800 bytes with 32-channel tiles, 15,360 with 64, "
                       "20,480 with 128, 8,192 more emulated; the row-tile kernel 8,192 + KH x (127 + KW) x 32; the "
                       "halo kernel 16 x ((7 + KH) x (31 + KW) x (C + 1) + 32 x (KH x KW x C + 1)) + 384, C = Cg / 16 / KSPLIT, "
                       "with AREG 2 and real matrices 16 in place of the filter rows' 32 x (KH x KW x C + 1); the "
                       "window kernel 48 x (32 x WM + 256) plus its window of (7 + KH) x (31 + KW) x 32 / (KH x KW) bytes)",
                       lambda c, k, caps: caps.fits_shared(coopmat_shared_bytes(c, k.defines)))
_FEW = _PACKED + ("CQ", "INT32_OUT", "WSUM", "OUT_CL", "RUNS")


def few_shared_bytes(constants: dict, subgroups: int) -> int:
    """Shared memory of a qlinear_conv_coopmat_few.comp kernel: each subgroup's window (KH rows of
    31 + KW positions, Cg / 16 + 1 vectors each) or its two stages of 32 x 20 ints, the larger, and the
    16 filter rows (KH x KW x Cg bytes, one vector of padding where that is an even number of them)."""
    kh, kw, cq = constants["KH"], constants["KW"], constants["CQ"]
    return subgroups * 16 * max(kh * (31 + kw) * (cq + 1), 320) + 16 * 16 * (kh * kw * cq | 1) + 192


_FEW_SHARED = Need("its subgroups' windows, filter rows and channels' numbers within maxComputeSharedMemorySize (16 x "
                   "the larger of KH x (31 + KW) x (Cg / 16 + 1) and 320 bytes a subgroup, plus 256 x (KH x KW x Cg / "
                   "16 | 1) + 192)",
                   lambda c, k, caps: caps.fits_shared(few_shared_bytes(c, k.local_size // 32)))
_DOT_WINS = Rule("at most DOT_FEW_CHANNELS output channels a group with COOPMAT_MIN_INPUT_CHANNELS input "
                 "channels or more, or DOT_NARROW_MIN_CHANNELS output channels or more with fewer input "
                 "channels, on devices other than CPUs (and CPUs where DOT_ON_CPU)",
                 lambda d, mg, cg, few, narrow_least, least_in, on_cpu, dot_on_cpu: (dot_on_cpu or not on_cpu)
                 and ((cg >= least_in and mg <= few) or (cg < least_in and mg >= narrow_least)))
_DOT_SHARED = Need("its channels' filter words (BLOCKS x (MB x (its words a channel + 1) + 1)) within "
                   "maxComputeSharedMemorySize",
                   lambda c, k, caps: caps.fits_shared(4 * c["BLOCKS"] * (c["MB"] * (_dot_channel_words(c) + 1) + 1)))


def _dot_channel_words(c) -> int:
    """Filter words of an output channel in conv.dot's shared memory (its constants c): CG x KH rows of
    ceil(KW / 4) words (with KW % 4 == 1, CG x (KH rows of KW // 4 words and ceil(KH / 4) words of the
    last column)), or with CL_IN KH x KW taps of CG / 4 words."""
    kh, kw, cg = c["KH"], c["KW"], c["CG"]
    if c["CL_IN"]:
        return kh * kw * (cg // 4)
    return cg * (kh * (kw // 4) + -(-kh // 4)) if kw % 4 == 1 else cg * kh * -(-kw // 4)
_DEPTHWISE_SHARED = Need("its tile of TILE words within maxComputeSharedMemorySize",
                         lambda c, k, caps: caps.fits_shared(4 * c["TILE"]))


def _forced_only_rule(prefix: str) -> Rule:
    """The rule of a variant that measured slower than the one chosen instead, so that it runs only where
    forced unless PREFIX_BY_DEFAULT: PREFIX_MIN_CHANNELS output channels a group or more, not on CPUs."""
    return Rule(f"{prefix}_BY_DEFAULT, {prefix}_MIN_CHANNELS output channels a group or more, on devices other "
                "than CPUs", lambda d, mg, least, on_cpu, by_default: by_default and mg >= least and not on_cpu)


_GEMM_WINS = Rule("GEMM_MIN_CHANNELS output channels a group or more", lambda d, mg, least: mg >= least)

_VARIANTS = [
    Variant("conv.coopmat", "qlinear_conv_coopmat", _PACKED,
            "int8 tensor units: the packed input and filter multiplied as 16 x 16 x 32 subgroup matrices, "
            "32 x WM output channels by 128 pixels a workgroup",
            requires=("cooperativeMatrix", "shaderInt8"), builds=_COOPMAT_BUILDS, needs=(_COOPMAT_SHARED,),
            tuning=dict(COOPMAT_MIN_CHANNELS=4, COOPMAT_MIN_INPUT_CHANNELS=8, COOPMAT_MAX_PACKED_BYTES=1 << 31,
                        COOPMAT_SMALL_TILE_CHANNELS=32,
                        PACK_INPUT_QUADS_FROM=16384),
            measured="0.7-1.0x cuBLAS int8 on the benchmark's ResNet layers (batch 32); the input packing loads "
                     "whole words of 4 columns from PACK_INPUT_QUADS_FROM invocations (7-18 % faster at batch 32, "
                     "1-1.5 us slower at batch 1); 32-channel tiles up to COOPMAT_SMALL_TILE_CHANNELS channels a "
                     "group (the ESPCN 3x3 64->32 layer: 125 us against 133 with 64-channel tiles at 540x960, 468 "
                     "against 501 at 1080x1920)",
            measured_on=H200),
    Variant("conv.coopmat.nhwc", "qlinear_conv_coopmat", _PACKED,
            "the cooperative-matrix kernel reading a channels-last input itself (channels contiguous, Cg a "
            "multiple of 32, other strides multiples of 16 bytes): each 16-byte piece of a K step from the tap's "
            "input position, the padding byte outside the input; no packed input (split K as its plan needs)",
            requires=("cooperativeMatrix", "shaderInt8"), builds=tuple(b + (("NHWC_INPUT", 1),) for b in _COOPMAT_BUILDS),
            needs=(_COOPMAT_SHARED,)),
    Variant("conv.coopmat.halo", "qlinear_conv_coopmat",
            _PACKED + ("CQ", "INT32_OUT", "WSUM", "TILES", "LANES", "KSPLIT", "AREG"),
            "stride and dilation 1, a channels-last input as conv.coopmat.nhwc reads it: a workgroup computes "
            "8 output rows by 32 columns for 32 channels, the tile's input window and filter rows loaded into "
            "shared memory once, each tap's fragments read from there (a 3x3 layer's input read about 1.3 "
            "times, not 9 times); the window sums compiled out (WSUM 0) where the filter zero points are known "
            "at initialization and need none; a channels-last output 16 channels of a pixel a store where a "
            "group's channels come in sixteens and its strides in 16 bytes, else four channels a word where "
            "they come in fours; past HALO_WORKGROUPS tiles (one group, one 32-channel tile), each workgroup "
            "computes TILES tiles one after the other, its filter rows loaded once and each next tile's window "
            "loaded into registers while the tile before multiplies; channels-last outputs requantized in the "
            "accumulators' own lanes and brought to the lanes that store them by subgroup shuffles (LANES, "
            "HALO_LANES) where the device's accumulators keep their elements as NVIDIA's do (each subgroup "
            "checks; else through a stage in shared memory); with HALO_KSPLIT (KSPLIT) the group's input "
            "channels taken in slices, the window and filter rows in shared memory a slice's at a time, so that "
            "an SM can hold two of its workgroups (slower on the H200: off); with HALO_AREG (AREG), where the "
            "output is channels-last and a subgroup's filter fragments number HALO_AREG_FRAGMENTS or fewer, "
            "each subgroup multiplies two rows of the tile for 16 channels, its filter fragments held in "
            "registers, loaded where they are new (once where the workgroup's tiles share them) from the "
            "filter rows staged in shared memory (AREG 1), or straight from Wp where HALO_AREG_STAGE is off "
            "or the rows do not fit beside the window (AREG 2: no filter rows in shared memory), and each B "
            "fragment read once for both rows (no next window in registers then)",
            requires=("cooperativeMatrix", "shaderInt8", SUBGROUP_SHUFFLE), builds=_HALO_BUILDS, needs=(_COOPMAT_SHARED,),
            tuning=dict(HALO_MIN_CHANNELS=16, HALO_MAX_CHANNELS=32, HALO_WORKGROUPS=132, HALO_LANES=True, HALO_KSPLIT=1,
                        HALO_AREG=True, HALO_AREG_FRAGMENTS=18, HALO_AREG_STAGE=True),
            wins=Rule("HALO_MIN_CHANNELS to HALO_MAX_CHANNELS output channels a group",
                      lambda d, mg, least, most: least <= mg <= most),
            measured="3x3 layers at 540x960 reading a channels-last input (tools/model_probe.py's ESPCN with other "
                     "widths): 64->32 took 124.5 us against conv.coopmat.nhwc's 129.5, 64->24 123.2 against 130.2, "
                     "64->16 91.3 against 103.5, 32->32 85.8 against 90.7; 64->32 at 1080x1920 485 against 501. "
                     "Wider groups lose (two workgroups a tile, the window loaded twice): 64->48 212.6 against "
                     "169.9, 64->64 246.5 against 196.5; narrower ones were not measured. The window sums compiled "
                     "out (the ONNX runner's constant zero points): 64->32 118.4-118.9 us against 125.2 with them "
                     "(a same-run probe), 463.9 against 487.9 at 1080x1920 (runs a day apart); with the epilogue "
                     "reading its stage as vectors 106.8 / 413.7. Its channels-last output (the ONNX runner's "
                     "hand-off to conv.dot.nhwc) stored 16 bytes a lane: 111.8 / 435.2 us in the model benchmark "
                     "against 113.5-115.4 / 438.4-442.1 with two words a lane (two earlier runs the same day; "
                     "runs differ by about 2 %). Its loads' loops and (real matrices) its taps' loop unrolled, and its "
                     "channels-last stage's columns 20 ints apart (16 put four lanes' stores in one bank): 77.9 / "
                     "296.4 us in the model benchmark; in same-run probes 112.5 -> 89.0 (unrolled; 102 registers an "
                     "invocation against 80) -> 76.8 us at 540x960. Two rows of the tile a subgroup (each A "
                     "fragment loaded once for both, workgroups of 128) lost: 315.9 against 77.8 us at 540x960, "
                     "246 registers an invocation against 106 (a same-run probe, tools/shader_ablation.py). Several "
                     "tiles a workgroup at 1080x1920 (8,100 tiles, same-run probes in the frame): 291.1 / 289.5 us "
                     "with HALO_WORKGROUPS 264 (129 registers: one workgroup an SM, two waves), 286.5-286.6 with "
                     "132, 294.9 with 396, 300.8 with 528, 304.4 with 1,056, against 299.9-302.3 with one tile a "
                     "workgroup; without the next window's loads in registers 292.4 with 264 (114 registers). "
                     "The lanes' epilogue (LANES; same-run probes in the frame, tools/ablations/lanes.py): 276.5 us "
                     "against the stage's 290.3 at 1080x1920, 1,052.9 against 1,103.7 at 2160x3840 (its channels' "
                     "numbers staged with the filter rows: 282.8 and 1,072.1 with them loaded in each epilogue); "
                     "with HALO_WORKGROUPS 132 273.9 and 1,044.0. Where its time goes (1080x1920, in the frame, "
                     "tools/ablations/halo.py): 271.1 us, 217.5 without the taps, 209.9 without the global loads, "
                     "210.6 without the epilogue, 45.1 with none of the three; its taps alone run at 935 TOPS from "
                     "shared memory (tools/sm_probe.py: 1,236 with A in registers, 1,265 with both), about 81 us of "
                     "this layer. An SM holds one of its workgroups at a time (130 registers an invocation; 46 KiB of "
                     "shared memory, and the driver gives each workgroup of 32 KiB or more an SM of its own: "
                     "tools/sm_probe.py), so the phases of its tiles run one after another: with 4- and 2-row tiles "
                     "(workgroups of 128 and 64 invocations) it took 455.7-462.3 and 900.6-902.8 us with 264 to "
                     "1,056 workgroups, time growing with the tile count; without the next window in registers "
                     "273.7-285.2 with 132 to 528 workgroups; A fragments read from device memory rather than shared "
                     "memory 863.4-932.7 (246-252 registers). Its channels in two slices (HALO_KSPLIT 2: 26 KiB of "
                     "shared memory a workgroup, 98 registers an invocation; tools/ablations/ksplit.py): 339.7 / "
                     "342.3 / 353.4 us with 132 / 264 / 528 workgroups against 269.3 as it is. Its filter fragments "
                     "in registers (HALO_AREG; tools/ablations/areg.py, same-run probes in the frame): 70.1 / 256.3 / "
                     "976.3 us at 540x960 / 1080x1920 / 2160x3840 against 71.0 / 267.3 / 1,029.8, 255 registers an "
                     "invocation against 126 (so still one workgroup an SM, though its shared memory is 28 KiB); "
                     "with 264 workgroups 75.6 / 262.9 / 1,006.1; a subgroup barrier after each window row's "
                     "multiplies (258.6 at 1080x1920) or each tap column's did not lower the registers; the "
                     "fragments loaded again at every tile (not held) 565.9-583.8. With AREG, where its time goes "
                     "(1080x1920, in the frame, tools/ablations/halo.py): 258.6 us, 177.9 without the taps, 178.4 "
                     "without the global loads (98 registers: the filter's fragments constants then), 199.7 without "
                     "the epilogue, 124.0 with the loads alone, 95.7 with the epilogue alone, 42.2 with none. Tried "
                     "with AREG and not kept (1080x1920 / 540x960, same-run probes in the frame): subgroups that "
                     "only load the next window into their registers beside the 8 that multiply (workgroups of 320 / "
                     "384 / 512 invocations) 935.0 / 551.6 / 462.3 and 242.3 / 137.7 / 124.4 against 255.4 / 70.1 "
                     "(the workgroup's size bounds the registers to 168 / 168 / 128); four rows a subgroup "
                     "(workgroups of 128, 288 B loads a tile instead of 384) 320.0 / 330.6 / 335.6 / 344.4 with "
                     "132 / 264 / 396 / 528 workgroups against 255.2, and 84.4-96.8 against 70.1; the next window "
                     "in registers as without AREG (tools/ablations/prefetch.py) 252.7-254.8 against 255.4-259.6, "
                     "71.7-71.9 against 70.1-70.4, its loads issued after the taps 278.3 / 75.8, after the "
                     "epilogue's first barrier (in flight through the epilogue) 268.7 against 257.3 (without AREG "
                     "278.5 against 268.3 with them before the taps); the epilogue's "
                     "first barrier at a workgroup's first tile only 254.5, with the next window too 248.8 against "
                     "259.6, but 268.3-268.8 against 251.9 (the barrier at every tile) in a build that also kept "
                     "the shared flag safety asks for (every subgroup's lanes as expected), read or not. Its "
                     "fragments loaded from the filter rows staged in shared memory at a workgroup's first tile "
                     "(AREG 1) rather than straight from Wp (AREG 2, which the driver compiles to a byte load an "
                     "element, 288 LDG.E.S8 a lane: tools/sass.py; tools/ablations/areg_stage.py): 65.0 / 250.6 "
                     "us against 70.4 / 255.2 at 540x960 / 1080x1920, 168 registers an invocation against 255",
            measured_on=H200),
    Variant("conv.coopmat.halo.pair", "qlinear_conv_coopmat",
            _PACKED + ("CQ", "INT32_OUT", "WSUM", "TILES", "LANES", "KSPLIT", "AREG", "KH1", "KW1", "X1_SIGNED"),
            "conv.coopmat.halo computing its input window itself from the layer before it (one input channel, "
            "at most 32 taps, stride and dilation 1) with packed 4 x 8-bit dot products, requantized into the "
            "window, so that its output never reaches device memory; the ONNX runner's QLinearConv -> "
            "QLinearConv as one kernel (pair_plan, ConvolutionPairOperator); with PAIR_LANES the first layer on "
            "the cooperative matrices instead, requantized in the accumulators' lanes where they keep their "
            "elements as NVIDIA's do (slower on the H200: off)",
            requires=("cooperativeMatrix", "shaderInt8", "shaderIntegerDotProduct", SUBGROUP_SHUFFLE),
            builds=_PAIR_BUILDS,
            needs=(_COOPMAT_SHARED,), extends="conv.coopmat.halo", tuning=dict(PAIR_MAX_POSITIONS=0, PAIR_LANES=False),
            wins=Rule("the first layer's output at most PAIR_MAX_POSITIONS positions (N x OH x OW; 0: never, "
                      "since conv.dot stores a block's channels at a time)",
                      lambda d, positions, most: positions <= most),
            measured="the ESPCN 5x5 1->64 and 3x3 64->32 layers, in the frame (tools/model_probe.py's model, a "
                     "same-run probe): 139.8 us at 540x960 against conv.dot's 65.0 + conv.coopmat.halo's 78.1 (the "
                     "frame 180.0 against 186.1), but 551.7 at 1080x1920 against 198.1 + 299.8, where conv.dot "
                     "fills the GPU (at 540x960 its 2,025 workgroups are about one wave) and the pair's first layer "
                     "costs what conv.dot's does, about 1.33 times over (each 8 x 32 tile computes 10 x 34 of its "
                     "positions). Its first version multiplied the first layer on the cooperative matrices and "
                     "requantized through a stage in shared memory: 163.3-178.2 us at 540x960, each fragment's "
                     "round trip through the stage waiting on the one before. Its first layer on the matrices again "
                     "with PAIR_LANES (each subgroup's B tile gathered from the window, requantized in the "
                     "accumulators' lanes, the second layer's channels-last epilogue in them too): 185.0-187.4 us "
                     "against 140.2-141.6 at 540x960, 715.1 against 552.7 at 1080x1920 (same-run probes, "
                     "tools/ablations/pair_lanes.py), so it stays off; the second layer's lanes' epilogue alone "
                     "(LANES, the first layer on dot products) 141.2-143.6 against 140.0-142.6. Since conv.dot "
                     "stores a block's 16 channels of a pixel at a time (CL_VEC) the two apart are faster at 540x960 "
                     "too: 48.4 + 70.9 us against the pair's 143.4, the frame 157.2 against 177.9 (same-run probes, "
                     "tools/ablations/pair_or_not.py), so PAIR_MAX_POSITIONS is 0",
            measured_on=H200),
    Variant("conv.coopmat.window", "qlinear_conv_coopmat", _PACKED + ("CQ", "INT32_OUT", "WSUM"),
            "narrow groups (KH x KW x Cg at most 32 taps, e.g. a first layer with one input channel), stride and "
            "dilation 1, at most 64 output channels a group: a workgroup computes 8 output rows by 32 columns for "
            "every channel, its input window loaded into shared memory once and each pixel's taps gathered from "
            "there (one 32-deep K chunk); a channels-last output stored as conv.coopmat.halo stores it",
            requires=("cooperativeMatrix", "shaderInt8"), builds=_WINDOW_BUILDS, needs=(_COOPMAT_SHARED,),
            tuning=dict(WINDOW_MIN_CHANNELS=16, WINDOW_BY_DEFAULT=False),
            wins=_forced_only_rule("WINDOW"),
            measured="slower than conv.dot, so chosen only where forced: the ESPCN first layer 5x5 1->64 at 540x960 "
                     "took 95.3 us against conv.dot's 72.4, 358.5 against 272.1 at 1080x1920 (tools/model_probe.py, "
                     "same runs). Without its epilogue it took 44.5 us; its first epilogue (each fragment's bytes "
                     "requantized in the stage, then gathered four channels a word) took 134.7 us in all; 32-channel "
                     "tiles for the 64 channels (two workgroups a tile) 104.4",
            measured_on=H200),
    Variant("conv.coopmat.few", "qlinear_conv_coopmat_few", _FEW,
            "groups with few output channels (at most 16; a last layer with 4), one group, stride and dilation "
            "1, a channels-last input as conv.coopmat.halo reads it: pixels as the matrices' rows, each subgroup "
            "RUNS runs of 32 output pixels of a row for every channel, one after the other, its input rows "
            "staged in its own shared memory and each tap's two A fragments read from there, B from the packed "
            "filter's rows staged once a workgroup; output rows of whole words, or a channels-last output four "
            "channels a word",
            requires=("cooperativeMatrix", "shaderInt8"), builds=((),) + _EMULATIONS, needs=(_FEW_SHARED,),
            tuning=dict(FEW_MAX_CHANNELS=8, FEW_BY_DEFAULT=False, FEW_SUBGROUPS=8, FEW_RUNS=4),
            wins=Rule("FEW_BY_DEFAULT, at most FEW_MAX_CHANNELS output channels a group, on devices other than CPUs",
                      lambda d, mg, most, on_cpu, by_default: by_default and mg <= most and not on_cpu),
            measured="slower than conv.dot.nhwc, so chosen only where forced: the ESPCN's last layer (3x3 32->4, "
                     "as conv.coopmat.few.float) took 140.0 us against conv.dot.float's 117.5 at 1080x1920, 517.2 "
                     "against 430.6 at 2160x3840, 32.8 against 33.8 at 540x960 (same-run probes in the frame, "
                     "tools/shader_ablation.py; 8 subgroups of 4 runs). At 1080x1920: 8 subgroups of 1 run 168.8, "
                     "2 of 4 157.7, 4 of 1, 4 and 16 255.2-273.2, 218.9 and 193.3; the next run's window loaded "
                     "while the taps multiply (116 registers an invocation against 62) 187.1-197.8 with 8 subgroups "
                     "of 2-16 runs, 350.6 with 4 of 8; its first version (4 subgroups of one run, B read from device "
                     "memory, the window's loads one after another) 307. With 4 subgroups of one run: 166.9 us of "
                     "255.2 without the window's loads, 217.5 without the taps, 232.4 without the final stores. Its "
                     "float epilogue in the accumulators' own lanes (each lane dequantizing the elements it holds, "
                     "8-byte stores, no stage, each later run of a column strip loading one input row): 350.7 us "
                     "(154 registers an invocation), 190.7 with its second pair of elements a lane left out (82; "
                     "channels 8-15, none here), against 136.4 through the stage and conv.dot.float's 117.5 (same "
                     "run, 1080x1920)",
            measured_on=H200),
    Variant("conv.coopmat.few.float", "qlinear_conv_coopmat_few", _FEW + _FLOAT_TAIL,
            "conv.coopmat.few whose epilogue dequantizes each output to float32 and stores it where a "
            "DepthToSpace puts it, as conv.dot.float does: the ONNX runner's QLinearConv -> [DepthToSpace ->] "
            "DequantizeLinear as one kernel (float_output)",
            requires=("cooperativeMatrix", "shaderInt8"), builds=((),) + _EMULATIONS, needs=(_FEW_SHARED,),
            extends="conv.coopmat.few", measured_on=H200),
    Variant("conv.coopmat.splitk", "qlinear_conv_coopmat", _PACKED,
            "the cooperative-matrix kernel with K split into slices, for small batches whose output tiles "
            "cannot fill the GPU, then a reduction",
            requires=("cooperativeMatrix", "shaderInt8"), builds=(), needs=(_COOPMAT_SHARED,),
            tuning=dict(SPLITK_TARGET=128, SPLITK_BELOW=66, SPLITK_MAX_PARTIAL_BYTES=256 << 20),
            wins=Rule("fewer than SPLITK_BELOW output tiles", lambda d, tiles, below: tiles < below),
            measured="fewer than SPLITK_BELOW output tiles: K split so that about SPLITK_TARGET workgroups run",
            measured_on=H200),
    Variant("conv.coopmat.narrow", "qlinear_conv_coopmat", _PACKED,
            "narrow groups (KH x KW x Cg at most 32 taps, e.g. a first layer with one input channel): the "
            "cooperative-matrix kernel with one 32-deep K chunk, each workgroup gathering its pixels' taps "
            "straight from the input (no packed input) and its channels' taps from the packed filter",
            requires=("cooperativeMatrix", "shaderInt8"), builds=_NARROW_BUILDS, needs=(_COOPMAT_SHARED,),
            tuning=dict(NARROW_MIN_CHANNELS=16, NARROW_BY_DEFAULT=False),
            wins=_forced_only_rule("NARROW"),
            measured="slower than conv.depthwise.rows, so chosen only where forced: the ESPCN first layer 5x5 "
                     "1->64 at 540x960 took 156 us against the rows kernel's 94 (tools/model_probe.py)",
            measured_on=H200),
    Variant("conv.coopmat.rows", "qlinear_conv_coopmat", _PACKED,
            "stride and dilation 1: the cooperative-matrix kernel over tiles of 128 pixels of one output row, "
            "each 32-channel chunk of the KH input rows they cover loaded once into shared memory (any input "
            "strides) and read at each tap's offset; no packed input",
            requires=("cooperativeMatrix", "shaderInt8"), builds=_ROW_TILE_BUILDS, needs=(_COOPMAT_SHARED,),
            tuning=dict(ROW_TILES_MIN_WIDTH=64, ROW_TILES_MAX_SHARED=32768, ROW_TILES_BY_DEFAULT=False),
            wins=Rule("ROW_TILES_BY_DEFAULT, output rows ROW_TILES_MIN_WIDTH wide or more, on devices other than "
                      "CPUs", lambda d, ow, least, on_cpu, by_default: by_default and ow >= least and not on_cpu),
            measured="slower than the packed path, so chosen only where forced: the ESPCN layers at 540x960 took "
                     "421 us (3x3 64->32) and 160 us (3x3 32->4) against the packed path's 151 + 41 and 89 + 16 "
                     "(tools/model_probe.py, before the packed kernel's 16-byte stores: 134 + 42 and 76 + 16 since)",
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
            needs=(_DOT_SHARED,),
            measured="the ESPCN layers at 540x960 (tools/model_probe.py): 3x3 32->4 took 42 us against the "
                     "packed cooperative-matrix path's 76 + 16 (its packing); 5x5 1->64 took 60 us against "
                     "conv.depthwise.rows' 94. 8 outputs and 8 channels an invocation measured fastest of "
                     "4-16 outputs and 4-32 channels; the 3x3 64->32 layer took 449 us against that path's 134 + 41. "
                     "Several tiles a workgroup where it holds several channel blocks: 5x5 1->64 66.1 -> 60.0 us "
                     "(3 tiles), 243.6 -> 204.2 at 1080x1920 (4); with one block (3x3 32->4) any count was "
                     "slower (42.4 -> 52.2 us with 2, 159.0 -> 205.2 at 1080x1920 with 5). Timed in the frame "
                     "(each dispatch after the one it depends on, not over its own repeated input), 4 outputs "
                     "an invocation where 8 leave fewer than DOT_FEW_INVOCATIONS: 5x5 1->64 at 540x960 (518,400 "
                     "invocations with 8) 68.9 -> 64.5 us, the last layer (conv.dot.float) 48.6 -> 37.6 "
                     "(64,896) and 121.7 -> 117.6 at 1080x1920 (259,200); 5x5 1->64 at 1080x1920 (2,073,600) "
                     "went 204.8 -> 219.8 with 4, so keeps 8. The last column's taps four rows a word (7 dot "
                     "products an output for 5x5, not 10): 5x5 1->64 at 1080x1920 in the frame 174.3 us against "
                     "198.7 (same run); with it, 16 channels an invocation took 200.7-201.2, 12 or 16 outputs "
                     "194.9-195.5, DOT_TILES_BLOCKS 2 188.0. Each channel's bias in its starting sum: 165.9 us "
                     "against 171.8. A block's channels a store (same-run probes in the frame, "
                     "tools/ablations/vec_stores.py, dot_tuning.py, pair_or_not.py): 8 a store 156.7 us against "
                     "161.8 four a word (stores cut: 153.1); blocks of 16 channels, 16 a store, 153.1 against 156.4-"
                     "156.7 at 1080x1920, 549.6 against 590.8 at 2160x3840, 48.4 against 53.0 at 540x960; "
                     "16-byte stores of 8-channel blocks trading halves by subgroup shuffles 213.5 against 171.5 "
                     "(211.1 with the stores cut: the shuffles' cost). Its machine code (tools/sass.py): each "
                     "packed dot product an IDP.4A with a zero accumulator, summed by an IADD3 or IMAD.IADD (0.75 "
                     "adds a dot product); SPIR-V's accumulating form, which saturates (OpSUDotAccSat, "
                     "tools/ablations/dot_acc.py), came out as IDP.4A with SEL / PLOP3 saturation: 359.7 us "
                     "against 152.8 at 1080x1920 (conv.dot.float 225.0 against 87.3). A tile of 4 outputs for 16 "
                     "channels is about 1,680 instructions an invocation, 26 an output (7 IDP.4A, 5.2 adds, 1.9 "
                     "LDS, about 8 requantizing): at one instruction a clock per SM quarter, 104 us at 1080x1920 "
                     "at 1.98 GHz. 8 outputs an invocation there (DOT_FEW_INVOCATIONS 0, "
                     "tools/ablations/dot_outputs.py): 151.6-151.8 us against 152.8 (168 registers against 119)",
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
            needs=(_DOT_SHARED,),
            measured="the ESPCN model's 3x3 32->4 layer (tools/model_probe.py): 28.1 us against conv.dot's 42.5 "
                     "at 540x960, 101.6 against 137.3 at 1080x1920; the halo kernel writing its input "
                     "channels-last took 112.8 against 103.3 us (442.1 against 395.5): the frame 204.2 against "
                     "209.2 us at 540x960, about 1.5 % slower at 1080x1920 (across runs). WALK, as conv.dot.float "
                     "(the same layer with its DepthToSpace and DequantizeLinear), same-run probes in the frame "
                     "(tools/ablations/walk.py): 117.5 us without it at 1080x1920 (its window's loads bound it: "
                     "60.9 without them, tools/ablations/dot_float.py), 106.0 / 93.7 / 88.6 / 90.9 walking 4 / 8 "
                     "/ 16 / 32 rows; 429.7 against 390.1 / 328.4 / 300.8 / 298.2 at 2160x3840; 34.0 against "
                     "32.0 / 29.2 / 32.3 / 46.0 at 540x960 (1,020 subgroups with 16 rows)",
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
                      lambda d, on_cpu, dot_on_cpu: dot_on_cpu or not on_cpu),
            measured="lavapipe runs the dot products lane by lane, 2-2.5x slower than the float32 products "
                     "(not on CPU devices)",
            measured_on=LAVAPIPE),
    Variant("conv.depthwise.tile", "qlinear_conv_depthwise", _C + (None, "PACKED_OUT", "TILE", "WORD_ROWS"),
            "depthwise layers: 16 x 64 output tiles whose input window and taps fit a shared-memory tile",
            tuning=dict(DEPTHWISE_TILE=(16, 64), DEPTHWISE_TILE_MAX=6144), needs=(_DEPTHWISE_SHARED,)),
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
_DEPTHWISE = ("conv.depthwise.rows", "conv.depthwise.dot", "conv.depthwise.tile")


def plan(desc, sel: Selection) -> tuple:
    """(kernels, scratch Buffer sizes in bytes) one execution of the description runs under the
    selection (Table.selection, Table.chosen_by)."""
    if desc.int32_output:
        kernels, scratch = [_portable(desc, sel, ("integer.direct", "integer.gemm"), dict(INT32_OUT=1))], ()
    else:
        kernels, scratch = _plan(desc, sel)
    sel.chosen(next(k for k in kernels if not TABLE[k.variant].step_of), "this convolution", kernels)
    return kernels, scratch


def _spec_push(d) -> tuple:
    """(specialization constants 1-6, push constants), by name, shared by every kernel of the operator."""
    geo = d.conv_params()
    t = d.tensors()
    n, c, h, w = geo["input"]
    m, cg, kh, kw = geo["filter"]
    strides4 = lambda d: as_4d(d.effective_strides, 0)
    out4 = as_4d(d.output_grid(), 1)
    spec = dict(KH=kh, KW=kw, X_SIGNED=int(t[INPUT].data_type == DataType.INT8),
                W_SIGNED=int(t[FILTER].data_type == DataType.INT8), Y_SIGNED=int(t[OUTPUT].data_type == DataType.INT8),
                WIDE=int(d.wide_taps()))
    push = dict(in_sizes=(n, c, h, w), in_strides=strides4(t[INPUT]), w_strides=strides4(t[FILTER]),
                     out_sizes=out4, out_strides=strides4(t[OUTPUT]), conv_stride=geo["strides"],
                     dilation=geo["dilations"], start_pad=geo["start"], cg=cg, mg=m // d.group_count)
    return spec, push


def _portable(d, sel: Selection, names=("conv.direct", "conv.gemm"), extra=None) -> Kernel:
    """The portable kernel for this description: the direct shader, or the implicit GEMM from
    GEMM_MIN_CHANNELS output channels a group (names: the two variants, extra: constants after the
    common six)."""
    spec, push = _spec_push(d)
    spec.update(extra or {})
    m, _, _, _ = d.conv_params()["filter"]
    out4 = as_4d(d.output_grid(), 1)
    mg = m // d.group_count
    slots = (INPUT, FILTER, PARAMS, OUTPUT)
    if sel.where_wins(names[1], d, mg, sel["GEMM_MIN_CHANNELS"]):
        # dmlvk/shaders/qlinear_conv_gemm.comp: 64 x 64 tiles of (output channel, pixel) per group
        pixels = out4[0] * out4[2] * out4[3]
        groups = d.group_count * -(-mg // 64) * -(-pixels // 64)
        gemm = TABLE[names[1]].kernel(spec=spec, push=push, count=groups * 256, slots=slots, local_size=256)
        if sel.usable(gemm):            # workgroups of 256: else the direct kernel's 64
            return gemm
    tiles = -(-mg // 4)
    return TABLE[names[0]].kernel(
        spec=spec, push=push, count=out4[0] * d.group_count * tiles * out4[2] * out4[3],
        slots=slots, local_size=64)


def _plan(d, sel: Selection) -> tuple:
    """(kernels, scratch Buffer sizes in bytes) a device with these capabilities runs: the
    depthwise tile kernel, or the cooperative-matrix path, where they fit (see DEPTHWISE_*,
    COOPMAT_*), else the CPU kernel on CPU devices, else the portable kernel. Narrow groups (fewer
    than COOPMAT_MIN_INPUT_CHANNELS input channels a group, one included) take the depthwise rows
    kernel except where the CPU kernel applies."""
    if d.off_formula():
        return [_portable(d, sel)], ()
    window = _window_plan(d, sel) if sel.may("conv.coopmat.window") else None
    if window is not None and all(sel.usable(k) for k in window[0]):
        return window
    few = _few_plan(d, sel) if sel.may("conv.coopmat.few") else None
    if few is not None and all(sel.usable(k) for k in few[0]):
        return few
    dot = _dot_kernel(d, sel) if sel.may("conv.dot", "conv.dot.nhwc") else None
    if dot is not None and sel.usable(dot):
        return [dot], ()
    narrow = _narrow_plan(d, sel) if sel.may("conv.coopmat.narrow") else None
    if narrow is not None and all(sel.usable(k) for k in narrow[0]):
        return narrow
    depthwise = _depthwise_kernel(d, sel) if sel.may(*_DEPTHWISE) else None
    cpu = _cpu_plan(d, sel) if sel.may("conv.cpu") else None
    if depthwise is not None and cpu is None and sel.usable(depthwise):
        return [depthwise], ()
    halo = _halo_plan(d, sel) if sel.may("conv.coopmat.halo") else None
    if halo is not None and all(sel.usable(k) for k in halo[0]):
        return halo
    rows = _row_tiles_plan(d, sel) if sel.may("conv.coopmat.rows") else None
    if rows is not None and all(sel.usable(k) for k in rows[0]):
        return rows
    geo = (_packed_geometry(d, sel) if sel.may("conv.coopmat", "conv.coopmat.splitk", "conv.coopmat.nhwc")
           else None)
    if geo is None:
        return cpu if cpu is not None else ([_portable(d, sel)], ())
    spec, push = _spec_push(d)
    spec.update(WM_SPEC=geo["wm"], PACKED_OUT=_packed_output(d), SPLIT=geo["split"])
    tiles = geo["tiles"]
    split = geo["split"] > 1
    nhwc = sel.where_wins("conv.coopmat.nhwc", d) and _channels_last_input(d)
    quad = (as_4d(d.tensors()[INPUT].effective_strides, 0)[3] == 1
            and geo["quad_items"] >= sel["PACK_INPUT_QUADS_FROM"])
    name = "conv.coopmat.nhwc" if nhwc else "conv.coopmat.splitk" if split else "conv.coopmat"
    kernels = [] if nhwc else [
        TABLE["conv.coopmat.pack_input"].kernel(spec=dict(spec, QUAD=int(quad)), push=push,
               count=geo["quad_items"] if quad else geo["xp_bytes"] // 32,
               slots=(INPUT, FILTER, PARAMS, XP), local_size=128)]
    kernels += [
        _filter_packing(d, spec, push, geo["mp"]),
        TABLE[name].kernel(spec=spec, push=push, count=tiles * geo["split"] * 256,
               slots=(INPUT if nhwc else XP, WP, PARAMS, PART if split else OUTPUT), local_size=256,
               defines=(("WM_FIXED", geo["wm"]),) + _emulation(sel.capabilities) + ((("NHWC_INPUT", 1),) if nhwc else ()))]
    if split:
        m = d.conv_params()["filter"][0]
        kernels.append(TABLE["conv.coopmat.splitk.reduce"].kernel(spec=spec, push=push,
                              count=m * -(-geo["pixels"] // 4), slots=(PART, WP, PARAMS, OUTPUT),
                              local_size=128))
    if not all(sel.usable(k) for k in kernels):         # past the device's limits: as without the path
        return cpu if cpu is not None else ([_portable(d, sel)], ())
    xp_bytes = 4 if nhwc else geo["xp_bytes"]            # no packed input: XP's scratch is a placeholder
    if split:
        return kernels, (xp_bytes, geo["wp_bytes"], geo["part_bytes"])
    return kernels, (xp_bytes, geo["wp_bytes"])


# the variants that read a channels-last input in place (_channels_last_input), no packing kernel
READS_CHANNELS_LAST = ("conv.coopmat.nhwc", "conv.coopmat.halo", "conv.dot.nhwc", "conv.coopmat.few")


def _channels_last_input(d) -> bool:
    """Whether the cooperative-matrix kernel reads the input itself (NHWC_INPUT): its channels
    contiguous, Cg a multiple of 32 (Xp's channel padding is none), its other strides multiples of
    16 bytes, taps within 32-bit positions, byte offsets within int32."""
    geo = d.conv_params()
    cg = geo["filter"][1]
    sn, sc, sh, sw = as_4d(d.input_tensor.effective_strides, 0)
    return (sc == 1 and cg % 32 == 0 and all(s % 16 == 0 for s in (sn, sh, sw)) and not d.wide_taps()
            and d.input_tensor.total_bytes < 1 << 31)      # byte offsets as int32


def _cpu_plan(d, sel: Selection) -> Optional[tuple]:
    """On CPU devices (lavapipe), groups of CPU_MIN_CHANNELS output channels or more: the
    filter packed per 16-channel tile (dmlvk/shaders/qconv_pack_filter_cpu.comp), then
    dmlvk/shaders/qlinear_conv_cpu.comp, which loads a 16-byte filter vector and one input byte
    per pixel for 64 multiply-adds. None elsewhere."""
    if sel.capabilities is None or not sel.capabilities.cpu_kernels:
        return None
    geo = d.conv_params()
    m, cg, kh, kw = geo["filter"]
    mg = m // d.group_count
    if mg < sel["CPU_MIN_CHANNELS"]:
        return None
    spec, push = _spec_push(d)
    out4 = as_4d(d.output_grid(), 1)
    tiles, k = -(-mg // 16), cg * kh * kw
    pixels = out4[0] * out4[2] * out4[3]
    per_group = sel["CPU_LOCAL"] * sel["CPU_PIXELS"]
    return ([TABLE["conv.cpu.pack_filter"].kernel(spec=spec, push=push, count=d.group_count * tiles * k,
                    slots=(INPUT, FILTER, PARAMS, CPU_FILTER), local_size=64),
             TABLE["conv.cpu"].kernel(spec=spec, push=push,
                    count=d.group_count * tiles * -(-pixels // per_group) * sel["CPU_LOCAL"],
                    slots=(INPUT, CPU_FILTER, PARAMS, OUTPUT), local_size=sel["CPU_LOCAL"])],
            (d.group_count * tiles * k * 16,))


def _coopmat_device(caps) -> bool:
    """Whether the device runs the cooperative-matrix kernels: int8 x int8 -> int32 16 x 16 x 32
    subgroup matrices and subgroups of 32 invocations (emulated ones are, whatever the device's
    size)."""
    return not (caps is None or (16, 16, 32) not in caps.cooperative_matrix("int8", "int8", "int32")
                or not caps.offers("shaderInt8")
                or not caps.emulated_cooperative_matrix and (
                    caps.subgroup_size != 32 or caps.min_subgroup_size not in (0, 32)
                    or caps.max_subgroup_size not in (0, 32)))


def _word_rows(d) -> tuple:
    """(input rows word aligned, output rows whole words): the input's columns contiguous and its other
    strides multiples of 4 bytes; the output likewise, with OW a multiple of 4."""
    strides_in = as_4d(d.input_tensor.effective_strides, 0)
    strides_out = as_4d(d.output_tensor.effective_strides, 0)
    ow = as_4d(d.output_grid(), 1)[3]
    return (strides_in[3] == 1 and all(s % 4 == 0 for s in strides_in[:3]),
            strides_out[3] == 1 and ow % 4 == 0 and all(s % 4 == 0 for s in strides_out[:3]))


def _dot_kernel(d, sel: Selection) -> Optional[Kernel]:
    """conv.dot (dmlvk/shaders/qlinear_conv_dot.comp) where it runs the description (packed dot
    products on the device, word-aligned input rows, output rows of whole words or a channels-last
    output whose channel blocks are whole words, horizontal dilation 1, a workgroup's
    filter within DOT_MAX_FILTER_WORDS words) and wins (its rule); conv.dot.nhwc likewise where the
    input is channels-last as it reads it (_dot_channels_last_input) instead of word-aligned rows:
    OPT = DOT_OUTPUTS outputs of a row (DOT_FEW_OUTPUTS where that leaves fewer than
    DOT_FEW_INVOCATIONS invocations) and MB = at most DOT_CHANNELS output channels an invocation.
    None elsewhere."""
    caps = sel.capabilities
    geo = d.conv_params()
    m, cg, kh, kw = geo["filter"]
    mg = m // d.group_count
    sw, dw = geo["strides"][1], geo["dilations"][1]
    opt = sel["DOT_OUTPUTS"]
    rows_in, rows_out = _word_rows(d)
    name = "conv.dot" if rows_in else "conv.dot.nhwc"
    if (caps is None or not caps.integer_dot_product or d.wide_taps() or dw != 1 or (opt * sw) % 4
            or not (rows_in or _dot_channels_last_input(d)) or not sel.may(name)
            or not sel.where_wins(name, d, mg, cg, sel["DOT_FEW_CHANNELS"], sel["DOT_NARROW_MIN_CHANNELS"],
                                  sel["COOPMAT_MIN_INPUT_CHANNELS"], caps.cpu_kernels, sel["DOT_ON_CPU"])):
        return None
    per_channel = _dot_channel_words(dict(KH=kh, KW=kw, CG=cg, CL_IN=not rows_in))
    most = min(mg, sel["DOT_CHANNELS"], sel["DOT_MAX_FILTER_WORDS"] // per_channel)
    if most == 0:
        return None
    mb = -(-mg // -(-mg // most))         # the group's channels in blocks of even size
    # channels last: four channels a word, blocks of whole words that divide the group
    cl = not rows_out and _channels_last_words(d)
    if cl:
        mb = next((b for b in range(most - most % 4, 0, -4) if mg % b == 0), 0)
    # a block's channels a store (CL_VEC below): DOT_VEC_CHANNELS channels an invocation (rows input)
    # where the group's channels come in as many and the strides in as many bytes
    most_vec = sel["DOT_VEC_CHANNELS"]
    if (cl and rows_in and sel["DOT_VEC_STORES"] and most_vec in (8, 16) and mg % most_vec == 0
            and _channels_last_words(d, most_vec) and most_vec * per_channel <= sel["DOT_MAX_FILTER_WORDS"]):
        mb = most_vec
    if not (rows_out or cl) or mb == 0:
        return None
    # conv.dot.nhwc's loops over taps, channels and outputs, unrolled within a window row, and the
    # row's OPT + KW - 1 positions held: bounded (a 1 x 6 window at stride 4 took SwiftShader's compiler
    # past 4 GB, others past 20)
    if not rows_in and (sw != 1 or kh * kw > sel["DOT_NHWC_MOST_TAPS"]):
        return None
    # channels last: a workgroup takes every block of the group where they divide its invocations and
    # their filter fits, so that one output pixel's channels are stored together
    blocks = mg // mb if cl and 128 % (mg // mb) == 0 and mg * per_channel <= sel["DOT_MAX_FILTER_WORDS"] else 1
    n, _, oh, ow = as_4d(d.output_grid(), 1)
    channel_blocks = d.group_count * -(-mg // (mb * blocks))

    def tiles_of(outputs):                 # of a channel block (128 invocations each)
        return -(-(n * oh * -(-ow // outputs)) // (128 // blocks))
    # fewer outputs an invocation where few invocations would run: more of them in flight hide the
    # loads' latency (the ESPCN's first and last layers at 540x960 in the frame on the H200)
    few = sel["DOT_FEW_OUTPUTS"]
    if channel_blocks * tiles_of(opt) * 128 < sel["DOT_FEW_INVOCATIONS"] and few % 4 == 0 and 0 < few < opt:
        opt = few
    tiles = tiles_of(opt)
    # DOT_TILES tiles a workgroup (its filter staged once for them; DOT_TILES_BLOCKS where it holds
    # several channel blocks) where DOT_MIN_WORKGROUPS workgroups remain
    most_tiles = sel["DOT_TILES_BLOCKS" if blocks > 1 else "DOT_TILES"]
    per_wg = max(1, min(most_tiles, channel_blocks * tiles // max(1, sel["DOT_MIN_WORKGROUPS"]), tiles))
    spec, push = _spec_push(d)
    walk, walk_runs = _walk_rows(d, sel, mb, blocks) if not rows_in else (0, 0)
    # a channels-last output of 8- or 16-channel blocks: a pixel's block a store where strides allow
    vec = cl and not walk and mb in (8, 16) and _channels_last_words(d, mb) and sel["DOT_VEC_STORES"]
    spec.update(SX=sw, TILES=per_wg, SHIFT=-geo["start"][1] % 4, OPT=opt, INT32_OUT=0, CG=cg, MB=mb,
                CL_OUT=int(cl), BLOCKS=blocks, WSUM=1, CL_IN=int(not rows_in), WALK=walk, CL_VEC=int(vec))
    runs = walk_runs if walk else -(-tiles // per_wg)
    return TABLE[name].kernel(spec=spec, push=push, count=channel_blocks * runs * 128,
                              slots=(INPUT, FILTER, PARAMS, OUTPUT), local_size=128)


def _walk_rows(d, sel: Selection, mb: int, blocks: int) -> tuple:
    """(WALK, its workgroups of 128 a channel block) of conv.dot.nhwc: DOT_WALK output rows a
    subgroup walks down (DOT_FEW_WALK where that would leave fewer than DOT_WALK_MIN_SUBGROUPS
    subgroups), one output column a lane,
    where the device shuffles within subgroups of one size (the shader and the dispatch count the
    subgroups alike), a power of two from 4 (8-bit rows: four lanes' bytes a word) and KW - 1 (the
    window's next KW - 1 positions come from the next lanes) to 128, the layer's strides and
    dilations are 1 and one channel block holds the group's every channel; else (0, 0)."""
    caps = sel.capabilities
    geo = d.conv_params()
    m, _, _, kw = geo["filter"]
    size = caps.min_subgroup_size or caps.subgroup_size
    fixed = (caps.max_subgroup_size or caps.subgroup_size) == size
    if (not caps.has(SUBGROUP_SHUFFLE) or not fixed or size & (size - 1) or not max(kw - 1, 4) <= size <= 128
            or blocks != 1
            or mb != m // d.group_count or tuple(geo["strides"]) != (1, 1) or tuple(geo["dilations"]) != (1, 1)
            or sel["DOT_WALK"] <= 0):
        return 0, 0
    n, _, oh, ow = as_4d(d.output_grid(), 1)
    walkers = lambda rows: n * -(-oh // rows) * -(-ow // size)
    walk = sel["DOT_WALK"]
    if walkers(walk) < sel["DOT_WALK_MIN_SUBGROUPS"] and 0 < sel["DOT_FEW_WALK"] < walk:
        walk = sel["DOT_FEW_WALK"]
    return walk, -(-walkers(walk) // (128 // size))


def _dot_channels_last_input(d) -> bool:
    """Whether conv.dot.nhwc reads the input: channel stride 1, the other strides multiples of 16
    bytes, a group's channels in sixteens (16-byte loads), byte offsets within uint32."""
    cg = d.conv_params()["filter"][1]
    sn, sc, sh, sw = as_4d(d.input_tensor.effective_strides, 0)
    return sc == 1 and cg % 16 == 0 and all(s % 16 == 0 for s in (sn, sh, sw)) and d.input_tensor.total_bytes <= 1 << 32


def float_output(d, kernels: list, block: int, crd: bool, scale, zero_point: int) -> Optional[tuple]:
    """(kernels, output TensorDesc) of the convolution followed by a DepthToSpace of this block (1:
    none; crd: the column-row-depth order, else depth-column-row) and a per-tensor dequantization
    float32(q - zero_point) * scale: its plan's conv.dot kernel as conv.dot.float, or its
    conv.coopmat.few kernel as conv.coopmat.few.float, whose output is the packed float32 image. None
    where the plan is neither one conv.dot kernel writing rows of the 8-bit output nor conv.coopmat.few's,
    or the channels are not a multiple of block^2."""
    n, m, oh, ow = as_4d(d.output_grid(), 1)
    if not kernels or block < 1 or m % (block * block):
        return None
    main = kernels[-1]
    if len(kernels) == 1 and main.variant in ("conv.dot", "conv.dot.nhwc"):
        constants = TABLE["conv.dot"].constants(main)
        if constants["CL_OUT"] or constants["INT32_OUT"]:
            return None
        name = "conv.dot.float"
    elif [k.variant for k in kernels] == ["conv.coopmat.pack_filter", "conv.coopmat.few"]:
        name = "conv.coopmat.few.float"
    else:
        return None
    bits = int(np.float32(scale).view(np.uint32))
    kernel = dataclasses.replace(main, spec=main.spec + (block, int(crd), bits, int(zero_point) & 0xFFFFFFFF),
                                 variant=name)
    return kernels[:-1] + [kernel], TensorDesc(DataType.FLOAT32, (n, m // (block * block), oh * block, ow * block))


def _few_plan(d, sel: Selection) -> Optional[tuple]:
    """conv.coopmat.few where it runs the description (one group, stride and dilation 1, a channels-last
    input as conv.coopmat.halo reads it, output rows of whole words or a channels-last output with Mg in
    fours) and wins (FEW_BY_DEFAULT, FEW_MAX_CHANNELS): the filter packed as usual (32-channel tiles),
    then one kernel, FEW_SUBGROUPS subgroups a workgroup (fewer where their windows would not fit), each
    computing FEW_RUNS runs of 32 output pixels one after the other. None elsewhere."""
    caps = sel.capabilities
    geo = d.conv_params()
    m, cg, kh, kw = geo["filter"]
    if (not _coopmat_device(caps) or d.group_count != 1 or tuple(geo["strides"]) != (1, 1)
            or tuple(geo["dilations"]) != (1, 1) or not _channels_last_input(d)
            or not sel.where_wins("conv.coopmat.few", d, m, sel["FEW_MAX_CHANNELS"], caps.cpu_kernels,
                                  sel["FEW_BY_DEFAULT"])):
        return None
    cl = _channels_last_words(d) and m % 4 == 0
    if not (cl or _word_rows(d)[1]) or m > 16:
        return None
    wm, _, mp, wp_bytes = _packed_filter(d, caps, small=m)
    spec, push = _spec_push(d)
    spec.update(WM_SPEC=wm, PACKED_OUT=0, SPLIT=1)
    n, _, oh, ow = as_4d(d.output_grid(), 1)
    runs = n * oh * -(-ow // 32)
    # FEW_SUBGROUPS subgroups a workgroup, halved until its shared memory fits the device's
    constants = dict(KH=kh, KW=kw, CQ=cg // 16)
    subgroups = sel["FEW_SUBGROUPS"]
    while subgroups > 1 and not caps.fits_shared(few_shared_bytes(constants, subgroups)):
        subgroups //= 2
    local, per_wg = 32 * subgroups, subgroups * sel["FEW_RUNS"]
    return ([_filter_packing(d, spec, push, mp),
             TABLE["conv.coopmat.few"].kernel(spec=dict(spec, CQ=cg // 16, INT32_OUT=0, WSUM=1, OUT_CL=int(cl),
                                     RUNS=sel["FEW_RUNS"]),
                    push=push, count=-(-runs // per_wg) * local, slots=(INPUT, WP, PARAMS, OUTPUT),
                    local_size=local, defines=_emulation(caps))],
            (4, wp_bytes))                 # no packed input: XP's scratch is a placeholder


def _narrow_plan(d, sel: Selection) -> Optional[tuple]:
    """conv.coopmat.narrow where it runs the description (KH x KW x Cg at most 32 taps, fewer than
    COOPMAT_MIN_INPUT_CHANNELS input channels a group) and wins (NARROW_MIN_CHANNELS): the filter
    packed as usual, then one kernel that gathers the input's taps itself. None elsewhere."""
    caps = sel.capabilities
    geo = d.conv_params()
    m, cg, kh, kw = geo["filter"]
    mg = m // d.group_count
    if (not _coopmat_device(caps) or d.wide_taps() or cg * kh * kw > 32 or cg >= sel["COOPMAT_MIN_INPUT_CHANNELS"]
            or not sel.where_wins("conv.coopmat.narrow", d, mg, sel["NARROW_MIN_CHANNELS"], caps.cpu_kernels,
                                  sel["NARROW_BY_DEFAULT"])):
        return None
    n, _, oh, ow = as_4d(d.output_grid(), 1)
    return _gathering_plan(d, sel, "conv.coopmat.narrow", "NARROW", -(-(n * oh * ow) // 128), _packed_output(d))


def _row_tiles_plan(d, sel: Selection) -> Optional[tuple]:
    """conv.coopmat.rows where it runs the description (stride and dilation 1, groups of
    COOPMAT_MIN_INPUT_CHANNELS input and COOPMAT_MIN_CHANNELS output channels or more, the input tile
    and the epilogue's 8 KiB within ROW_TILES_MAX_SHARED bytes of shared memory) and wins
    (ROW_TILES_MIN_WIDTH): the filter packed as usual, then one kernel. None elsewhere."""
    caps = sel.capabilities
    geo = d.conv_params()
    m, cg, kh, kw = geo["filter"]
    mg = m // d.group_count
    n, _, oh, ow = as_4d(d.output_grid(), 1)
    if (not _coopmat_device(caps) or d.wide_taps() or tuple(geo["strides"]) != (1, 1)
            or tuple(geo["dilations"]) != (1, 1) or cg < sel["COOPMAT_MIN_INPUT_CHANNELS"]
            or mg < sel["COOPMAT_MIN_CHANNELS"] or kh * (128 + kw - 1) * 32 + 8192 > sel["ROW_TILES_MAX_SHARED"]
            or not sel.where_wins("conv.coopmat.rows", d, ow, sel["ROW_TILES_MIN_WIDTH"], caps.cpu_kernels,
                                  sel["ROW_TILES_BY_DEFAULT"])):
        return None
    # whole-word stores need a row's pixels to come in fours
    return _gathering_plan(d, sel, "conv.coopmat.rows", "ROW_TILES", n * oh * -(-ow // 128),
                           min(_packed_output(d), 1) if ow % 4 == 0 else 0)


def _halo_plan(d, sel: Selection, several: bool = True) -> Optional[tuple]:
    """conv.coopmat.halo where it runs the description (stride and dilation 1, a channels-last input as
    conv.coopmat.nhwc reads it, its window and filter rows within the device's shared memory) and wins
    (HALO_MIN_CHANNELS to HALO_MAX_CHANNELS output channels a group): the filter packed as usual
    (32-channel tiles), then one kernel. Where it has more tiles than HALO_WORKGROUPS and one filter
    tile, each workgroup computes TILES of them one after the other (several; its filter rows loaded
    once, the next tile's window while the taps multiply), HALO_WORKGROUPS workgroups or fewer in all.
    None elsewhere."""
    caps = sel.capabilities
    geo = d.conv_params()
    m, cg, kh, kw = geo["filter"]
    mg = m // d.group_count
    if (not _coopmat_device(caps) or tuple(geo["strides"]) != (1, 1) or tuple(geo["dilations"]) != (1, 1)
            or not _channels_last_input(d)
            or not sel.where_wins("conv.coopmat.halo", d, mg, sel["HALO_MIN_CHANNELS"], sel["HALO_MAX_CHANNELS"])):
        return None
    # HALO_KSPLIT slices of the input channels where each holds an even number of 16-channel vectors
    # (the pair's kernel takes none)
    ksplit = sel["HALO_KSPLIT"] if several and sel["HALO_KSPLIT"] > 1 and (cg // 16) % (2 * sel["HALO_KSPLIT"]) == 0 else 1
    (pack, main), scratch = _tiles_8x32_plan(d, sel, "conv.coopmat.halo", "HALO", mg, small=mg, cq=cg // 16,
                                             extra=dict(TILES=1, LANES=int(bool(sel["HALO_LANES"])), KSPLIT=ksplit,
                                                        AREG=0))
    # HALO_AREG: the filter's fragments in registers where a channels-last output (its epilogue takes
    # each subgroup's two rows) and at most HALO_AREG_FRAGMENTS of them a subgroup (KH x KW x Cg / 32):
    # loaded from the filter rows staged in shared memory (AREG 1) where HALO_AREG_STAGE and they fit
    # beside the window, else straight from Wp (AREG 2: the window's shared memory alone)
    if (several and sel["HALO_AREG"] and ksplit == 1 and TABLE["conv.coopmat.halo"].constants(main)["PACKED_OUT"] in (3, 4)
            and kh * kw * (cg // 32) <= sel["HALO_AREG_FRAGMENTS"]):
        staged = TABLE["conv.coopmat.halo"].with_constants(main, AREG=1)
        main = (staged if sel["HALO_AREG_STAGE"] and sel.unmet(staged) is None
                else TABLE["conv.coopmat.halo"].with_constants(main, AREG=2))
    tiles = main.count // main.local_size              # workgroups of one tile each
    per = -(-tiles // max(1, sel["HALO_WORKGROUPS"]))
    if several and per > 1 and d.group_count == 1 and mg <= 32:          # one group, one 32-channel filter tile
        many = dataclasses.replace(TABLE["conv.coopmat.halo"].with_constants(main, TILES=per),
                                   count=-(-tiles // per) * main.local_size)
        if sel.unmet(many) is None:
            main = many
    return [pack, main], scratch


def pair_plan(first, second, sel: Selection) -> Optional[tuple]:
    """(kernels, scratch Buffer sizes) of conv.coopmat.halo.pair: the second convolution's halo plan
    (_halo_plan under the selection: its input channels-last), its kernel computing its input from
    the first convolution's input, where the first has one input channel (group 1), at most 32 taps,
    stride and dilation 1, an 8-bit output whose grid and type are the second's input's, and the
    second one group reading its 16 x k channels; where it wins (PAIR_MAX_POSITIONS). None elsewhere,
    or where the selection leaves the variant out (tuning {"conv.coopmat.halo.pair": False}; being an
    extension, it is never forced). The first's output strides do not matter: it is never stored."""
    if "conv.coopmat.halo.pair" in sel.off or first.int32_output or second.int32_output:
        return None
    n, _, oh, ow = as_4d(first.output_grid(), 1)
    if not TABLE["conv.coopmat.halo.pair"].wins.test(first, n * oh * ow, sel["PAIR_MAX_POSITIONS"]):
        return None
    g1 = first.conv_params()
    m1, cg1, kh1, kw1 = g1["filter"]
    t1 = first.tensors()
    if (first.group_count != 1 or cg1 != 1 or kh1 * kw1 > 32 or tuple(g1["strides"]) != (1, 1)
            or tuple(g1["dilations"]) != (1, 1) or first.wide_taps() or first.off_formula()
            or len(first.input_tensor.sizes) != 4 or first.input_tensor.total_bytes >= 1 << 31
            or tuple(first.output_grid()) != tuple(second.input_tensor.sizes)
            or t1[OUTPUT].data_type != second.input_tensor.data_type
            or second.group_count != 1 or m1 % 16):
        return None
    halo = _halo_plan(second, sel, several=False)
    if halo is None:
        return None
    (pack, main), scratch = halo
    constants = dict(TABLE["conv.coopmat.halo"].constants(main), KH1=kh1, KW1=kw1,
                     LANES=int(bool(sel["PAIR_LANES"])),
                     X1_SIGNED=int(t1[INPUT].data_type == DataType.INT8))
    pair = dataclasses.replace(main, spec=tuple(constants[n] for n in TABLE["conv.coopmat.halo.pair"].spec),
                               defines=main.defines + (("PAIR", 1),), variant="conv.coopmat.halo.pair")
    return ([pack, pair], scratch) if sel.usable(pair) else None


def _window_plan(d, sel: Selection) -> Optional[tuple]:
    """conv.coopmat.window where it runs the description (KH x KW x Cg at most 32 taps, stride and
    dilation 1, at most 64 output channels a group) and wins (WINDOW_BY_DEFAULT, WINDOW_MIN_CHANNELS):
    the filter packed as usual (32-channel tiles up to 32 channels a group, else 64), then one kernel.
    None elsewhere."""
    caps = sel.capabilities
    geo = d.conv_params()
    m, cg, kh, kw = geo["filter"]
    mg = m // d.group_count
    if (not _coopmat_device(caps) or d.wide_taps() or cg * kh * kw > 32 or mg > 64
            or tuple(geo["strides"]) != (1, 1) or tuple(geo["dilations"]) != (1, 1)
            or not sel.where_wins("conv.coopmat.window", d, mg, sel["WINDOW_MIN_CHANNELS"], caps.cpu_kernels,
                                  sel["WINDOW_BY_DEFAULT"])):
        return None
    return _tiles_8x32_plan(d, sel, "conv.coopmat.window", "WINDOW_TAPS", mg, small=32, cq=0)   # CQ: HALO's only


def _channels_last_words(d, size: int = 4) -> bool:
    """Whether the output is channels-last with strides of whole `size`-byte pieces (channel stride
    1, the others multiples of size)."""
    sn, sm, sh, sw = as_4d(d.output_tensor.effective_strides, 0)
    return sm == 1 and sn % size == 0 and sh % size == 0 and sw % size == 0


def _tiles_8x32_plan(d, sel: Selection, name: str, define: str, mg: int, small: int, cq: int,
                     extra=None) -> tuple:
    """The plan of a kernel over 8 x 32 output tiles (conv.coopmat.halo, conv.coopmat.window;
    _gathering_plan's, one workgroup a tile; mg output channels a group): where the output is
    channels-last, its PACKED_OUT 4 with 16-byte strides and mg in sixteens (a pixel's 16 channels
    a store), else its PACKED_OUT 3 with whole-word strides and mg in fours (four channels of a
    pixel a word); else _packed_output's, whose 16-byte stores need a row's pixels to come in
    sixteens, whole words in fours."""
    n, _, oh, ow = as_4d(d.output_grid(), 1)
    packed = _packed_output(d)
    packed_out = (4 if _channels_last_words(d, 16) and mg % 16 == 0
                  else 3 if _channels_last_words(d) and mg % 4 == 0
                  else packed if ow % 16 == 0 else min(packed, 1) if ow % 4 == 0 else 0)
    return _gathering_plan(d, sel, name, define, n * -(-oh // 8) * -(-ow // 32), packed_out, small=small,
                           extra=dict(CQ=cq, INT32_OUT=0, WSUM=1, **(extra or {})))


def _gathering_plan(d, sel: Selection, name: str, define: str, pixel_tiles: int, packed_out: int,
                    small: int = 0, extra=None) -> tuple:
    """The plan of a cooperative-matrix variant that reads the input itself (no packed input): the
    filter packed as usual (qconv_pack_filter.comp; 32-channel tiles up to `small` channels a group),
    then the kernel built with `define` (its constants past SPLIT: extra), one workgroup per pixel
    tile and BM output channels."""
    wm, bm, mp, wp_bytes = _packed_filter(d, sel.capabilities, small)
    spec, push = _spec_push(d)
    spec.update(WM_SPEC=wm, PACKED_OUT=packed_out, SPLIT=1)
    emulated = _emulation(sel.capabilities)
    kernels = [
        _filter_packing(d, spec, push, mp),
        TABLE[name].kernel(spec=dict(spec, **(extra or {})), push=push,
               count=d.group_count * (mp // bm) * pixel_tiles * 256,
               slots=(INPUT, WP, PARAMS, OUTPUT), local_size=256,
               defines=(("WM_FIXED", wm),) + emulated + ((define, 1),))]
    return kernels, (4, wp_bytes)                 # no packed input: XP's scratch is a placeholder


def _filter_packing(d, spec: dict, push: dict, mp: int) -> Kernel:
    """The packing of the filter into Wp (qconv_pack_filter.comp) for the cooperative-matrix kernels:
    MP channel rows a group, one workgroup of 256 a row."""
    return TABLE["conv.coopmat.pack_filter"].kernel(spec=spec, push=push, count=d.group_count * mp * 256,
                                                    slots=(INPUT, FILTER, PARAMS, WP), local_size=256)


def _emulation(caps) -> tuple:
    """The cooperative-matrix kernel's defines for emulated matrices (none for real ones): its
    multiply-adds' loops unrolled where the device ends an invocation's loops after a number of
    iterations (Capabilities.loop_iteration_limit: lavapipe before Mesa 25), else rolled
    (COOPMAT_EMU_ROLLED): on SwiftShader the unrolled kernel took about 20 s to compile, the rolled
    one 0.7-1.9 s, and ran 3x faster."""
    if not caps.emulated_cooperative_matrix:
        return ()
    return _EMULATIONS[0] if caps.loop_iteration_limit else _EMULATIONS[1]


def _packed_filter(d, caps, small: int = 0) -> tuple:
    """(WM, BM, MP, bytes) of the packed filter Wp (dmlvk/shaders/qconv_packed.glsl): fragments of 16
    channels a subgroup row, tile rows, the group's channels rounded up to BM, and its size with the
    correction header (rows of KH x KW x CP bytes rounded up to 64). WM is 4 from 65 channels a
    group, but 2 where the matrices are emulated: an emulated fragment is 8 ints of each
    invocation, and with 4 of them (and the multiply-add unrolled) SwiftShader's compiler stopped
    the process ("Local variable exceeds stack size limit"). WM is 1 (32-channel tiles, every
    subgroup multiplying) up to `small` channels a group (COOPMAT_SMALL_TILE_CHANNELS for the packed
    kernel; 0 for the kernels that gather their input, which are built for WM 2 and 4 only)."""
    m, cg, kh, kw = d.conv_params()["filter"]
    mg = m // d.group_count
    wm = 2 if mg <= 64 or (caps is not None and caps.emulated_cooperative_matrix) else 4
    wm = 1 if mg <= small else wm
    bm = 32 * wm
    mp = -(-mg // bm) * bm
    kp = -(-kh * kw * (-(-cg // 32) * 32) // 64) * 64
    return wm, bm, mp, ((2 * m + 3) & ~3) * 4 + d.group_count * mp * kp


def _packed_geometry(d, sel: Selection) -> Optional[dict]:
    """The packed operands' sizes (dmlvk/shaders/qconv_packed.glsl) if the cooperative-matrix
    path runs this description on such a device, else None."""
    if not _coopmat_device(sel.capabilities):
        return None
    geo = d.conv_params()
    n = geo["input"][0]
    m, cg, kh, kw = geo["filter"]
    mg, groups = m // d.group_count, d.group_count
    if mg < sel["COOPMAT_MIN_CHANNELS"] or cg < sel["COOPMAT_MIN_INPUT_CHANNELS"] or d.wide_taps():
        return None
    _, _, oh, ow = as_4d(d.output_grid(), 1)
    (sh, sw), (dh, dw) = geo["strides"], geo["dilations"]
    cp = -(-cg // 32) * 32
    hp, wp = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
    kp = -(-kh * kw * cp // 64) * 64
    wm, bm, mp, wp_bytes = _packed_filter(d, sel.capabilities, sel["COOPMAT_SMALL_TILE_CHANNELS"])
    xp_bytes = n * hp * wp * groups * cp
    if max(xp_bytes, wp_bytes) > sel["COOPMAT_MAX_PACKED_BYTES"]:
        return None
    pixels = n * oh * ow
    tiles = groups * (mp // bm) * -(-pixels // 128)
    steps = kp // 64
    split, part_bytes = 1, 0
    if sel.where_wins("conv.coopmat.splitk", d, tiles, sel["SPLITK_BELOW"]) and steps >= 4:
        split = min(steps // 2, -(-sel["SPLITK_TARGET"] // tiles))
        pp = -(-pixels // 128) * 128
        part_bytes = split * groups * (mp + 16) * pp * 4
        if part_bytes > sel["SPLITK_MAX_PARTIAL_BYTES"]:
            split, part_bytes = 1, 0
    quad_items = n * hp * -(-wp // 4) * groups * cp // 16
    return dict(wm=wm, bm=bm, mp=mp, xp_bytes=xp_bytes, wp_bytes=wp_bytes, quad_items=quad_items,
                pixels=pixels, tiles=tiles, split=split, part_bytes=part_bytes)


def _depthwise_kernel(d, sel: Selection) -> Optional[Kernel]:
    """A depthwise shader where one applies, else None: qlinear_conv_depthwise_rows.comp where
    the input and output rows are word aligned (also for narrow groups: fewer than
    COOPMAT_MIN_INPUT_CHANNELS input channels a group, at most DEPTHWISE_ROW_MAX_TAPS products
    an output; walking down the output rows where DEPTHWISE_WALK_* allow it; with packed dot
    products where DEPTHWISE_DOT* allow it; on devices with these capabilities, None: any),
    else, for depthwise layers, qlinear_conv_depthwise.comp where its tile fits."""
    geo = d.conv_params()
    m, cg, kh, kw = geo["filter"]
    depthwise = cg == 1 and m == d.group_count
    if not (depthwise or cg < sel["COOPMAT_MIN_INPUT_CHANNELS"]) or d.wide_taps():
        return None
    n, _, oh, ow = as_4d(d.output_grid(), 1)
    (sh, sw), (dh, dw) = geo["strides"], geo["dilations"]
    spec, push = _spec_push(d)
    slots = (INPUT, FILTER, PARAMS, OUTPUT)
    word_rows, whole_words = _word_rows(d)
    shift = -geo["start"][1] % 4       # the window's first column less its word-aligned start
    caps = sel.capabilities
    cpu = caps is not None and caps.cpu_kernels
    dot = (caps is not None and caps.integer_dot_product and kw <= 4 and dw == 1
           and sel.where_wins("conv.depthwise.dot", d, cpu, sel["DEPTHWISE_DOT_ON_CPU"]))
    # Input columns of a window row: with dot products, each output's 4 bytes from its first tap.
    columns = lambda o: (o - 1) * sw + (4 if dot else (kw - 1) * dw + 1)
    words = lambda o: (shift + columns(o) + 3) // 4    # of a window row
    walk, rows = sel["DEPTHWISE_WALK_OUTPUTS"], 1
    on_cpu = cpu and not sel["DEPTHWISE_WALK_ON_CPU"]
    if ((sh, dh) == (1, 1) and not on_cpu and kh * walk <= 64
            and max(kh, 2 * cg) * words(walk) <= sel["DEPTHWISE_ROW_WORDS"]):
        # walking: KH rows of sums, this input row's words and the next one's in registers
        opt = walk
        per_row = n * m * -(-ow // opt)      # invocations with one output row each
        rows = -(-oh // min(oh, -(-sel["DEPTHWISE_WALK_INVOCATIONS"] // per_row)))
    else:
        # outputs an invocation: the most whose window rows fit its registers
        opt = next((o for o in (32, 16, 8, 4) if kh * words(o) <= sel["DEPTHWISE_ROW_WORDS"]), None)
    if (word_rows and whole_words and opt is not None and cg * kh * kw <= sel["DEPTHWISE_ROW_MAX_TAPS"]
            and sel.may("conv.depthwise.rows", "conv.depthwise.dot")):
        return TABLE["conv.depthwise.dot" if dot else "conv.depthwise.rows"].kernel(
                      spec=dict(spec, SX=sw, DX=dw, SHIFT=shift, OPT=opt, INT32_OUT=0, CG=cg, ROWS=rows),
                      push=push, count=n * m * -(-oh // rows) * -(-ow // opt), slots=slots, local_size=128,
                      defines=(("DOT", 1),) if dot else ())
    if not depthwise:
        return None
    th, tw = sel["DEPTHWISE_TILE"]
    # Word-aligned input rows are read a word at a time, from up to 3 columns early.
    row = (tw - 1) * sw + (kw - 1) * dw + 1
    row = (row + 6) & ~3 if word_rows else row
    tile = ((th - 1) * sh + (kh - 1) * dh + 1) * row + kh * kw
    if tile > sel["DEPTHWISE_TILE_MAX"]:
        return None
    tiles = n * m * -(-oh // th) * -(-ow // tw)
    return TABLE["conv.depthwise.tile"].kernel(spec=dict(spec, PACKED_OUT=int(whole_words), TILE=tile,
                                                   WORD_ROWS=int(word_rows)),
                  push=push, count=tiles * 256, slots=slots, local_size=256)


def _packed_output(d) -> int:
    """PACKED_OUT (dmlvk/shaders/qconv_packed.glsl): 1 where the output is packed NCHW with OH * OW a
    multiple of 4 (whole-word stores), 2 where OH * OW is a multiple of 16 too (16-byte stores by
    the cooperative-matrix kernels; 1 elsewhere), else 0."""
    n, m, oh, ow = as_4d(d.output_grid(), 1)
    sn, sm, sh, sw = as_4d(d.output_tensor.effective_strides, 0)
    packed = ((oh * ow) % 4 == 0 and sw == 1 and (oh == 1 or sh == ow) and sm == oh * ow
              and (n == 1 or sn == m * oh * ow))
    return 0 if not packed else 2 if (oh * ow) % 16 == 0 else 1
