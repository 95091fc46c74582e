"""Depth/space's variant table and the selection that walks it.

Three routines, each a shader: the bandwidth path over rows (depth_space_rows.comp), the
channel-last path (depth_space_nhwc.comp and depth_space_lanes.comp), and the general path over
elements (depth_space.comp), which takes any layout DirectML allows. select() tries them in that
order; within a routine the layout decides what can run and the measurements (each variant's
`measured`, all on an NVIDIA H200) decide what does. Nothing here is known to the descriptions
but through select()."""
from __future__ import annotations

from typing import NamedTuple, Optional

from ...enums import DepthSpaceOrder
from ...runtime.capabilities import SUBGROUP_SHUFFLE
from ...runtime.device import Kernel
from ...tensor import element_extent_bytes, nested_order, packed_strides
from ..variants import Selection, Table, Variant

H200 = "NVIDIA H200, driver 580.159.04"
_COMMON = ("ELEM_BYTES", "BLOCK", "D2S", "ORDER")
_ROWS = _COMMON + ("K", "CHUNKS", "STAGED", "SUBGROUP_STAGED", "FLAT", "BLOCK_ROW_MAJOR")
_NHWC = _COMMON + ("VEC_BYTES", "BLOCKS", "SEG", "TILE_WORDS", "UNIT_BYTES", "LOADS", "UNIT_LOADS", "DEPTH_TILE",
                   "ROTATE", "SWIZZLE", "IN_ORDER")
_ELEMENT = _COMMON + ("MODE",)
_TILES = dict(TILED_MAX_BYTES=16384)     # Vulkan's least maxComputeSharedMemorySize

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
        measured="uint8 B = 4 with 4 channels: COLUMN_ROW_DEPTH 94 % of copy (53 % with 4-byte pixel vectors), "
                 "DEPTH_COLUMN_ROW 94 % (81 % moving the runs one by one); wider segments were slower than the "
                 "other paths (float16 B = 4: 60 % against 88 %)",
        measured_on=H200),
    Variant(
        "nhwc.lanes", "depth_space_lanes", ("EB", "BLOCK", "D2S", "ORDER", "CS", "TILE_UNITS"),
        "channel-last 1- and 2-byte elements: a depth-side pixel an invocation, rearranged in registers and "
        "stored through its subgroup's slice of shared memory",
        tuning=dict(LANES_MAX_PIXEL_BYTES=160, LANES_LOCAL=128, **_TILES),
        measured="64 MiB packed NHWC: uint8 space-to-depth B = 3 95.8 % of copy against 69.9-87.0 %, B = 4 "
                 "COLUMN_ROW_DEPTH 95.8 % against 83.0 %; uint8 COLUMN_ROW_DEPTH depth-to-space B = 3 91.9 % "
                 "against 77.8 %; float16 COLUMN_ROW_DEPTH space-to-depth B = 3 94.1 % against 77.3 %; slower "
                 "elsewhere (float16 B = 2 67-80 % against 97-98 %)",
        measured_on=H200),
    Variant(
        "nhwc.staged", "depth_space_nhwc", _NHWC,
        "channel-last COLUMN_ROW_DEPTH of 1- and 2-byte elements with abutting space-side pixels, through "
        "shared-memory tiles of space-side rows (move_staged)",
        tuning=dict(STAGED_TILE_BYTES=2048, STAGED_LOCAL=64, STAGED_FILL=1, STAGED_ROTATE=True, **_TILES),
        measured="uint8 B = 2 depth-to-space 98 % of copy against 76 %, space-to-depth 94 % against 84 %; B = 4 "
                 "space-to-depth 78 % against 70 %; float16 B = 2 98 / 94 % against 97 / 89 %, B = 4 "
                 "depth-to-space 88 % against 62 %; odd-B tiles filled to STAGED_FILL units an invocation "
                 "(66 % against 54 %); even-B rotated words (STAGED_ROTATE) 82 % against 79 %",
        measured_on=H200),
    Variant(
        "nhwc.tiled", "depth_space_nhwc", _NHWC,
        "channel-last, any element size, order and B > 1, through shared-memory tiles of about TILED_BYTES "
        "(move_tiled); swizzled for 4-byte depth-to-space from pixels of 2^k >= 32 words",
        tuning=dict(TILED_BYTES=2048, TILED_LOCAL=64, TILED_SWIZZLE=True, **_TILES),
        measured="depth-to-space into pixels with gaps (float32 80 % of copy against 70-73 %), DEPTH_COLUMN_ROW "
                 "runs under 16 bytes (uint8 B = 3 94 % against 78 %), COLUMN_ROW_DEPTH depth-to-space of 4- and "
                 "8-byte elements (float32 B = 3 / 4 91 / 86 % against 76 / 80 %, 91 % swizzled); 8 KiB tiles or "
                 "256 invocations were slower everywhere",
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
        measured="64 MiB packed NHWC: float16 B = 4 depth-to-space 96.5-97.2 % of copy against 88.4 %, float32 "
                 "97.1-97.9 % against 95.1-96.5 %; space-to-depth from 32-byte-sector runs float32 B = 3 / 4 "
                 "97.8-97.9 % against 95.8-96.5 %; float64 B = 2 depth-to-space lost (97.9 % against 99.3 %)",
        measured_on=H200),
    Variant("element.words", "depth_space", _ELEMENT, "any layout, 4- and 8-byte elements: one element an invocation"),
    Variant("element.word_stores", "depth_space", _ELEMENT,
            "any layout, 1- and 2-byte elements in a nested output layout: one output word an invocation"),
    Variant("element.atomic", "depth_space", _ELEMENT,
            "any layout, 1- and 2-byte elements: atomics on words (the portable fallback)"),
    Variant("element.narrow_stores", "depth_space", _ELEMENT,
            "any layout, 1- and 2-byte elements: 8- or 16-bit stores, where the device has 8/16-bit storage",
            builds=((("SMALL_STORE_BITS", 8),), (("SMALL_STORE_BITS", 16),))),
])
ELEMENT_MODES = ("element.words", "element.word_stores", "element.atomic", "element.narrow_stores")


def select(desc, sel: Selection) -> Kernel:
    """The kernel for the description under the selection (Table.selection, Table.chosen_by): the
    first routine that can run it, within it the variant the layout and the measurements pick."""
    k = None
    for names, routine in _ROUTINES:
        if k is None and sel.may(*names):
            k = routine(desc, sel)
    return sel.chosen(k, "this description")


class _Tile(NamedTuple):
    """A channel-last tile kernel's shape (move_staged, move_tiled): depth-side pixels per tile,
    row pitch and size in words; move_tiled's contiguous run in bytes; source vectors per
    invocation; move_staged's units per invocation, whether its depth side goes through the tile,
    and whether its 16-byte vectors move to and from the tile with rotated words (ROTATE);
    move_tiled's swizzle, log2 of its source pixels' words (SWIZZLE, 0: none)."""
    pixels: int = 0
    pitch: int = 0
    words: int = 1
    unit_bytes: int = 4
    loads: int = 1
    unit_loads: int = 1
    depth_tile: bool = False
    rotate: bool = False
    swizzle: int = 0


def _widest_vector(need_bytes, element_bytes: int) -> Optional[int]:
    """The widest vector (16, 8 or 4 bytes, no narrower than an element) dividing every byte count
    in need_bytes (offsets and sizes the channel-last kernels move whole vectors between), or None."""
    return next((v for v in (16, 8, 4) if v >= element_bytes and all(x % v == 0 for x in need_bytes)), None)


def _paired(sel: Selection) -> bool:
    """Whether the rows kernel may pair invocations through subgroup shuffles: a device with them,
    whose subgroups (2 invocations or more) fill ROWS_PAIRED_LOCAL whole."""
    caps = sel.capabilities
    return (caps is not None and caps.has(SUBGROUP_SHUFFLE) and caps.subgroup_size >= 2
            and sel["ROWS_PAIRED_LOCAL"] % caps.subgroup_size == 0)


def _pixel_strides(strides) -> tuple:
    """The N, H and W element strides of a 4-D tensor (the channel-last path's pixel strides)."""
    return strides[0], strides[2], strides[3]


def _rows_kernel(d, sel: Selection) -> Optional[Kernel]:
    """The bandwidth path (dmlvk/shaders/depth_space_rows.comp), or None when the layout does not
    allow it: both tensors need a unit W stride, and the depth-side tensor's rows must split
    into aligned pieces of K elements (4 or 8 bytes) whose BlockSize-wide interleave forms
    aligned chunks of the space-side rows: 16 or 32 bytes where the block size allows, else
    (B = 3, 5, 6, 7) chunks of under 8 words moved as 8- or 4-byte vectors. With B = 4, 8-byte
    pieces where the device can pair invocations (_paired)."""
    b, eb = d.block_size, d.input_tensor.element_bytes
    depth, space = d.sides()
    ss, ds = space.effective_strides, depth.effective_strides
    n, cs, hs, ws = space.sizes
    if ss[3] != 1 or ds[3] != 1:
        return None

    def fits(k):
        return (ws // b) % k == 0 and all(st % (k * b) == 0 for st in ss[:3]) and all(st % k == 0 for st in ds[:3])

    paired = b == 4 and eb <= 8 and fits(8 // eb) and _paired(sel) and sel.prefer("rows.paired", True)
    k = 8 // eb if paired else max(16, b * eb) // (b * eb)
    if not (k * b * eb in (16, 32) and k * eb in (4, 8) and fits(k)):
        k = next((pb // eb for pb in (8, 4) if pb % eb == 0 and pb // 4 * b < 8 and fits(pb // eb)), None)
        if k is None:
            return None
    cpr = ws // (k * b)
    total = n * cs * hs * cpr
    chunks = sel["ROWS_CHUNKS"]
    cw = k * b * eb // 4                                # chunk words
    cv = 4 if cw % 4 == 0 else 2 if cw % 2 == 0 else 1  # words per vector of it
    # 32-byte chunks move in 16-byte halves, or whole where paired; chunks that are not
    # 16-byte vectors are staged in shared memory: depth-to-space's, and space-to-depth's of
    # 4- and 8-byte elements from a large packed input
    flat = sel["ROWS_FLAT"] and tuple(ss) == packed_strides(space.sizes)
    staged = cv < 4 and (d.depth_to_space or (eb >= 4 and flat and sel.prefer(
        "rows.staged", sel["ROWS_STAGED_S2D"] and space.total_bytes > sel["ROWS_STAGED_S2D_ABOVE"])))
    if staged or paired:
        chunks = 1
    row_major = not staged and _block_row_major(d, sel)
    items = total * (2 if cw == 8 and not paired else 1)
    return TABLE["rows.paired" if paired else "rows.staged" if staged else "rows"].kernel(
        spec=(eb, b, int(d.depth_to_space), int(d.effective_order), k, chunks, int(staged),
              int(staged and sel["ROWS_SUBGROUP_STAGED"]),
              int(staged and flat), int(row_major)),
        push=tuple(ss[:3]) + (0,) + tuple(ds[:3]) + (0, cpr, hs, cs, total),
        count=-(-items // chunks), slots=(0, 1),
        local_size=sel["ROWS_STAGED_LOCAL"] if staged else sel["ROWS_PAIRED_LOCAL"] if paired else sel["ROWS_LOCAL"],
        defines=(("PAIRED", 1),) if paired else ())


def _block_row_major(d, sel) -> bool:
    """Whether the rows path takes each space-side channel's rows in block-row order (every
    BLOCK-th row from 0, then from 1, ...): space-to-depth with B = 3 or 4, from
    ROWS_BLOCK_ROW_MAJOR_FROM bytes of input in COLUMN_ROW_DEPTH order and above
    ROWS_BLOCK_ROW_MAJOR_DCR_ABOVE in DEPTH_COLUMN_ROW order. Measured on an H200 (packed,
    each case in both orders in alternation; points of % of the paired copy):
    - B = 4 COLUMN_ROW_DEPTH: +0.1 to +1.2 at 64 MiB, +1.2 to +1.8 at 256 MiB, +0.8 to +1.7
      at 1 GiB; DEPTH_COLUMN_ROW: -0.6 to +0.2 at 64 and 256 MiB, +0.9 to +2.1 at 1 GiB;
    - B = 3 of 1- and 2-byte elements: -0.7 to +0.5 at 64 MiB; at 256 MiB +0.8 / +0.9 in
      COLUMN_ROW_DEPTH order and -0.2 / -0.4 in DEPTH_COLUMN_ROW; +0.7 to +1.4 at 1 GiB;
    - B = 2 lost: -1.3 to +0.2 at 64 MiB, -1.8 to +0.7 at 1 GiB;
    - depth-to-space lost at 1, 16, 256 MiB and 1 GiB (up to -2.6), though B = 3
      DEPTH_COLUMN_ROW gained 0.6-2.4 at 64 MiB;
    - with the staged loads of B = 3 (4- and 8-byte elements above 64 MiB) it lost 2.5-3.7,
      and without them it measured within 0.3 points of them, so those keep their order."""
    if d.depth_to_space or d.block_size not in (3, 4) or not sel["ROWS_BLOCK_ROW_MAJOR"]:
        return False
    nbytes = d.input_tensor.total_bytes
    if d.effective_order == DepthSpaceOrder.COLUMN_ROW_DEPTH:
        return nbytes >= sel["ROWS_BLOCK_ROW_MAJOR_FROM"]
    return nbytes > sel["ROWS_BLOCK_ROW_MAJOR_DCR_ABOVE"]


def _nhwc_kernel(d, sel: Selection) -> Optional[Kernel]:
    """The channel-last path (dmlvk/shaders/depth_space_nhwc.comp), or None: both tensors must
    have unit C stride (NHWC, packed or with gaps between pixels, rows or images), the output
    no overlap, and each output pixel's channels must split into whole, aligned 16-, 8- or
    4-byte vectors: in DEPTH_COLUMN_ROW order also the contiguous input runs they are copied
    from, which span BLOCK pixels when the space side's pixels abut (a depth-to-space vector may
    then span output pixels)."""
    inp, out = d.input_tensor, d.output_tensor
    eb, b = inp.element_bytes, d.block_size
    ist, ost = inp.effective_strides, out.effective_strides
    if ist[1] != 1 or ost[1] != 1 or nested_order(out.sizes, ost) is None:
        return None
    n, oc, oh, ow = out.sizes
    space = d.sides()[1]
    packed_w = space.effective_strides[3] == space.sizes[1]     # the space side's pixels abut
    need = [st * eb for st in _pixel_strides(ost)]
    seg = _row_segments(d, sel, ist, ost, packed_w) or _lanes(d, sel)
    if seg is not None:
        return seg
    if d.effective_order == DepthSpaceOrder.DEPTH_COLUMN_ROW:
        # contiguous runs: the channels of a block position; with abutting space-side pixels,
        # a block row's (a vector may then span output pixels, in depth-to-space). A run then
        # starts at every BLOCK-th space-side pixel, so the space side's W stride need only
        # align BLOCK pixels.
        run = (oc if d.depth_to_space else inp.sizes[1]) * eb * (b if packed_w else 1)
        need += [run] + [st * eb for st in _pixel_strides(ist)]
        if packed_w:
            need[2 if d.depth_to_space else 6] *= b
        if not (d.depth_to_space and packed_w):
            need.append(oc * eb)
    else:
        staged = _staged(d, sel, packed_w)
        if staged is not None:
            return staged
        need.append(oc * eb)
    vec = _widest_vector(need, eb)
    if sel.prefer("nhwc.tiled", _tiles_win(d, packed_w, vec)):
        tiled = _tiled(d, sel)
        if tiled is not None:
            return tiled
    if vec is None:
        return None
    # COLUMN_ROW_DEPTH depth-to-space of 1-byte elements, of 2-byte ones with an odd B, or with
    # B = 2: a channel vector for all block positions at once, where its input vectors are
    # aligned (faster there on an H200; element gathers elsewhere, and for space-to-depth).
    # With an odd B, whose transposes go element by element, 4-byte vectors: on an H200 uint8
    # B = 3 ran at 71 % of copy with them, 58 % with 8-byte ones (78 / 59 % after the
    # shift-and-mask element moves), float16 B = 3 at 90 % with them, 56 % with 16-byte ones
    # and 78 % with element gathers (smaller vectors were slower everywhere else: 8-byte
    # gathers 52-77 % where 16-byte ones give 66-98 %).
    odd_halves = eb == 2 and b % 2 == 1
    blocks = (d.effective_order != DepthSpaceOrder.DEPTH_COLUMN_ROW and d.depth_to_space
              and (eb == 1 or b == 2 or odd_halves) and all(st * eb % vec == 0 for st in _pixel_strides(ist))
              and sel.prefer("nhwc.blocks", True))
    if blocks and eb <= 2 and b % 2:
        vec = 4
    total = n * oh * ow * oc * eb // vec
    if blocks:
        total //= b * b
    in_order = not blocks and _dcr_input_order(d) and sel.prefer("nhwc.input_order", True)
    name = "nhwc.blocks" if blocks else "nhwc.input_order" if in_order else "nhwc.direct"
    return _nhwc_launch(d, name, vec, int(blocks), 0, total, in_order=in_order)


def _nhwc_launch(d, name: str, vec: int, blocks: int, seg: int, count: int, tile: Optional[_Tile] = None,
                 local_size=256, in_order: bool = False) -> Kernel:
    """The depth_space_nhwc.comp kernel of variant `name`. tile: move_staged's or move_tiled's tile (_Tile), none for the other kernels; in_order:
    move_dcr's invocations in the input's order (IN_ORDER)."""
    inp, out = d.input_tensor, d.output_tensor
    n, oc, oh, ow = out.sizes
    _, ic, ih, iw = inp.sizes
    t = tile or _Tile()
    return TABLE[name].kernel(
                  spec=(inp.element_bytes, d.block_size, int(d.depth_to_space), int(d.effective_order), vec,
                        blocks, seg, t.words, t.unit_bytes, t.loads, t.unit_loads, int(t.depth_tile),
                        int(t.rotate), t.swizzle, int(in_order)),
                  push=(n, oh, ow, oc, n, ih, iw, ic) + _pixel_strides(out.effective_strides) + (t.pixels,)
                  + _pixel_strides(inp.effective_strides) + (t.pitch,),
                  count=count, slots=(0, 1), local_size=local_size)


def _tiled(d, sel) -> Optional[Kernel]:
    """Channel-last depth/space of any element size, order and block size > 1 through
    shared-memory tiles (move_tiled): XT depth-side pixels of a row and their BLOCK space-side
    row segments, about TILED_BYTES (a whole number of vectors' worth of pixels, up to
    TILED_MAX_BYTES); both sides move as whole vectors, neighbouring invocations on
    neighbouring vectors. None where the vectors would not be whole and aligned."""
    eb, b = d.input_tensor.element_bytes, d.block_size
    if b < 2:
        return None
    depth, space = d.sides()
    dst, sst = depth.effective_strides, space.effective_strides
    n, cd, hd, wd = depth.sizes
    cs = space.sizes[1]
    # tiles of a multiple of `grain` pixels: rows of whole 16-byte vectors where possible
    grain = next(g for g in (1, 2, 4, 8, 16) if g * cs * eb % 16 == 0)
    xt = max(grain, sel["TILED_BYTES"] // (cd * eb) // grain * grain)
    if xt * cd * eb > sel["TILED_MAX_BYTES"]:
        return None
    xt = min(xt, -(-wd // grain) * grain)
    need = [dst[0], dst[2], sst[0], sst[2]]
    for c, ps, per in ((cd, dst[3], 1), (cs, sst[3], b)):
        # a side whose pixels abut moves as rows of pixels; else pixel by pixel
        need += [xt * per * c, wd * per * c] if ps == c else [c, ps]
    vec = _widest_vector([x * eb for x in need], eb)
    if vec is None:
        return None
    if d.effective_order == DepthSpaceOrder.DEPTH_COLUMN_ROW:
        unit = min(vec, cs * eb & -(cs * eb))     # the largest power of two dividing a pixel's bytes
    else:
        unit = eb
    rows = 1 if d.depth_to_space else b         # of the source side, in the tile
    row_words = xt * cd * eb // 4 // rows
    loads = -(-rows * row_words * 4 // vec // sel["TILED_LOCAL"])
    count = n * hd * -(-wd // xt) * sel["TILED_LOCAL"]
    # depth-to-space of 4-byte elements from pixels of 2^k >= 32 words: the tile swizzled
    # (SWIZZLE = k)
    pixel_words = cd * eb // 4
    swizzle = (pixel_words.bit_length() - 1 if sel["TILED_SWIZZLE"] and d.depth_to_space and eb == 4
               and vec == 16 and pixel_words >= 32 and pixel_words & (pixel_words - 1) == 0 else 0)
    tile = _Tile(xt, row_words, rows * row_words, unit, loads, swizzle=swizzle)
    return _nhwc_launch(d, "nhwc.tiled", vec, 3, 0, count, tile, sel["TILED_LOCAL"])


def _tiles_win(d, packed_w: bool, vec: Optional[int]) -> bool:
    """Where move_tiled measured faster than the direct channel-last kernels on an H200 (64 MiB,
    2 KiB tiles of 64 invocations; 8 KiB or 256 invocations were slower everywhere), or where
    those cannot run (vec None): depth-to-space into output pixels with gaps between them
    (float32 80 % of copy against 70-73 %, uint8 COLUMN_ROW_DEPTH 38 % against 25 %);
    DEPTH_COLUMN_ROW runs narrower than 16-byte vectors (uint8 B = 3: 94 % against 78 %,
    space-to-depth 88 % against 75 %); COLUMN_ROW_DEPTH depth-to-space of 4- and 8-byte
    elements (float32 B = 3 / 4: 91 / 86 % against 76 / 80 %, B = 4 91 % with TILED_SWIZZLE;
    float64 B = 2 / 3 / 4: 98 / 92 / 98 % against 93 / 83 / 88 %) but for float32 B = 2 (86 %
    against move_blocks' 96 %).
    Elsewhere the direct kernels were faster: sub-word COLUMN_ROW_DEPTH elements gather from the
    tile element by element (uint8 38-43 %, float16 41-66 %), and the rest of space-to-depth
    reaches 93-98 % without a tile."""
    eb, b = d.input_tensor.element_bytes, d.block_size
    if vec is None or (d.depth_to_space and not packed_w):
        return True
    if d.effective_order == DepthSpaceOrder.DEPTH_COLUMN_ROW:
        return vec < 16
    return d.depth_to_space and eb >= 4 and (b > 2 or eb == 8)


def _staged(d, sel, packed_w) -> Optional[Kernel]:
    """COLUMN_ROW_DEPTH of 1- and 2-byte elements with abutting space-side pixels, through
    shared memory (move_staged): tiles of XT depth-side pixels of a row, about
    STAGED_TILE_BYTES, at least one pixel, up to TILED_MAX_BYTES in all (with an odd B, whose
    units are not whole vectors, the depth side's pixels go through the tile too); or None
    where the vectors would not be whole and aligned, and where _staged_wins says no."""
    eb, b = d.input_tensor.element_bytes, d.block_size
    depth, space = d.sides()
    dst, sst = depth.effective_strides, space.effective_strides
    cs = space.sizes[1]
    depth_tile = b % 2         # odd B: units of BB words are not whole vectors
    cd = cs * b * b
    if (not sel.prefer("nhwc.staged", _staged_wins(d)) or b < 2 or not packed_w or cs * eb % 4
            or cd * eb * (1 + depth_tile) > sel["TILED_MAX_BYTES"]):
        return None
    n, _, hd, wd = depth.sizes
    # a power of two of pixels: about STAGED_TILE_BYTES, at least one; with an odd B at least
    # STAGED_FILL units (a space-side word's channels) an invocation
    xt = 1 << max(0, (sel["STAGED_TILE_BYTES"] // (cd * eb)).bit_length() - 1)
    if sel["STAGED_FILL"] and depth_tile:
        fill = -(-sel["STAGED_LOCAL"] * sel["STAGED_FILL"] * 4 // (cs * eb))
        if (b * fill * cs + fill * cd) * eb + 4 * b <= sel["TILED_MAX_BYTES"]:
            xt = max(xt, fill)
    xt = min(xt, 1 << max(0, (wd - 1).bit_length()))
    need = [x * eb for x in (sst[0], sst[2], dst[0], dst[2], xt * b * cs, wd * b * cs)]
    if depth_tile:      # the depth side's pixels as rows where they abut, else one by one
        need += [x * eb for x in ((xt * cd, wd * cd) if dst[3] == cd else (cd, dst[3]))]
    else:
        need += [dst[3] * eb, b * b * 4]
    vec = _widest_vector(need, eb)
    if vec is None:
        return None
    row_words = xt * b * cs * eb // 4
    # rows whole vectors apart where the vectors' words rotate (STAGED_ROTATE, even B), else
    # an odd number of words apart: each the faster on an H200
    rotate = sel["STAGED_ROTATE"] and not depth_tile and vec == 16
    pitch = row_words if rotate else row_words + 1 - row_words % 2
    loads = -(-b * row_words * 4 // vec // sel["STAGED_LOCAL"])      # the depth side's tile holds as many
    unit_loads = -(-xt * cs * eb // 4 // sel["STAGED_LOCAL"])
    words = b * pitch + depth_tile * xt * cd * eb // 4
    tile = _Tile(xt, pitch, words, 4, loads, unit_loads, bool(depth_tile), rotate)
    return _nhwc_launch(d, "nhwc.staged", vec, 2, 0, n * hd * -(-wd // xt) * sel["STAGED_LOCAL"], tile, sel["STAGED_LOCAL"])


def _staged_wins(d) -> bool:
    """Where move_staged measured faster on an H200 than the other channel-last paths (64 MiB,
    2 KiB tiles of 64 invocations; 8 KiB tiles of 256 were slower everywhere, and so were
    units of 2 or 4 space-side words): 1-byte elements (B = 2: depth-to-space 98 % of copy
    against 76 % with 8 KiB tiles and loads one after another, space-to-depth 94 % against
    84 %; B = 4 space-to-depth 78 % against 70 %; B = 3 space-to-depth 54 % with the depth
    side in the tile, 43 % without, 36 % with element gathers; 66 % now, see STAGED_FILL) but
    for odd-B depth-to-space (uint8 B = 3 58 % against move_blocks' 77 %; 66 % against 78 %
    with filled tiles), and 2-byte elements with B = 2 (98 / 94 % against 97 / 89 %) or
    depth-to-space with B = 4 (88 % against 62 %); its element-wise transposes lost elsewhere
    (float16 B = 3: 62 / 59 % against element gathers' 77 / 77 %, 67 / 73 % with filled tiles;
    B = 4 space-to-depth 78 % against 91 %)."""
    eb, b = d.input_tensor.element_bytes, d.block_size
    if eb == 1:
        return b % 2 == 0 or not d.depth_to_space
    return eb == 2 and (b == 2 or (b == 4 and d.depth_to_space))


def _dcr_input_order(d) -> bool:
    """Whether move_dcr runs in the input's order: DEPTH_COLUMN_ROW depth-to-space of 2-, 4-
    and 8-byte elements, where it measured faster on an H200 (64 MiB packed NHWC, % of copy:
    float16 B = 4 96.5-97.2 % against 88.4 %, B = 3 95.1-95.8 % against 90.1 %; float32
    97.1-97.9 % against 95.1-96.5 %; float64 B = 3 / 4 96.4-97.2 % against 96.4-96.5 %), but
    float64 B = 2 (97.9 % against 99.3 %); uint8 cases of the benchmark take other kernels.
    Space-to-depth from abutting pixels whose block-row runs (B pixels) are whole 32-byte
    sectors, of 64 bytes or more or with B = 2 (same measure: float32 B = 3 / 4 97.8-97.9 %
    against 95.8-96.5 %, float64 B = 3 / 4 97.1-97.9 % against 95.7-96.4 %, uint8 and float16
    B = 2 99.3 % against 97.9 %, float64 B = 2 98.6 % against 97.9 %, float32 B = 2 equal);
    other runs lost (float16 B = 4, 32 bytes: 90.7 % against 95.8 %; float16 B = 3, 48 bytes,
    and uint8 B = 4, 16 bytes, which leave partial sectors: 63-65 %)."""
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


def _lanes(d, sel) -> Optional[Kernel]:
    """dmlvk/shaders/depth_space_lanes.comp, where _lanes_wins says so: 1- and 2-byte elements
    in tensors whose pixels and rows abut, one depth-side pixel of at most
    LANES_MAX_PIXEL_BYTES an invocation, whose BLOCK row segments are whole 8-byte vectors, and
    images and rows 8-byte aligned; else None."""
    eb, b = d.input_tensor.element_bytes, d.block_size
    depth, space = d.sides()
    dst, sst = depth.effective_strides, space.effective_strides
    n, cd, hd, wd = depth.sizes
    cs = space.sizes[1]
    pixel = cd * eb
    if (not sel.prefer("nhwc.lanes", _lanes_wins(d)) or b * cs * eb % 8 or pixel > sel["LANES_MAX_PIXEL_BYTES"]
            or dst[3] != cd or sst[3] != cs or any(st * eb % 8 for st in (dst[0], dst[2], sst[0], sst[2]))):
        return None
    local = sel["LANES_LOCAL"]
    while local > 32 and local * pixel > sel["TILED_MAX_BYTES"]:
        local //= 2
    segs = -(-wd // local)
    return TABLE["nhwc.lanes"].kernel(
                  spec=(eb, b, int(d.depth_to_space), int(d.effective_order), cs, local * pixel // 8),
                  push=(n, hd, wd, segs, dst[0], dst[2], 0, 0, sst[0], sst[2], 0, 0),
                  count=n * hd * segs * local, slots=(0, 1), local_size=local)


def _lanes_wins(d) -> bool:
    """Where depth_space_lanes.comp measured faster on an H200 than the other channel-last
    paths (64 MiB, packed NHWC, % of copy): uint8 space-to-depth with B = 3 (COLUMN_ROW_DEPTH
    95.8 % against move_staged's 69.9 %, DEPTH_COLUMN_ROW 95.8 % against 87.0 %) and with B = 4
    in COLUMN_ROW_DEPTH order (95.8 % against 83.0 %), uint8 COLUMN_ROW_DEPTH depth-to-space
    with B = 3 (91.9 % against 77.8 %) and DEPTH_COLUMN_ROW with B = 2 where the runs are
    16 bytes or more (so not moved through move_tiled's tiles; 94.5 % against 91.9 %),
    float16 COLUMN_ROW_DEPTH space-to-depth with B = 3 (94.1 % against 77.3 %). Slower
    elsewhere: uint8 B = 3 DEPTH_COLUMN_ROW depth-to-space 91.9 % against 93.8 %, uint8 B = 2
    otherwise 94.5-95.1 % against 96.5-97.9 %, float16 B = 2 67-80 % against 97-98 %, B = 3
    85-93 % against 90-96 %, B = 4 71-83 % against 88-96 %. Staging the source side through
    the subgroup's slice too, instead of each invocation loading its own words, lost everywhere
    (uint8 B = 3 space-to-depth 60 %)."""
    eb, b, crd = d.input_tensor.element_bytes, d.block_size, d.effective_order == DepthSpaceOrder.COLUMN_ROW_DEPTH
    run = b * d.sides()[1].sizes[1] * eb           # DEPTH_COLUMN_ROW: a block row's bytes
    if eb == 1:
        if not d.depth_to_space:
            return b == 3 or (b == 4 and crd)
        return (b == 3 and crd) or (b == 2 and not crd and run >= 16)
    return eb == 2 and b == 3 and crd and not d.depth_to_space


def _row_segments(d, sel, ist, ost, packed_w) -> Optional[Kernel]:
    """Depth-to-space into abutting output pixels whose BLOCK-pixel row segments are 16-byte
    vectors: move_blocks with SEG, one input pixel (BLOCK 16-byte vectors) per invocation, its
    output as BLOCK whole vector stores, one per row; or None. On an H200, uint8 B = 4 with 4
    channels: COLUMN_ROW_DEPTH 94 % of copy (53 % with 4-byte pixel vectors), DEPTH_COLUMN_ROW
    94 % (81 % moving the runs one by one); wider segments measured slower than the other
    paths (float16 B = 4: 60 % against 88 %; uint8 B = 3: 53 % against 78 %)."""
    eb, b, cs = d.input_tensor.element_bytes, d.block_size, d.output_tensor.sizes[1]
    if not (sel.prefer("nhwc.segments", d.effective_order in sel["ROW_SEGMENTS"]) and d.depth_to_space and packed_w and b * cs * eb == 16):
        return None
    if any(st * eb % 16 for st in (ist[0], ist[2], ist[3], ost[0], ost[2])):
        return None
    n, _, h, w = d.input_tensor.sizes
    return _nhwc_launch(d, "nhwc.segments", 16, 1, cs, n * h * w)


def _element_kernel(d, sel: Selection) -> Optional[Kernel]:
    """The general path (dmlvk/shaders/depth_space.comp): any strides DirectML allows. Its variants:
    MODE 0 whole 4/8-byte elements; MODE 1 sub-word elements, nested output layout, one output
    word per invocation; MODE 2 sub-word elements in any other layout, atomics on words (the
    portable fallback); MODE 3 the same with 8/16-bit stores, where the device has 8/16-bit
    storage."""
    inp, out = d.input_tensor, d.output_tensor
    eb = inp.element_bytes
    out_strides = out.effective_strides
    order = nested_order(out.sizes, out_strides)
    defines, caps = (), sel.capabilities
    if eb >= 4:
        mode, count = 0, out.element_count
    elif (order is not None and -(-element_extent_bytes(out) // 4) <= 2 * out.element_count + 64
          and sel.prefer("element.word_stores", True)):
        # one invocation per output word, as long as the words are not mostly gaps (the
        # work launched stays bounded by the elements, whatever the strides reach)
        mode, count = 1, -(-element_extent_bytes(out) // 4)
    elif (caps is not None and (caps.storage_8bit if eb == 1 else caps.storage_16bit)
          and sel.prefer("element.narrow_stores", True)):
        mode, count, defines = 3, out.element_count, (("SMALL_STORE_BITS", 8 * eb),)
    else:
        mode, count = 2, out.element_count
    dims = 0
    for j, dim in enumerate(order or (0, 1, 2, 3)):
        dims |= dim << (2 * j)
    space_c = out.sizes[1] if d.depth_to_space else inp.sizes[1]
    return TABLE[ELEMENT_MODES[mode]].kernel(
        spec=(eb, d.block_size, int(d.depth_to_space), int(d.effective_order), mode),
        push=tuple(inp.effective_strides) + tuple(out.sizes) + tuple(out_strides) + (dims, space_c),
        count=count, slots=(0, 1), local_size=128, defines=defines)


# The routines in the order select() tries them, each with the variants it chooses among.
_ROUTINES = ((("rows", "rows.paired", "rows.staged"), _rows_kernel),
             (tuple(v.name for v in TABLE if v.name.startswith("nhwc.")), _nhwc_kernel),
             (ELEMENT_MODES, _element_kernel))
