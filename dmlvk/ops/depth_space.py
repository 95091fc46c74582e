"""DEPTH_TO_SPACE, SPACE_TO_DEPTH and their "1" forms (spec 3, validation spec 5.2)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional

import numpy as np

from ..enums import DataType, DepthSpaceOrder, FeatureLevel, OperatorType
from ..errors import ValidationError
from ..runtime.capabilities import SUBGROUP_SHUFFLE, Capabilities
from ..runtime.device import Device, Kernel
from ..tensor import element_extent_bytes, packed_strides, TensorChecker, TensorDesc, nested_order, same_data_type
from ..arrays import DeviceArray, empty
from .base import CompiledOperator, array_bytes, array_layout, as_host_array, check_out, device_for, into_out

_FLOAT = {DataType.FLOAT32, DataType.FLOAT16}
_INT = {DataType.INT32, DataType.INT16, DataType.INT8, DataType.UINT32, DataType.UINT16, DataType.UINT8}
_WIDE = {DataType.FLOAT64, DataType.INT64, DataType.UINT64}


# Bandwidth path launch shape: invocations per workgroup and chunks per invocation (on an H200,
# 128 invocations measured within a timer step of 256 on the 64 MiB B = 2 / 4 cases, 0.3 points
# lower on average; 64 lost 15-20 points on the video-frame shapes).
ROWS_LOCAL = 256
ROWS_CHUNKS = 1
# Depth-to-space chunks staged in shared memory (B = 3, 5, 6, 7): each subgroup stages and stores
# its own (ROWS_SUBGROUP_STAGED), else the workgroup after a workgroup barrier (on an H200, B = 3
# at 64 MiB and 1 GiB, every element size and order: 0-1.2 points faster, uint8 89.5 % of copy
# against 89.0 %, float64 92.6 % against 91.9 %), in workgroups of ROWS_STAGED_LOCAL invocations
# (B = 3, 64 MiB: 93.8-96.5 % with 64, 93.2-95.8 % with 128, 88.4-91.9 % with 256, 86.2-89.5 %
# with 512)
ROWS_SUBGROUP_STAGED = True
ROWS_STAGED_LOCAL = 64
# Staged chunks of a packed space side (consecutive chunks abut) stored as one run of 16-byte
# vectors (FLAT in the shader) instead of each chunk's 8- or 4-byte vectors (on an H200, B = 3,
# every element size and order: 0-1.4 points faster, 1 GiB 97.0-97.7 % of copy against
# 96.4-97.3 %)
ROWS_FLAT = True
# Space-to-depth of 4- and 8-byte elements with such chunks (B = 3, 5, 6, 7) from a packed input
# of more than ROWS_STAGED_S2D_ABOVE bytes loads them through the staging too, as runs of 16-byte
# vectors (on an H200, B = 3 float32 and float64: at 1 GiB 96.7-97.4 % of copy against
# 95.8-96.6 %, at 64 MiB equal, at 1 MiB 80-83 % against 94 %; float16 lost 0.6-1.3 points at
# 1 GiB, uint8 5)
ROWS_STAGED_S2D = True
ROWS_STAGED_S2D_ABOVE = 64 * 2 ** 20
# B = 4 chunks of 8-byte pieces (32 bytes) moved whole by one invocation, their 16-byte halves
# exchanged within lane pairs by subgroup shuffles (PAIRED in the shader), where the device has
# the shuffles: whether the path is taken, its invocations per workgroup (on an H200, every
# element size, operator and order: 93.8-96.5 % of the best copy at 64 MiB and 95.9-97.5 % at
# 1 GiB, against 91.3-95.8 and 91.6-94.7 % with 4-byte pieces; 2 or 4 chunks per invocation lost
# 1-4 points, workgroups of 256 about a point, 16-byte pieces exchanged within groups of four
# 0.1-1.3 points; through the shared-memory staging of B = 3, as runs of 16-byte vectors,
# depth-to-space lost 0.4-0.7 points at 1 GiB and space-to-depth moved by -1.9 to +0.7)
ROWS_PAIRED = True
ROWS_PAIRED_LOCAL = 128
# Space-to-depth with B = 3 or 4 (where not staged) takes a channel's input rows in block-row
# order (BLOCK_ROW_MAJOR in the shader) from ROWS_BLOCK_ROW_MAJOR_FROM bytes of input in
# COLUMN_ROW_DEPTH order, above ROWS_BLOCK_ROW_MAJOR_DCR_ABOVE in DEPTH_COLUMN_ROW order: the output
# rows written at once then lie in B planes instead of B^2 (see _block_row_major).
ROWS_BLOCK_ROW_MAJOR = True
ROWS_BLOCK_ROW_MAJOR_FROM = 64 * 2 ** 20
ROWS_BLOCK_ROW_MAJOR_DCR_ABOVE = 256 * 2 ** 20
# Channel-last COLUMN_ROW_DEPTH through shared-memory tiles of space-side rows (_staged): whether
# the path is taken where it measured faster (_staged_wins), the tile's size and its invocations;
# with an odd B, tiles wide enough for STAGED_FILL units an invocation (on an H200 uint8 B = 3
# space-to-depth 66 % of copy with one, against 54 % with 2 KiB tiles that left half the
# invocations idle, 62 / 49 % with 2 / 3; with an even B it lost 2 points); with an even B and
# 16-byte vectors, words rotated between tile and memory (uint8 B = 4 space-to-depth 82 % against
# 79 %, float16 B = 4 depth-to-space 90 / 91 % against 87 / 88 %; the same rotation lost 7 points
# with an odd B, and 1-8 in move_tiled)
STAGED = True
STAGED_TILE_BYTES = 2048
STAGED_LOCAL = 64
STAGED_FILL = 1
STAGED_ROTATE = True
# Channel-last tiles gathered from shared memory (_tiled): whether the path is taken where it
# measured faster (_tiles_win), the tile's size and its invocations
TILED = True
TILED_BYTES = 2048
TILED_LOCAL = 64
TILED_MAX_BYTES = 16384     # Vulkan's least maxComputeSharedMemorySize
# Depth-to-space of 4-byte elements whose depth-side pixels span 2^k >= 32 words: each pixel's
# 16-byte vectors swizzled in the tile (an XOR of their place in a 128-byte block with the pixel's
# index), so that gathers at the same place of 8 neighbouring pixels meet 8 different banks (on an
# H200 float32 B = 4 COLUMN_ROW_DEPTH 91 % of copy against 86 %; float64 B = 2 / 4 lost 4 points,
# and 4 or 8 free words after each pixel instead lost 10)
TILED_SWIZZLE = True
# Channel-last depth-to-space through row segments of narrow pixels (_row_segments), the orders
# that take it
ROW_SEGMENTS = (DepthSpaceOrder.DEPTH_COLUMN_ROW, DepthSpaceOrder.COLUMN_ROW_DEPTH)
# Channel-last 1- and 2-byte elements, a depth-side pixel per invocation rearranged in registers
# and stored through its subgroup's slice of shared memory (_lanes): whether the path is taken
# where _lanes_wins says so, the largest depth-side pixel it takes (its words are held in
# registers), its invocations
LANES = True
LANES_MAX_PIXEL_BYTES = 160
LANES_LOCAL = 128
# Channel-last DEPTH_COLUMN_ROW depth-to-space through the direct kernel (move_dcr): invocations
# in the input's order (loads in memory order, stores in runs of a block row) where
# _dcr_input_order says so, else in the output's (stores in memory order, loads gathered)
DCR_INPUT_ORDER = True
S2D_INPUT_ORDER = True


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


def _paired(capabilities: Optional[Capabilities]) -> bool:
    """Whether the rows kernel may pair invocations through subgroup shuffles: a device with them,
    whose subgroups (2 invocations or more) fill ROWS_PAIRED_LOCAL whole."""
    return (ROWS_PAIRED and capabilities is not None and capabilities.has(SUBGROUP_SHUFFLE)
            and capabilities.subgroup_size >= 2 and ROWS_PAIRED_LOCAL % capabilities.subgroup_size == 0)


def _pixel_strides(strides) -> tuple:
    """The N, H and W element strides of a 4-D tensor (the channel-last path's pixel strides)."""
    return strides[0], strides[2], strides[3]


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
    def _order(self) -> DepthSpaceOrder:
        return DepthSpaceOrder.DEPTH_COLUMN_ROW   # the non-1 operators (spec 3.1)

    def output_sizes(self, input_sizes) -> tuple:
        n, c, h, w = input_sizes
        b = self.block_size
        if self.depth_to_space:
            return (n, c // (b * b), h * b, w * b)
        return (n, c * b * b, h // b, w // b)

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
        b = self.block_size
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)):
            raise TypeError(f"{op}: block_size must be an integer, got {b!r}")
        if b < 1:                                                                  # 5.2 rule 4
            raise ValidationError(f"{op}: BlockSize is {b}; it must be at least 1.")
        if b > 0xFFFFFFFF:
            raise ValidationError(f"{op}: BlockSize {b} does not fit a UINT.")
        if not isinstance(getattr(self, "order", DepthSpaceOrder.DEPTH_COLUMN_ROW), DepthSpaceOrder):            # 5.2 rule 5
            raise ValidationError(f"{op}: Order is {self.order!r}; it must be "
                                  f"DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW (0) or _COLUMN_ROW_DEPTH (1).")
        n, c, h, w = self.input_tensor.sizes
        if self.depth_to_space:                                                    # 5.2 rule 6
            if c % (b * b):
                inp.fail(f"has {c} channels, which is not divisible by BlockSize^2 = {b * b}.")
            why = "{N, C/(BlockSize^2), H*BlockSize, W*BlockSize}"
        else:                                                                      # 5.2 rule 7
            if h % b or w % b:
                inp.fail(f"has height {h} and width {w}; both must be divisible by BlockSize {b}.")
            why = "{N, C*BlockSize^2, H/BlockSize, W/BlockSize}"
        out.sizes_equal(self.output_sizes(self.input_tensor.sizes), why)

    def kernel(self, capabilities: Optional[Capabilities] = None) -> Kernel:
        """The shader variant for this description on a device with these capabilities (None: the
        portable variants only). A pure function of the two."""
        return self._rows_kernel(capabilities) or self._nhwc_kernel() or self._element_kernel(capabilities)

    def _sides(self) -> tuple:
        """(depth side, space side): the input and the output in the operator's direction."""
        inp, out = self.input_tensor, self.output_tensor
        return (inp, out) if self.depth_to_space else (out, inp)

    def _rows_kernel(self, capabilities: Optional[Capabilities] = None) -> Optional[Kernel]:
        """The bandwidth path (dmlvk/shaders/depth_space_rows.comp), or None when the layout does not
        allow it: both tensors need a unit W stride, and the depth-side tensor's rows must split
        into aligned pieces of K elements (4 or 8 bytes) whose BlockSize-wide interleave forms
        aligned chunks of the space-side rows: 16 or 32 bytes where the block size allows, else
        (B = 3, 5, 6, 7) chunks of under 8 words moved as 8- or 4-byte vectors. With B = 4, 8-byte
        pieces where the device can pair invocations (_paired)."""
        b, eb = self.block_size, self.input_tensor.element_bytes
        depth, space = self._sides()
        ss, ds = space.effective_strides, depth.effective_strides
        n, cs, hs, ws = space.sizes
        if ss[3] != 1 or ds[3] != 1:
            return None

        def fits(k):
            return (ws // b) % k == 0 and all(st % (k * b) == 0 for st in ss[:3]) and all(st % k == 0 for st in ds[:3])

        paired = b == 4 and eb <= 8 and fits(8 // eb) and _paired(capabilities)
        k = 8 // eb if paired else max(16, b * eb) // (b * eb)
        if not (k * b * eb in (16, 32) and k * eb in (4, 8) and fits(k)):
            k = next((pb // eb for pb in (8, 4) if pb % eb == 0 and pb // 4 * b < 8 and fits(pb // eb)), None)
            if k is None:
                return None
        cpr = ws // (k * b)
        total = n * cs * hs * cpr
        chunks = ROWS_CHUNKS
        cw = k * b * eb // 4                                # chunk words
        cv = 4 if cw % 4 == 0 else 2 if cw % 2 == 0 else 1  # words per vector of it
        # 32-byte chunks move in 16-byte halves, or whole where paired; chunks that are not
        # 16-byte vectors are staged in shared memory: depth-to-space's, and space-to-depth's of
        # 4- and 8-byte elements from a large packed input
        flat = ROWS_FLAT and tuple(ss) == packed_strides(space.sizes)
        staged = cv < 4 and (self.depth_to_space or (ROWS_STAGED_S2D and eb >= 4 and flat
                                                     and space.total_bytes > ROWS_STAGED_S2D_ABOVE))
        if staged or paired:
            chunks = 1
        row_major = not staged and self._block_row_major()
        items = total * (2 if cw == 8 and not paired else 1)
        return Kernel(
            shader="depth_space_rows",
            spec=(eb, b, int(self.depth_to_space), int(self._order), k, chunks, int(staged),
                  int(staged and ROWS_SUBGROUP_STAGED),
                  int(staged and flat), int(row_major)),
            push=tuple(ss[:3]) + (0,) + tuple(ds[:3]) + (0, cpr, hs, cs, total),
            count=-(-items // chunks), slots=(0, 1),
            local_size=ROWS_STAGED_LOCAL if staged else ROWS_PAIRED_LOCAL if paired else ROWS_LOCAL,
            defines=(("PAIRED", 1),) if paired else ())

    def _block_row_major(self) -> bool:
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
        if self.depth_to_space or self.block_size not in (3, 4) or not ROWS_BLOCK_ROW_MAJOR:
            return False
        nbytes = self.input_tensor.total_bytes
        if self._order == DepthSpaceOrder.COLUMN_ROW_DEPTH:
            return nbytes >= ROWS_BLOCK_ROW_MAJOR_FROM
        return nbytes > ROWS_BLOCK_ROW_MAJOR_DCR_ABOVE

    def _nhwc_kernel(self) -> Optional[Kernel]:
        """The channel-last path (dmlvk/shaders/depth_space_nhwc.comp), or None: both tensors must
        have unit C stride (NHWC, packed or with gaps between pixels, rows or images), the output
        no overlap, and each output pixel's channels must split into whole, aligned 16-, 8- or
        4-byte vectors: in DEPTH_COLUMN_ROW order also the contiguous input runs they are copied
        from, which span BLOCK pixels when the space side's pixels abut (a depth-to-space vector may
        then span output pixels)."""
        inp, out = self.input_tensor, self.output_tensor
        eb, b = inp.element_bytes, self.block_size
        ist, ost = inp.effective_strides, out.effective_strides
        if ist[1] != 1 or ost[1] != 1 or nested_order(out.sizes, ost) is None:
            return None
        n, oc, oh, ow = out.sizes
        space = self._sides()[1]
        packed_w = space.effective_strides[3] == space.sizes[1]     # the space side's pixels abut
        need = [st * eb for st in _pixel_strides(ost)]
        seg = self._row_segments(ist, ost, packed_w) or self._lanes()
        if seg is not None:
            return seg
        if self._order == DepthSpaceOrder.DEPTH_COLUMN_ROW:
            # contiguous runs: the channels of a block position; with abutting space-side pixels,
            # a block row's (a vector may then span output pixels, in depth-to-space). A run then
            # starts at every BLOCK-th space-side pixel, so the space side's W stride need only
            # align BLOCK pixels.
            run = (oc if self.depth_to_space else inp.sizes[1]) * eb * (b if packed_w else 1)
            need += [run] + [st * eb for st in _pixel_strides(ist)]
            if packed_w:
                need[2 if self.depth_to_space else 6] *= b
            if not (self.depth_to_space and packed_w):
                need.append(oc * eb)
        else:
            staged = self._staged(packed_w)
            if staged is not None:
                return staged
            need.append(oc * eb)
        vec = _widest_vector(need, eb)
        if TILED and self._tiles_win(packed_w, vec):
            tiled = self._tiled()
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
        blocks = (self._order != DepthSpaceOrder.DEPTH_COLUMN_ROW and self.depth_to_space
                  and (eb == 1 or b == 2 or odd_halves) and all(st * eb % vec == 0 for st in _pixel_strides(ist)))
        if blocks and eb <= 2 and b % 2:
            vec = 4
        total = n * oh * ow * oc * eb // vec
        if blocks:
            total //= b * b
        return self._nhwc_launch(vec, int(blocks), 0, total, in_order=not blocks and self._dcr_input_order())

    def _nhwc_launch(self, vec: int, blocks: int, seg: int, count: int, tile: Optional[_Tile] = None,
                     local_size=256, in_order: bool = False) -> Kernel:
        """tile: move_staged's or move_tiled's tile (_Tile), none for the other kernels; in_order:
        move_dcr's invocations in the input's order (IN_ORDER)."""
        inp, out = self.input_tensor, self.output_tensor
        n, oc, oh, ow = out.sizes
        _, ic, ih, iw = inp.sizes
        t = tile or _Tile()
        return Kernel(shader="depth_space_nhwc",
                      spec=(inp.element_bytes, self.block_size, int(self.depth_to_space), int(self._order), vec,
                            blocks, seg, t.words, t.unit_bytes, t.loads, t.unit_loads, int(t.depth_tile),
                            int(t.rotate), t.swizzle, int(in_order)),
                      push=(n, oh, ow, oc, n, ih, iw, ic) + _pixel_strides(out.effective_strides) + (t.pixels,)
                      + _pixel_strides(inp.effective_strides) + (t.pitch,),
                      count=count, slots=(0, 1), local_size=local_size)

    def _tiled(self) -> Optional[Kernel]:
        """Channel-last depth/space of any element size, order and block size > 1 through
        shared-memory tiles (move_tiled): XT depth-side pixels of a row and their BLOCK space-side
        row segments, about TILED_BYTES (a whole number of vectors' worth of pixels, up to
        TILED_MAX_BYTES); both sides move as whole vectors, neighbouring invocations on
        neighbouring vectors. None where the vectors would not be whole and aligned."""
        eb, b = self.input_tensor.element_bytes, self.block_size
        if not TILED or b < 2:
            return None
        depth, space = self._sides()
        dst, sst = depth.effective_strides, space.effective_strides
        n, cd, hd, wd = depth.sizes
        cs = space.sizes[1]
        # tiles of a multiple of `grain` pixels: rows of whole 16-byte vectors where possible
        grain = next(g for g in (1, 2, 4, 8, 16) if g * cs * eb % 16 == 0)
        xt = max(grain, TILED_BYTES // (cd * eb) // grain * grain)
        if xt * cd * eb > TILED_MAX_BYTES:
            return None
        xt = min(xt, -(-wd // grain) * grain)
        need = [dst[0], dst[2], sst[0], sst[2]]
        for c, ps, per in ((cd, dst[3], 1), (cs, sst[3], b)):
            # a side whose pixels abut moves as rows of pixels; else pixel by pixel
            need += [xt * per * c, wd * per * c] if ps == c else [c, ps]
        vec = _widest_vector([x * eb for x in need], eb)
        if vec is None:
            return None
        if self._order == DepthSpaceOrder.DEPTH_COLUMN_ROW:
            unit = min(vec, cs * eb & -(cs * eb))     # the largest power of two dividing a pixel's bytes
        else:
            unit = eb
        rows = 1 if self.depth_to_space else b         # of the source side, in the tile
        row_words = xt * cd * eb // 4 // rows
        loads = -(-rows * row_words * 4 // vec // TILED_LOCAL)
        count = n * hd * -(-wd // xt) * TILED_LOCAL
        # depth-to-space of 4-byte elements from pixels of 2^k >= 32 words: the tile swizzled
        # (SWIZZLE = k)
        pixel_words = cd * eb // 4
        swizzle = (pixel_words.bit_length() - 1 if TILED_SWIZZLE and self.depth_to_space and eb == 4
                   and vec == 16 and pixel_words >= 32 and pixel_words & (pixel_words - 1) == 0 else 0)
        tile = _Tile(xt, row_words, rows * row_words, unit, loads, swizzle=swizzle)
        return self._nhwc_launch(vec, 3, 0, count, tile, TILED_LOCAL)

    def _tiles_win(self, packed_w: bool, vec: Optional[int]) -> bool:
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
        eb, b = self.input_tensor.element_bytes, self.block_size
        if vec is None or (self.depth_to_space and not packed_w):
            return True
        if self._order == DepthSpaceOrder.DEPTH_COLUMN_ROW:
            return vec < 16
        return self.depth_to_space and eb >= 4 and (b > 2 or eb == 8)

    def _staged(self, packed_w) -> Optional[Kernel]:
        """COLUMN_ROW_DEPTH of 1- and 2-byte elements with abutting space-side pixels, through
        shared memory (move_staged): tiles of XT depth-side pixels of a row, about
        STAGED_TILE_BYTES, at least one pixel, up to TILED_MAX_BYTES in all (with an odd B, whose
        units are not whole vectors, the depth side's pixels go through the tile too); or None
        where the vectors would not be whole and aligned, and where _staged_wins says no."""
        eb, b = self.input_tensor.element_bytes, self.block_size
        depth, space = self._sides()
        dst, sst = depth.effective_strides, space.effective_strides
        cs = space.sizes[1]
        depth_tile = b % 2         # odd B: units of BB words are not whole vectors
        cd = cs * b * b
        if (not STAGED or not self._staged_wins() or b < 2 or not packed_w or cs * eb % 4
                or cd * eb * (1 + depth_tile) > TILED_MAX_BYTES):
            return None
        n, _, hd, wd = depth.sizes
        # a power of two of pixels: about STAGED_TILE_BYTES, at least one; with an odd B at least
        # STAGED_FILL units (a space-side word's channels) an invocation
        xt = 1 << max(0, (STAGED_TILE_BYTES // (cd * eb)).bit_length() - 1)
        if STAGED_FILL and depth_tile:
            fill = -(-STAGED_LOCAL * STAGED_FILL * 4 // (cs * eb))
            if (b * fill * cs + fill * cd) * eb + 4 * b <= TILED_MAX_BYTES:
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
        rotate = STAGED_ROTATE and not depth_tile and vec == 16
        pitch = row_words if rotate else row_words + 1 - row_words % 2
        loads = -(-b * row_words * 4 // vec // STAGED_LOCAL)      # the depth side's tile holds as many
        unit_loads = -(-xt * cs * eb // 4 // STAGED_LOCAL)
        words = b * pitch + depth_tile * xt * cd * eb // 4
        tile = _Tile(xt, pitch, words, 4, loads, unit_loads, bool(depth_tile), rotate)
        return self._nhwc_launch(vec, 2, 0, n * hd * -(-wd // xt) * STAGED_LOCAL, tile, STAGED_LOCAL)

    def _staged_wins(self) -> bool:
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
        eb, b = self.input_tensor.element_bytes, self.block_size
        if eb == 1:
            return b % 2 == 0 or not self.depth_to_space
        return eb == 2 and (b == 2 or (b == 4 and self.depth_to_space))

    def _dcr_input_order(self) -> bool:
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
        eb = self.input_tensor.element_bytes
        if not self.depth_to_space:
            # space-to-depth: where each block row's run of B pixels is whole 32-byte sectors, 64
            # bytes or more, or with B = 2
            space, b = self.input_tensor, self.block_size
            run = b * space.sizes[1] * eb
            return (S2D_INPUT_ORDER and self._order == DepthSpaceOrder.DEPTH_COLUMN_ROW
                    and space.effective_strides[3] == space.sizes[1] and run % 32 == 0 and (run >= 64 or b == 2))
        return (DCR_INPUT_ORDER and self.depth_to_space and self._order == DepthSpaceOrder.DEPTH_COLUMN_ROW
                and eb >= 2 and not (eb == 8 and self.block_size == 2))

    def _lanes(self) -> Optional[Kernel]:
        """dmlvk/shaders/depth_space_lanes.comp, where _lanes_wins says so: 1- and 2-byte elements
        in tensors whose pixels and rows abut, one depth-side pixel of at most
        LANES_MAX_PIXEL_BYTES an invocation, whose BLOCK row segments are whole 8-byte vectors, and
        images and rows 8-byte aligned; else None."""
        eb, b = self.input_tensor.element_bytes, self.block_size
        depth, space = self._sides()
        dst, sst = depth.effective_strides, space.effective_strides
        n, cd, hd, wd = depth.sizes
        cs = space.sizes[1]
        pixel = cd * eb
        if (not LANES or not self._lanes_wins() or b * cs * eb % 8 or pixel > LANES_MAX_PIXEL_BYTES
                or dst[3] != cd or sst[3] != cs or any(st * eb % 8 for st in (dst[0], dst[2], sst[0], sst[2]))):
            return None
        local = LANES_LOCAL
        while local > 32 and local * pixel > TILED_MAX_BYTES:
            local //= 2
        segs = -(-wd // local)
        return Kernel(shader="depth_space_lanes",
                      spec=(eb, b, int(self.depth_to_space), int(self._order), cs, local * pixel // 8),
                      push=(n, hd, wd, segs, dst[0], dst[2], 0, 0, sst[0], sst[2], 0, 0),
                      count=n * hd * segs * local, slots=(0, 1), local_size=local)

    def _lanes_wins(self) -> bool:
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
        eb, b, crd = self.input_tensor.element_bytes, self.block_size, self._order == DepthSpaceOrder.COLUMN_ROW_DEPTH
        run = b * self._sides()[1].sizes[1] * eb           # DEPTH_COLUMN_ROW: a block row's bytes
        if eb == 1:
            if not self.depth_to_space:
                return b == 3 or (b == 4 and crd)
            return (b == 3 and crd) or (b == 2 and not crd and run >= 16)
        return eb == 2 and b == 3 and crd and not self.depth_to_space

    def _row_segments(self, ist, ost, packed_w) -> Optional[Kernel]:
        """Depth-to-space into abutting output pixels whose BLOCK-pixel row segments are 16-byte
        vectors: move_blocks with SEG, one input pixel (BLOCK 16-byte vectors) per invocation, its
        output as BLOCK whole vector stores, one per row; or None. On an H200, uint8 B = 4 with 4
        channels: COLUMN_ROW_DEPTH 94 % of copy (53 % with 4-byte pixel vectors), DEPTH_COLUMN_ROW
        94 % (81 % moving the runs one by one); wider segments measured slower than the other
        paths (float16 B = 4: 60 % against 88 %; uint8 B = 3: 53 % against 78 %)."""
        eb, b, cs = self.input_tensor.element_bytes, self.block_size, self.output_tensor.sizes[1]
        if not (self._order in ROW_SEGMENTS and self.depth_to_space and packed_w and b * cs * eb == 16):
            return None
        if any(st * eb % 16 for st in (ist[0], ist[2], ist[3], ost[0], ost[2])):
            return None
        n, _, h, w = self.input_tensor.sizes
        return self._nhwc_launch(16, 1, cs, n * h * w)

    def _element_kernel(self, capabilities: Optional[Capabilities]) -> Kernel:
        """The general path (dmlvk/shaders/depth_space.comp): any strides DirectML allows. Its variants:
        MODE 0 whole 4/8-byte elements; MODE 1 sub-word elements, nested output layout, one output
        word per invocation; MODE 2 sub-word elements in any other layout, atomics on words (the
        portable fallback); MODE 3 the same with 8/16-bit stores, where the device has 8/16-bit
        storage."""
        inp, out = self.input_tensor, self.output_tensor
        eb = inp.element_bytes
        out_strides = out.effective_strides
        order = nested_order(out.sizes, out_strides)
        defines = ()
        if eb >= 4:
            mode, count = 0, out.element_count
        elif order is not None and -(-element_extent_bytes(out) // 4) <= 2 * out.element_count + 64:
            # one invocation per output word, as long as the words are not mostly gaps (the
            # work launched stays bounded by the elements, whatever the strides reach)
            mode, count = 1, -(-element_extent_bytes(out) // 4)
        elif capabilities is not None and (capabilities.storage_8bit if eb == 1 else capabilities.storage_16bit):
            mode, count, defines = 3, out.element_count, (("SMALL_STORE_BITS", 8 * eb),)
        else:
            mode, count = 2, out.element_count
        dims = 0
        for j, d in enumerate(order or (0, 1, 2, 3)):
            dims |= d << (2 * j)
        space_c = out.sizes[1] if self.depth_to_space else inp.sizes[1]
        return Kernel(
            shader="depth_space",
            spec=(eb, self.block_size, int(self.depth_to_space), int(self._order), mode),
            push=tuple(inp.effective_strides) + tuple(out.sizes) + tuple(out_strides) + (dims, space_c),
            count=count, slots=(0, 1), local_size=128, defines=defines)

    def _compile(self, device: Device) -> CompiledOperator:
        self.validate(device.feature_level, device.debug)
        device.check_data_types(self.operator_type.dml_name,
                                (("Input", self.input_tensor), ("Output", self.output_tensor)))
        op = CompiledOperator(device, self, [self.input_tensor], [self.output_tensor],
                              [self.kernel(device.capabilities)])
        op.operator_name = self.operator_type.dml_name
        return op


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


@dataclass(frozen=True)
class DepthToSpace1Desc(_DepthSpaceDesc):
    """DML_DEPTH_TO_SPACE1_OPERATOR_DESC (FL 2_1)."""
    input_tensor: Optional[TensorDesc]
    output_tensor: Optional[TensorDesc]
    block_size: int
    order: DepthSpaceOrder
    operator_type = OperatorType.DEPTH_TO_SPACE1
    depth_to_space = True
    min_level = FeatureLevel.FL_2_1

    def __post_init__(self):
        object.__setattr__(self, "order", _order_field(self.order))

    @property
    def _order(self):
        return self.order


@dataclass(frozen=True)
class SpaceToDepth1Desc(_DepthSpaceDesc):
    """DML_SPACE_TO_DEPTH1_OPERATOR_DESC (FL 2_1)."""
    input_tensor: Optional[TensorDesc]
    output_tensor: Optional[TensorDesc]
    block_size: int
    order: DepthSpaceOrder
    operator_type = OperatorType.SPACE_TO_DEPTH1
    depth_to_space = False
    min_level = FeatureLevel.FL_2_1

    def __post_init__(self):
        object.__setattr__(self, "order", _order_field(self.order))

    @property
    def _order(self):
        return self.order


# ---- numpy-level API --------------------------------------------------------------------------

def _run(desc_cls, x, block_size, order, device, d2s: bool, out=None):
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)):
        raise TypeError(f"block_size must be an integer, got {block_size!r}")
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, got {block_size}")
    order = DepthSpaceOrder.parse(order)
    on_device, device = device_for(x, device, "x")
    if not on_device:
        x = as_host_array(x, "x")
    if x.ndim != 4:
        raise ValueError(f"x must be 4-D (N, C, H, W), got shape {x.shape}")
    n, c, h, w = x.shape
    b = int(block_size)
    if d2s and c % (b * b):
        raise ValueError(f"x has {c} channels, not divisible by block_size**2 = {b * b}")
    if not d2s and (h % b or w % b):
        raise ValueError(f"x's height {h} and width {w} must be divisible by block_size {b}")
    out_shape = (n, c // (b * b), h * b, w * b) if d2s else (n, c * b * b, h // b, w // b)
    check_out(out, out_shape, x.dtype, DeviceArray if on_device else np.ndarray)
    if x.size == 0:
        if n == 0:        # an empty batch: an empty result, as numpy and torch give
            return out if out is not None else (empty(out_shape, x.dtype, device) if on_device
                                                else np.empty(out_shape, x.dtype))
        raise ValueError(f"x has an empty dimension: shape {x.shape}")
    # The operator moves bits: a dtype DirectML lacks (bool, bfloat16, float8, complex64...) travels
    # as the unsigned integer of its width.
    wire = x.dtype
    if x.dtype.itemsize in (1, 2, 4, 8) and x.dtype.kind != "O":
        try:
            DataType.from_numpy(x.dtype)
        except TypeError:
            wire = np.dtype(f"u{x.itemsize}")
    moved = x if on_device or wire == x.dtype else x.view(wire)

    def describe():
        in_desc = TensorDesc(DataType.from_numpy(wire), x.shape) if on_device else array_layout(moved, "x")
        return desc_cls(in_desc, TensorDesc(in_desc.data_type, out_shape), b, order)

    # Keyed by the call's signature, so a repeated call builds and validates nothing.
    op = device.operator(describe, key=(desc_cls, x.shape, wire, on_device or moved.strides, b, order))
    if on_device:         # Buffer to Buffer: no host round trip
        result = out if out is not None else empty(out_shape, x.dtype, device)
        op.execute([x.buffer], [result.buffer])
        return result
    in_desc, out_desc = op.input_descs[0], op.output_descs[0]
    out_bytes = np.empty(out_desc.total_bytes, np.uint8)     # whole words, as the binding needs
    op._execute_bindings([array_bytes(moved, in_desc), out_bytes])
    return into_out(out, out_bytes[:out_desc.element_count * x.itemsize].view(x.dtype).reshape(out_shape))


def depth_to_space(x, block_size: int, order="DCR", *, device: Optional[Device] = None,
                   out: Optional[np.ndarray] = None) -> np.ndarray:
    """DEPTH_TO_SPACE1 of a 4-D NCHW array: (N, C, H, W) -> (N, C/b^2, H*b, W*b).
    order: 'DCR' (DEPTH_COLUMN_ROW, ONNX's default) or 'CRD' (COLUMN_ROW_DEPTH, pixel_shuffle).
    x: anything np.asarray takes, of any 1/2/4/8-byte dtype; out: a preallocated result array."""
    return _run(DepthToSpace1Desc, x, block_size, order, device, True, out)


def space_to_depth(x, block_size: int, order="DCR", *, device: Optional[Device] = None,
                   out: Optional[np.ndarray] = None) -> np.ndarray:
    """SPACE_TO_DEPTH1 of a 4-D NCHW array: (N, C, H, W) -> (N, C*b^2, H/b, W/b); x and out as for
    depth_to_space."""
    return _run(SpaceToDepth1Desc, x, block_size, order, device, False, out)
