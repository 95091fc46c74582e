"""Depth/space's routines: the selection that walks the variant table (variants.py) and builds the
kernel. Three routines, each a shader: the bandwidth path over rows (depth_space_rows.comp), the
channel-last path (depth_space_nhwc.comp and depth_space_lanes.comp), and the general path over
elements (depth_space.comp), which takes any layout DirectML allows. select() tries them in that
order; within a routine the layout decides what can run and the rows' rules (where each measured
faster) decide what does. Nothing here is known to the descriptions but through select()."""
from __future__ import annotations

from typing import NamedTuple, Optional

from ...enums import DepthSpaceOrder
from ...runtime.capabilities import SUBGROUP_SHUFFLE
from ...runtime.kernel import Kernel
from ...tensor import element_extent_bytes, nested_order, packed_strides
from ..variants import Selection
from .variants import ELEMENT_MODES, TABLE


def select(desc, sel: Selection) -> Kernel:
    """The kernel for the description under the selection (Table.selection, Table.chosen_by): the
    first routine that can run it, within it the variant the layout and the measurements pick."""
    k = None
    for names, routine in _ROUTINES:
        if k is None and sel.may(*names):
            k = routine(desc, sel)
            if k is not None and not sel.usable(k):     # past the device's limits: the next routine
                k = None
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


def _common(d) -> dict:
    """The specialization constants every depth/space kernel but the lanes one begins with."""
    return dict(ELEM_BYTES=d.input_tensor.element_bytes, BLOCK=d.block_size, D2S=int(d.depth_to_space),
                ORDER=int(d.effective_order))


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
        spec=dict(_common(d), K=k, CHUNKS=chunks, STAGED=int(staged),
                  SUBGROUP_STAGED=int(staged and sel["ROWS_SUBGROUP_STAGED"]), FLAT=int(staged and flat),
                  BLOCK_ROW_MAJOR=int(row_major)),
        push=dict(space_strides=tuple(ss[:3]) + (0,), depth_strides=tuple(ds[:3]) + (0,), chunks_per_row=cpr,
                  space_height=hs, space_channels=cs, total_chunks=total),
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
    if sel.where_wins("nhwc.tiled", d, packed_w=packed_w, vec=vec):
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
    # the rule is also where its invocation order was built for: a forced input_order runs nowhere else
    in_order = not blocks and TABLE["nhwc.input_order"].wins.test(d, sel) and sel.prefer("nhwc.input_order", True)
    name = "nhwc.blocks" if blocks else "nhwc.input_order" if in_order else "nhwc.direct"
    return _nhwc_launch(d, name, vec, int(blocks), 0, total, local_size=sel.workgroup(256), in_order=in_order)


def _nhwc_launch(d, name: str, vec: int, blocks: int, seg: int, count: int, tile: Optional[_Tile] = None,
                 local_size=256, in_order: bool = False) -> Kernel:
    """The depth_space_nhwc.comp kernel of variant `name`. tile: move_staged's or move_tiled's tile (_Tile), none for the other kernels; in_order:
    move_dcr's invocations in the input's order (IN_ORDER)."""
    inp, out = d.input_tensor, d.output_tensor
    n, oc, oh, ow = out.sizes
    _, ic, ih, iw = inp.sizes
    t = tile or _Tile()
    return TABLE[name].kernel(
                  spec=dict(_common(d), VEC_BYTES=vec, BLOCKS=blocks, SEG=seg, TILE_WORDS=t.words,
                            UNIT_BYTES=t.unit_bytes, LOADS=t.loads, UNIT_LOADS=t.unit_loads,
                            DEPTH_TILE=int(t.depth_tile), ROTATE=int(t.rotate), SWIZZLE=t.swizzle,
                            IN_ORDER=int(in_order)),
                  push=dict(out_dims=(n, oh, ow, oc), in_dims=(n, ih, iw, ic),
                            out_strides=_pixel_strides(out.effective_strides), tile_pixels=t.pixels,
                            in_strides=_pixel_strides(inp.effective_strides), tile_pitch=t.pitch),
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


def _staged(d, sel, packed_w) -> Optional[Kernel]:
    """COLUMN_ROW_DEPTH of 1- and 2-byte elements with abutting space-side pixels, through
    shared memory (move_staged): tiles of XT depth-side pixels of a row, about
    STAGED_TILE_BYTES, at least one pixel, up to TILED_MAX_BYTES in all (with an odd B, whose
    units are not whole vectors, the depth side's pixels go through the tile too); or None
    where the vectors would not be whole and aligned, and where its rule says no."""
    eb, b = d.input_tensor.element_bytes, d.block_size
    depth, space = d.sides()
    dst, sst = depth.effective_strides, space.effective_strides
    cs = space.sizes[1]
    depth_tile = b % 2         # odd B: units of BB words are not whole vectors
    cd = cs * b * b
    if (not sel.where_wins("nhwc.staged", d) or b < 2 or not packed_w or cs * eb % 4
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


def _lanes(d, sel) -> Optional[Kernel]:
    """dmlvk/shaders/depth_space_lanes.comp, where its rule says so: 1- and 2-byte elements
    in tensors whose pixels and rows abut, one depth-side pixel of at most
    LANES_MAX_PIXEL_BYTES an invocation, whose BLOCK row segments are whole 8-byte vectors, and
    images and rows 8-byte aligned; else None."""
    eb, b = d.input_tensor.element_bytes, d.block_size
    depth, space = d.sides()
    dst, sst = depth.effective_strides, space.effective_strides
    n, cd, hd, wd = depth.sizes
    cs = space.sizes[1]
    pixel = cd * eb
    if (not sel.where_wins("nhwc.lanes", d) or b * cs * eb % 8 or pixel > sel["LANES_MAX_PIXEL_BYTES"]
            or dst[3] != cd or sst[3] != cs or any(st * eb % 8 for st in (dst[0], dst[2], sst[0], sst[2]))):
        return None
    local = sel["LANES_LOCAL"]
    while local > 32 and local * pixel > sel["TILED_MAX_BYTES"]:
        local //= 2
    segs = -(-wd // local)
    return TABLE["nhwc.lanes"].kernel(
                  spec=dict(EB=eb, BLOCK=b, D2S=int(d.depth_to_space), ORDER=int(d.effective_order), CS=cs,
                            TILE_UNITS=local * pixel // 8),
                  push=dict(depth=(n, hd, wd), segments=segs, depth_strides=(dst[0], dst[2], 0, 0),
                            space_strides=(sst[0], sst[2], 0, 0)),
                  count=n * hd * segs * local, slots=(0, 1), local_size=local)


def _row_segments(d, sel, ist, ost, packed_w) -> Optional[Kernel]:
    """Depth-to-space into abutting output pixels whose BLOCK-pixel row segments are 16-byte
    vectors: move_blocks with SEG, one input pixel (BLOCK 16-byte vectors) per invocation, its
    output as BLOCK whole vector stores, one per row; or None. On an H200, uint8 B = 4 with 4
    channels: COLUMN_ROW_DEPTH 94 % of copy (53 % with 4-byte pixel vectors), DEPTH_COLUMN_ROW
    94 % (81 % moving the runs one by one); wider segments measured slower than the other
    paths (float16 B = 4: 60 % against 88 %; uint8 B = 3: 53 % against 78 %)."""
    eb, b, cs = d.input_tensor.element_bytes, d.block_size, d.output_tensor.sizes[1]
    if not (sel.where_wins("nhwc.segments", d) and d.depth_to_space and packed_w and b * cs * eb == 16):
        return None
    if any(st * eb % 16 for st in (ist[0], ist[2], ist[3], ost[0], ost[2])):
        return None
    n, _, h, w = d.input_tensor.sizes
    return _nhwc_launch(d, "nhwc.segments", 16, 1, cs, n * h * w, local_size=sel.workgroup(256))


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
        spec=dict(_common(d), MODE=mode),
        push=dict(in_strides=inp.effective_strides, out_sizes=out.sizes, out_strides=out_strides, out_dims=dims,
                  space_c=space_c),
        count=count, slots=(0, 1), local_size=sel.workgroup(128), defines=defines)


# The routines in the order select() tries them, each with the variants it chooses among.
_ROUTINES = ((("rows", "rows.paired", "rows.staged"), _rows_kernel),
             (tuple(v.name for v in TABLE if v.name.startswith("nhwc.")), _nhwc_kernel),
             (ELEMENT_MODES, _element_kernel))
