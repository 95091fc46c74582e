"""Depth/space's variant table: every way DEPTH_TO_SPACE / SPACE_TO_DEPTH runs, each row with its
shader, named constants, push block, requirements, tuning numbers, the rule of where it wins and
the measurements behind the rule (all on an NVIDIA H200 unless a row says otherwise). The routines
that walk the table are in routines.py."""
from __future__ import annotations

from typing import Optional

from ...enums import DepthSpaceOrder
from ...runtime.capabilities import SUBGROUP_SHUFFLE
from ..variants import WHOLE_SUBGROUPS, Need, PushBlock, Rule, Table, Variant

H200 = "NVIDIA H200, driver 580.159.04"
_COMMON = ("ELEM_BYTES", "BLOCK", "D2S", "ORDER")
_ROWS = _COMMON + ("K", "CHUNKS", "STAGED", "SUBGROUP_STAGED", "FLAT", "BLOCK_ROW_MAJOR")
_NHWC = _COMMON + ("VEC_BYTES", "BLOCKS", "SEG", "TILE_WORDS", "UNIT_BYTES", "LOADS", "UNIT_LOADS", "DEPTH_TILE",
                   "ROTATE", "SWIZZLE", "IN_ORDER")
_ELEMENT = _COMMON + ("MODE",)
_TILES = dict(TILED_MAX_BYTES=16384)     # Vulkan's least maxComputeSharedMemorySize
# Each shader's push block (less items and first), as it declares it; the tests compare the two.
PUSH = {
    "depth_space": PushBlock([("in_strides", 4), ("out_sizes", 4), ("out_strides", 4), ("out_dims", 1),
                              ("space_c", 1)]),
    "depth_space_rows": PushBlock([("space_strides", 4), ("depth_strides", 4), ("chunks_per_row", 1),
                                   ("space_height", 1), ("space_channels", 1), ("total_chunks", 1)]),
    "depth_space_nhwc": PushBlock([("out_dims", 4), ("in_dims", 4), ("out_strides", 3), ("tile_pixels", 1),
                                   ("in_strides", 3), ("tile_pitch", 1)]),
    "depth_space_lanes": PushBlock([("depth", 3), ("segments", 1), ("depth_strides", 4), ("space_strides", 4)]),
}


# Where the channel-last variants win (their rows' rules; the evidence is each row's `measured`).

# The limits some variants are correct within (their rows' `needs`; forcing checks them too).
_SUBWORD = Need("1- or 2-byte elements (a word holds 4 / element bytes of them)",
                lambda c, k, caps: c.get("EB", c.get("ELEM_BYTES")) in (1, 2))
_PAIRS = Need("subgroups of 2 invocations or more (lanes t and t ^ subgroup/2 exchange halves)",
              lambda c, k, caps: caps.subgroup_size >= 2 and (caps.min_subgroup_size or caps.subgroup_size) >= 2)
_NARROW_STORAGE = Need("8-bit storage (storageBuffer8BitAccess) for 1-byte elements, 16-bit storage for 2-byte ones",
                       lambda c, k, caps: caps.storage_8bit if c["ELEM_BYTES"] == 1 else caps.storage_16bit)
_SUBGROUP_STAGING = Need("with SUBGROUP_STAGED, workgroups of whole subgroups (each subgroup stages its own chunks)",
                         lambda c, k, caps: not c["SUBGROUP_STAGED"] or WHOLE_SUBGROUPS.test(c, k, caps))


def _tiles_win(d, sel, packed_w: bool, vec: Optional[int]) -> bool:
    """nhwc.tiled's rule (its row: `wins`; the evidence: its `measured`)."""
    eb, b = d.input_tensor.element_bytes, d.block_size
    if vec is None or (d.depth_to_space and not packed_w):
        return True
    if d.effective_order == DepthSpaceOrder.DEPTH_COLUMN_ROW:
        return vec < 16
    return d.depth_to_space and eb >= 4 and (b > 2 or eb == 8)


def _staged_wins(d, sel=None) -> bool:
    """nhwc.staged's rule (its row: `wins`; the evidence: its `measured`)."""
    eb, b = d.input_tensor.element_bytes, d.block_size
    if eb == 1:
        return b % 2 == 0 or not d.depth_to_space
    return eb == 2 and (b == 2 or (b == 4 and d.depth_to_space))


def _dcr_input_order(d, sel=None) -> bool:
    """nhwc.input_order's rule (its row: `wins`; the evidence: its `measured`)."""
    eb = d.input_tensor.element_bytes
    if not d.depth_to_space:
        # space-to-depth: where each block row's run of B pixels is whole 32-byte sectors, 64
        # bytes or more, or with B = 2
        space, b = d.input_tensor, d.block_size
        run = b * space.sizes[1] * eb
        return (d.effective_order == DepthSpaceOrder.DEPTH_COLUMN_ROW
                and space.effective_strides[3] == space.sizes[1] and run % 32 == 0 and (run >= 64 or b == 2))
    return (d.depth_to_space and d.effective_order == DepthSpaceOrder.DEPTH_COLUMN_ROW
            and eb >= 2 and not (eb == 8 and d.block_size == 2))


def _lanes_wins(d, sel=None) -> bool:
    """nhwc.lanes's rule (its row: `wins`; the evidence: its `measured`)."""
    eb, b, crd = d.input_tensor.element_bytes, d.block_size, d.effective_order == DepthSpaceOrder.COLUMN_ROW_DEPTH
    run = b * d.sides()[1].sizes[1] * eb           # DEPTH_COLUMN_ROW: a block row's bytes
    if eb == 1:
        if not d.depth_to_space:
            return b == 3 or (b == 4 and crd)
        return (b == 3 and crd) or (b == 2 and not crd and run >= 16)
    return eb == 2 and b == 3 and crd and not d.depth_to_space


TABLE = Table("DEPTH_TO_SPACE / SPACE_TO_DEPTH", [
    Variant(
        "rows", "depth_space_rows", _ROWS,
        "unit-W-stride tensors whose depth-side rows split into aligned 4/8-byte pieces: each invocation "
        "moves chunks of 16 or 32 bytes of a space-side row",
        tuning=dict(ROWS_LOCAL=256, ROWS_CHUNKS=1, ROWS_BLOCK_ROW_MAJOR=True,
                    ROWS_BLOCK_ROW_MAJOR_FROM=64 << 20, ROWS_BLOCK_ROW_MAJOR_DCR_ABOVE=256 << 20),
        measured="workgroups of 256: 128 within a timer step on the 64 MiB B = 2 / 4 cases, 0.3 points lower on "
                 "average; 64 lost 15-20 points on the video-frame shapes. Space-to-depth with B = 3 or 4 takes "
                 "a channel's rows in block-row order (BLOCK_ROW_MAJOR) from ROWS_BLOCK_ROW_MAJOR_FROM bytes of "
                 "input in COLUMN_ROW_DEPTH order and above ROWS_BLOCK_ROW_MAJOR_DCR_ABOVE in DEPTH_COLUMN_ROW "
                 "order: B = 4 COLUMN_ROW_DEPTH +0.1 to +1.8 points of copy at 64 MiB-1 GiB, DEPTH_COLUMN_ROW "
                 "+0.9 to +2.1 at 1 GiB; B = 2 and depth-to-space lost (up to -2.6)",
        measured_on=H200),
    Variant(
        "rows.paired", "depth_space_rows", _ROWS,
        "B = 4: 32-byte chunks of 8-byte pieces moved whole by one invocation, their 16-byte halves "
        "exchanged within lane pairs by subgroup shuffles",
        requires=(SUBGROUP_SHUFFLE,), builds=((("PAIRED", 1),),), tuning=dict(ROWS_PAIRED_LOCAL=128),
        needs=(_PAIRS, WHOLE_SUBGROUPS),
        measured="every element size, operator and order: 93.8-96.5 % of the best copy at 64 MiB and 95.9-97.5 % "
                 "at 1 GiB, against 91.3-95.8 and 91.6-94.7 % with 4-byte pieces; 2 or 4 chunks an invocation "
                 "lost 1-4 points, workgroups of 256 about a point",
        measured_on=H200),
    Variant(
        "rows.staged", "depth_space_rows", _ROWS,
        "B = 3, 5, 6, 7: chunks of under 8 words staged in shared memory, each subgroup its own "
        "(depth-to-space always; space-to-depth of 4- and 8-byte elements from a large packed input)",
        tuning=dict(ROWS_STAGED_LOCAL=64, ROWS_SUBGROUP_STAGED=True, ROWS_FLAT=True, ROWS_STAGED_S2D=True,
                    ROWS_STAGED_S2D_ABOVE=64 << 20),
        needs=(_SUBGROUP_STAGING,),
        measured="subgroup staging 0-1.2 points faster than the workgroup's (B = 3, uint8 89.5 % of copy against "
                 "89.0 %); workgroups of 64: 93.8-96.5 % against 93.2-95.8 % with 128, 88.4-91.9 % with 256; "
                 "FLAT 16-byte runs 0-1.4 points faster (1 GiB 97.0-97.7 %); staged space-to-depth loads at 1 GiB "
                 "96.7-97.4 % against 95.8-96.6 % (float32, float64), equal at 64 MiB, 80-83 % against 94 % at "
                 "1 MiB",
        measured_on=H200),
    Variant(
        "nhwc.segments", "depth_space_nhwc", _NHWC,
        "channel-last depth-to-space into abutting pixels whose B-pixel row segments are 16-byte vectors: one "
        "input pixel an invocation, B whole vector stores",
        tuning=dict(ROW_SEGMENTS=(DepthSpaceOrder.DEPTH_COLUMN_ROW, DepthSpaceOrder.COLUMN_ROW_DEPTH)),
        wins=Rule("the orders in ROW_SEGMENTS (both)", lambda d, sel: d.effective_order in sel["ROW_SEGMENTS"]),
        measured="uint8 B = 4 with 4 channels: COLUMN_ROW_DEPTH 94 % of copy (53 % with 4-byte pixel vectors), "
                 "DEPTH_COLUMN_ROW 94 % (81 % moving the runs one by one); wider segments were slower than the "
                 "other paths (float16 B = 4: 60 % against 88 %)",
        measured_on=H200),
    Variant(
        "nhwc.lanes", "depth_space_lanes", ("EB", "BLOCK", "D2S", "ORDER", "CS", "TILE_UNITS"),
        "channel-last 1- and 2-byte elements: a depth-side pixel an invocation, rearranged in registers and "
        "stored through its subgroup's slice of shared memory",
        tuning=dict(LANES_MAX_PIXEL_BYTES=160, LANES_LOCAL=128, **_TILES),
        needs=(_SUBWORD, WHOLE_SUBGROUPS),
        wins=Rule("1-byte elements: space-to-depth with B = 3, or B = 4 in COLUMN_ROW_DEPTH order; depth-to-space "
                  "with B = 3 in COLUMN_ROW_DEPTH order, or B = 2 in DEPTH_COLUMN_ROW order with runs of 16 bytes "
                  "or more. 2-byte elements: COLUMN_ROW_DEPTH space-to-depth with B = 3",
                  _lanes_wins),
        measured="Where depth_space_lanes.comp measured faster on an H200 than the other channel-last paths (64 "
                 "MiB, packed NHWC, % of copy): uint8 space-to-depth with B = 3 (COLUMN_ROW_DEPTH 95.8 % against "
                 "move_staged's 69.9 %, DEPTH_COLUMN_ROW 95.8 % against 87.0 %) and with B = 4 in COLUMN_ROW_DEPTH "
                 "order (95.8 % against 83.0 %), uint8 COLUMN_ROW_DEPTH depth-to-space with B = 3 (91.9 % against "
                 "77.8 %) and DEPTH_COLUMN_ROW with B = 2 where the runs are 16 bytes or more (so not moved "
                 "through move_tiled's tiles; 94.5 % against 91.9 %), float16 COLUMN_ROW_DEPTH space-to-depth with "
                 "B = 3 (94.1 % against 77.3 %). Slower elsewhere: uint8 B = 3 DEPTH_COLUMN_ROW depth-to-space "
                 "91.9 % against 93.8 %, uint8 B = 2 otherwise 94.5-95.1 % against 96.5-97.9 %, float16 B = 2 "
                 "67-80 % against 97-98 %, B = 3 85-93 % against 90-96 %, B = 4 71-83 % against 88-96 %. Staging "
                 "the source side through the subgroup's slice too, instead of each invocation loading its own "
                 "words, lost everywhere (uint8 B = 3 space-to-depth 60 %).",
        measured_on=H200),
    Variant(
        "nhwc.staged", "depth_space_nhwc", _NHWC,
        "channel-last COLUMN_ROW_DEPTH of 1- and 2-byte elements with abutting space-side pixels, through "
        "shared-memory tiles of space-side rows (move_staged)",
        tuning=dict(STAGED_TILE_BYTES=2048, STAGED_LOCAL=64, STAGED_FILL=1, STAGED_ROTATE=True, **_TILES),
        needs=(_SUBWORD,),
        wins=Rule("1-byte elements but odd-B depth-to-space; 2-byte elements with B = 2, or depth-to-space "
                  "with B = 4",
                  _staged_wins),
        measured="Where move_staged measured faster on an H200 than the other channel-last paths (64 MiB, 2 KiB "
                 "tiles of 64 invocations; 8 KiB tiles of 256 were slower everywhere, and so were units of 2 or 4 "
                 "space-side words): 1-byte elements (B = 2: depth-to-space 98 % of copy against 76 % with 8 KiB "
                 "tiles and loads one after another, space-to-depth 94 % against 84 %; B = 4 space-to-depth 78 % "
                 "against 70 %; B = 3 space-to-depth 54 % with the depth side in the tile, 43 % without, 36 % with "
                 "element gathers; 66 % now, see STAGED_FILL) but for odd-B depth-to-space (uint8 B = 3 58 % "
                 "against move_blocks' 77 %; 66 % against 78 % with filled tiles), and 2-byte elements with B = 2 "
                 "(98 / 94 % against 97 / 89 %) or depth-to-space with B = 4 (88 % against 62 %); its element-wise "
                 "transposes lost elsewhere (float16 B = 3: 62 / 59 % against element gathers' 77 / 77 %, 67 / 73 "
                 "% with filled tiles; B = 4 space-to-depth 78 % against 91 %). Odd-B tiles filled to STAGED_FILL "
                 "units an invocation: 66 % against 54 %; even-B rotated words (STAGED_ROTATE) 82 % against 79 %.",
        measured_on=H200),
    Variant(
        "nhwc.tiled", "depth_space_nhwc", _NHWC,
        "channel-last, any element size, order and B > 1, through shared-memory tiles of about TILED_BYTES "
        "(move_tiled); swizzled for 4-byte depth-to-space from pixels of 2^k >= 32 words",
        tuning=dict(TILED_BYTES=2048, TILED_LOCAL=64, TILED_SWIZZLE=True, **_TILES),
        wins=Rule("where the direct channel-last kernels cannot run (vectors not whole and aligned); depth-to-space "
                  "into pixels with gaps; DEPTH_COLUMN_ROW runs narrower than 16-byte vectors; COLUMN_ROW_DEPTH "
                  "depth-to-space of 4-byte elements with B > 2 and of 8-byte ones",
                  _tiles_win),
        measured="Where move_tiled measured faster than the direct channel-last kernels on an H200 (64 MiB, 2 KiB "
                 "tiles of 64 invocations; 8 KiB or 256 invocations were slower everywhere), or where those cannot "
                 "run (vec None): depth-to-space into output pixels with gaps between them (float32 80 % of copy "
                 "against 70-73 %, uint8 COLUMN_ROW_DEPTH 38 % against 25 %); DEPTH_COLUMN_ROW runs narrower than "
                 "16-byte vectors (uint8 B = 3: 94 % against 78 %, space-to-depth 88 % against 75 %); "
                 "COLUMN_ROW_DEPTH depth-to-space of 4- and 8-byte elements (float32 B = 3 / 4: 91 / 86 % against "
                 "76 / 80 %, B = 4 91 % with TILED_SWIZZLE; float64 B = 2 / 3 / 4: 98 / 92 / 98 % against 93 / 83 "
                 "/ 88 %) but for float32 B = 2 (86 % against move_blocks' 96 %). Elsewhere the direct kernels "
                 "were faster: sub-word COLUMN_ROW_DEPTH elements gather from the tile element by element (uint8 "
                 "38-43 %, float16 41-66 %), and the rest of space-to-depth reaches 93-98 % without a tile.",
        measured_on=H200),
    Variant(
        "nhwc.blocks", "depth_space_nhwc", _NHWC,
        "channel-last COLUMN_ROW_DEPTH depth-to-space of 1-byte elements, odd-B 2-byte ones or B = 2: a "
        "channel vector for all block positions at once (move_blocks)",
        measured="uint8 B = 3 71 % of copy with 4-byte vectors, 58 % with 8-byte ones; float16 B = 3 90 %, 56 % "
                 "with 16-byte vectors, 78 % with element gathers",
        measured_on=H200),
    Variant(
        "nhwc.direct", "depth_space_nhwc", _NHWC,
        "channel-last, whole aligned vectors, invocations in the output's order (move_dcr; stores in memory "
        "order, loads gathered)"),
    Variant(
        "nhwc.input_order", "depth_space_nhwc", _NHWC,
        "channel-last DEPTH_COLUMN_ROW, invocations in the input's order (loads in memory order, stores in "
        "runs of a block row)",
        wins=Rule("DEPTH_COLUMN_ROW depth-to-space of 2-, 4- and 8-byte elements but 8-byte ones with B = 2; "
                  "DEPTH_COLUMN_ROW space-to-depth from abutting pixels whose B-pixel runs are whole 32-byte "
                  "sectors, 64 bytes or more or with B = 2",
                  _dcr_input_order),
        measured="Whether move_dcr runs in the input's order: DEPTH_COLUMN_ROW depth-to-space of 2-, 4- and 8-byte "
                 "elements, where it measured faster on an H200 (64 MiB packed NHWC, % of copy: float16 B = 4 "
                 "96.5-97.2 % against 88.4 %, B = 3 95.1-95.8 % against 90.1 %; float32 97.1-97.9 % against "
                 "95.1-96.5 %; float64 B = 3 / 4 96.4-97.2 % against 96.4-96.5 %), but float64 B = 2 (97.9 % "
                 "against 99.3 %); uint8 cases of the benchmark take other kernels. Space-to-depth from abutting "
                 "pixels whose block-row runs (B pixels) are whole 32-byte sectors, of 64 bytes or more or with B "
                 "= 2 (same measure: float32 B = 3 / 4 97.8-97.9 % against 95.8-96.5 %, float64 B = 3 / 4 "
                 "97.1-97.9 % against 95.7-96.4 %, uint8 and float16 B = 2 99.3 % against 97.9 %, float64 B = 2 "
                 "98.6 % against 97.9 %, float32 B = 2 equal); other runs lost (float16 B = 4, 32 bytes: 90.7 % "
                 "against 95.8 %; float16 B = 3, 48 bytes, and uint8 B = 4, 16 bytes, which leave partial sectors: "
                 "63-65 %).",
        measured_on=H200),
    Variant("element.words", "depth_space", _ELEMENT, "any layout, 4- and 8-byte elements: one element an invocation"),
    Variant("element.word_stores", "depth_space", _ELEMENT,
            "any layout, 1- and 2-byte elements in a nested output layout: one output word an invocation"),
    Variant("element.atomic", "depth_space", _ELEMENT,
            "any layout, 1- and 2-byte elements: atomics on words (the portable fallback)"),
    Variant("element.narrow_stores", "depth_space", _ELEMENT,
            "any layout, 1- and 2-byte elements: 8- or 16-bit stores, where the device has 8/16-bit storage",
            builds=((("SMALL_STORE_BITS", 8),), (("SMALL_STORE_BITS", 16),)), needs=(_NARROW_STORAGE,)),
], push=PUSH)
ELEMENT_MODES = ("element.words", "element.word_stores", "element.atomic", "element.narrow_stores")
