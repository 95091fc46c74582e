"""QUANTIZED_LINEAR_CONVOLUTION's plan: the routines that walk its variant table (variants.py) for
one description and build the kernels one execution runs and the scratch memory they pass data
through: the cooperative-matrix path (int8 tensor units: the input and filter repacked, then
16 x 16 x 32 matrix products, with split K for small batches; the halo kernel over 8 x 32 output
tiles), the packed dot-product kernels, the depthwise kernels, the CPU-device kernel (lavapipe), or
the portable direct and implicit-GEMM kernels, which run every description DirectML accepts."""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from ...enums import DataType
from ...runtime.capabilities import SUBGROUP_SHUFFLE
from ...runtime.kernel import Kernel
from ...tensor import TensorDesc
from ..variants import Selection
from .layout import CPU_FILTER, FILTER, INPUT, OUTPUT, PARAMS, PART, WP, XP, as_4d
from .shared_memory import dot_channel_words
from .variants import EMULATIONS, TABLE

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
    if sel.where_wins(names[1], d):
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
    """(kernels, scratch Buffer sizes in bytes) a device with these capabilities runs, the first that
    runs the description and wins of: the packed dot-product kernel (conv.dot, DOT_*), the depthwise
    kernels (DEPTHWISE_*; narrow groups, fewer than COOPMAT_MIN_INPUT_CHANNELS input channels a group,
    take the rows kernel) except where the CPU kernel applies, the halo kernel (HALO_*), the
    cooperative-matrix path (COOPMAT_*, SPLITK_*); else the CPU kernel on CPU devices, else the
    portable kernel."""
    if d.off_formula():
        return [_portable(d, sel)], ()
    dot = _dot_kernel(d, sel) if sel.may("conv.dot", "conv.dot.nhwc") else None
    if dot is not None and sel.usable(dot):
        return [dot], ()
    depthwise = _depthwise_kernel(d, sel) if sel.may(*_DEPTHWISE) else None
    cpu = _cpu_plan(d, sel) if sel.may("conv.cpu") else None
    if depthwise is not None and cpu is None and sel.usable(depthwise):
        return [depthwise], ()
    halo = _halo_plan(d, sel) if sel.may("conv.coopmat.halo") else None
    if halo is not None and all(sel.usable(k) for k in halo[0]):
        return halo
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
READS_CHANNELS_LAST = ("conv.coopmat.nhwc", "conv.coopmat.halo", "conv.dot.nhwc")


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
            or not sel.where_wins(name, d)):
        return None
    per_channel = dot_channel_words(dict(KH=kh, KW=kw, CG=cg, CL_IN=not rows_in))
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
    float32(q - zero_point) * scale: its plan's conv.dot kernel as conv.dot.float, whose output is the
    packed float32 image. None where the plan is not one conv.dot kernel writing rows of the 8-bit
    output, or the channels are not a multiple of block^2."""
    n, m, oh, ow = as_4d(d.output_grid(), 1)
    if not kernels or block < 1 or m % (block * block):
        return None
    main = kernels[-1]
    if len(kernels) == 1 and main.variant in ("conv.dot", "conv.dot.nhwc"):
        constants = TABLE["conv.dot"].constants(main)
        if constants["CL_OUT"] or constants["INT32_OUT"]:
            return None
        name = "conv.dot.float"
    else:
        return None
    bits = int(np.float32(scale).view(np.uint32))
    kernel = dataclasses.replace(main, spec=main.spec + (block, int(crd), bits, int(zero_point) & 0xFFFFFFFF),
                                 variant=name)
    return kernels[:-1] + [kernel], TensorDesc(DataType.FLOAT32, (n, m // (block * block), oh * block, ow * block))


def _halo_plan(d, sel: Selection) -> Optional[tuple]:
    """conv.coopmat.halo where it runs the description (stride and dilation 1, a channels-last input as
    conv.coopmat.nhwc reads it, its window and filter rows within the device's shared memory) and wins
    (HALO_MIN_CHANNELS to HALO_MAX_CHANNELS output channels a group): the filter packed as usual
    (32-channel tiles up to mg channels a group), then one kernel over 8 x 32 output tiles, one
    workgroup a tile. Where it has more tiles than HALO_WORKGROUPS and one filter tile, each workgroup
    computes TILES of them one after the other (its filter rows loaded once, the next tile's window
    while the taps multiply), HALO_WORKGROUPS workgroups or fewer in all. None elsewhere."""
    caps = sel.capabilities
    geo = d.conv_params()
    m, cg, kh, kw = geo["filter"]
    mg = m // d.group_count
    if (not _coopmat_device(caps) or tuple(geo["strides"]) != (1, 1) or tuple(geo["dilations"]) != (1, 1)
            or not _channels_last_input(d)
            or not sel.where_wins("conv.coopmat.halo", d)):
        return None
    # HALO_KSPLIT slices of the input channels where each holds an even number of 16-channel vectors
    ksplit = sel["HALO_KSPLIT"] if sel["HALO_KSPLIT"] > 1 and (cg // 16) % (2 * sel["HALO_KSPLIT"]) == 0 else 1
    # the output: where channels-last, PACKED_OUT 4 with 16-byte strides and mg in sixteens (a pixel's
    # 16 channels a store), else 3 with whole-word strides and mg in fours (four channels of a pixel a
    # word); else _packed_output's, whose 16-byte stores need a row's pixels to come in sixteens, whole
    # words in fours
    n, _, oh, ow = as_4d(d.output_grid(), 1)
    packed = _packed_output(d)
    packed_out = (4 if _channels_last_words(d, 16) and mg % 16 == 0
                  else 3 if _channels_last_words(d) and mg % 4 == 0
                  else packed if ow % 16 == 0 else min(packed, 1) if ow % 4 == 0 else 0)
    wm, bm, mp, wp_bytes = _packed_filter(d, caps, small=mg)
    spec, push = _spec_push(d)
    spec.update(WM_SPEC=wm, PACKED_OUT=packed_out, SPLIT=1)
    tiles = d.group_count * (mp // bm) * n * -(-oh // 8) * -(-ow // 32)
    pack = _filter_packing(d, spec, push, mp)
    spec.update(CQ=cg // 16, INT32_OUT=0, WSUM=1, TILES=1, LANES=int(bool(sel["HALO_LANES"])), KSPLIT=ksplit, AREG=0)
    main = TABLE["conv.coopmat.halo"].kernel(spec=spec, push=push, count=tiles * 256,
                                             slots=(INPUT, WP, PARAMS, OUTPUT), local_size=256,
                                             defines=(("WM_FIXED", wm),) + _emulation(caps))
    # HALO_AREG: the filter's fragments in registers where a channels-last output (its epilogue takes
    # each subgroup's two rows) and at most HALO_AREG_FRAGMENTS of them a subgroup (KH x KW x Cg / 32):
    # loaded from the filter rows staged in shared memory (AREG 1) where HALO_AREG_STAGE and they fit
    # beside the window, else straight from Wp (AREG 2: the window's shared memory alone)
    if sel["HALO_AREG"] and ksplit == 1 and packed_out in (3, 4) and kh * kw * (cg // 32) <= sel["HALO_AREG_FRAGMENTS"]:
        staged = TABLE["conv.coopmat.halo"].with_constants(main, AREG=1)
        main = (staged if sel["HALO_AREG_STAGE"] and sel.unmet(staged) is None
                else TABLE["conv.coopmat.halo"].with_constants(main, AREG=2))
    per = -(-tiles // max(1, sel["HALO_WORKGROUPS"]))
    if per > 1 and d.group_count == 1 and mg <= 32:          # one group, one 32-channel filter tile
        many = dataclasses.replace(TABLE["conv.coopmat.halo"].with_constants(main, TILES=per),
                                   count=-(-tiles // per) * main.local_size)
        if sel.unmet(many) is None:
            main = many
    return [pack, main], (4, wp_bytes)          # no packed input: XP's scratch is a placeholder


def _channels_last_words(d, size: int = 4) -> bool:
    """Whether the output is channels-last with strides of whole `size`-byte pieces (channel stride
    1, the others multiples of size)."""
    sn, sm, sh, sw = as_4d(d.output_tensor.effective_strides, 0)
    return sm == 1 and sn % size == 0 and sh % size == 0 and sw % size == 0


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
    return EMULATIONS[0] if caps.loop_iteration_limit else EMULATIONS[1]


def _packed_filter(d, caps, small: int = 0) -> tuple:
    """(WM, BM, MP, bytes) of the packed filter Wp (dmlvk/shaders/qconv_packed.glsl): fragments of 16
    channels a subgroup row, tile rows, the group's channels rounded up to BM, and its size with the
    correction header (rows of KH x KW x CP bytes rounded up to 64). WM is 4 from 65 channels a
    group, but 2 where the matrices are emulated: an emulated fragment is 8 ints of each
    invocation, and with 4 of them (and the multiply-add unrolled) SwiftShader's compiler stopped
    the process ("Local variable exceeds stack size limit"). WM is 1 (32-channel tiles, every
    subgroup multiplying) up to `small` channels a group (COOPMAT_SMALL_TILE_CHANNELS for the packed
    kernel; the halo kernel's own group width for it, which is built for WM 1 only)."""
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
    if sel.where_wins("conv.coopmat.splitk", d, tiles=tiles) and steps >= 4:
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
           and sel.where_wins("conv.depthwise.dot", d))
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
