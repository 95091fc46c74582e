#version 450
// DEPTH_TO_SPACE(1) / SPACE_TO_DEPTH(1) for channel-last tensors: both with unit C stride, packed
// NHWC or with gaps between pixels (see dmlvk/ops/depth_space.py, _nhwc_kernel). Every load and
// store is a whole, aligned VEC_BYTES vector (16, 8 or 4 bytes) of a pixel's channels, or of a
// run of abutting pixels; see move_dcr, move_crd, move_blocks, move_staged and move_tiled.

#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ELEM_BYTES = 4;
layout(constant_id = 2) const uint BLOCK = 2;
layout(constant_id = 3) const uint D2S = 1;      // 1: depth-to-space, 0: space-to-depth
layout(constant_id = 4) const uint ORDER = 0;    // 0: DEPTH_COLUMN_ROW (DCR), 1: COLUMN_ROW_DEPTH (CRD)
layout(constant_id = 5) const uint VEC_BYTES = 16;
layout(constant_id = 6) const uint BLOCKS = 0;   // 1 move_blocks (depth-to-space), 2 move_staged, 3 move_tiled
// move_dcr: 1, invocation v moves the v-th vector of the input (loads in memory order, stores in
// runs of a block row), 0 the v-th of the output
layout(constant_id = 15) const uint IN_ORDER = 0;

layout(std430, binding = 0) restrict readonly buffer Src1 { uint src1[]; };
layout(std430, binding = 0) restrict readonly buffer Src2 { uvec2 src2[]; };
layout(std430, binding = 0) restrict readonly buffer Src4 { uvec4 src4[]; };
layout(std430, binding = 1) restrict writeonly buffer Dst1 { uint dst1[]; };
layout(std430, binding = 1) restrict writeonly buffer Dst2 { uvec2 dst2[]; };
layout(std430, binding = 1) restrict writeonly buffer Dst4 { uvec4 dst4[]; };

layout(push_constant) uniform Push {
    uvec4 out_dims;        // N, H, W, C of the output
    uvec4 in_dims;         // N, H, W, C of the input
    uvec3 out_strides;     // element strides N, H, W of the output (C stride is 1)
    uint tile_pixels;      // move_staged / move_tiled: depth-side pixels of a tile (XT)
    uvec3 in_strides;      // element strides N, H, W of the input (C stride is 1)
    uint tile_pitch;       // move_staged / move_tiled: a tile row's pitch in words
    uint items;
    uint first;
} p;

const uint VEC_ELEMS = VEC_BYTES / ELEM_BYTES;
const uint VEC_WORDS = VEC_BYTES / 4;

// One whole vector from src vector `from` to dst vector `to` (indices in VEC_BYTES vectors).
void copy_vector(uint to, uint from) {
    if (VEC_BYTES == 16) dst4[to] = src4[from];
    else if (VEC_BYTES == 8) dst2[to] = src2[from];
    else dst1[to] = src1[from];
}

// The input element (index in elements) holding output channel c of output pixel (n, y, x), in
// DEPTH_COLUMN_ROW order.
uint source_dcr(uint n, uint y, uint x, uint c) {
    uint iy, ix, ic;
    if (D2S != 0) {
        iy = y / BLOCK; ix = x / BLOCK;
        ic = ((y % BLOCK) * BLOCK + x % BLOCK) * p.out_dims.w + c;
    } else {
        uint blk = c / p.in_dims.w;
        iy = y * BLOCK + blk / BLOCK; ix = x * BLOCK + blk % BLOCK;
        ic = c % p.in_dims.w;
    }
    return n * p.in_strides.x + iy * p.in_strides.y + ix * p.in_strides.z + ic;
}

// DEPTH_COLUMN_ROW: invocation v writes the v-th vector of the output's rows. A vector covers
// VEC_ELEMS elements of a row's pixels x channels; it lies in one pixel, or (depth-to-space with
// output pixels packed along W) in a run of BLOCK pixels that one input pixel fills. Its source is
// one contiguous, aligned vector.
void move_dcr(uint v) {
    if (IN_ORDER != 0) {
        // The v-th vector of the input's rows: channels ic.. of input pixel (n, iy, ix).
        uint in_row = p.in_dims.z * p.in_dims.w / VEC_ELEMS;
        uint r = v / in_row, e = (v % in_row) * VEC_ELEMS;
        uint ix = e / p.in_dims.w, ic = e % p.in_dims.w;
        uint iy = r % p.in_dims.y, in_n = r / p.in_dims.y;
        uint from = (in_n * p.in_strides.x + iy * p.in_strides.y + ix * p.in_strides.z + ic) * ELEM_BYTES / VEC_BYTES;
        uint to;
        if (D2S != 0) {
            // they lie in block row blk / BLOCK from block column blk % BLOCK (the vector stays
            // in one run)
            uint blk = ic / p.out_dims.w, oc = ic % p.out_dims.w;
            to = (in_n * p.out_strides.x + (iy * BLOCK + blk / BLOCK) * p.out_strides.y
                  + (ix * BLOCK + blk % BLOCK) * p.out_strides.z + oc) * ELEM_BYTES / VEC_BYTES;
        } else {
            // at block position blk of output pixel (iy / BLOCK, ix / BLOCK) (a vector spanning
            // input pixels stays in a block row, whose channels are contiguous in the output)
            uint blk = (iy % BLOCK) * BLOCK + ix % BLOCK;
            to = (in_n * p.out_strides.x + (iy / BLOCK) * p.out_strides.y + (ix / BLOCK) * p.out_strides.z
                  + blk * p.in_dims.w + ic) * ELEM_BYTES / VEC_BYTES;
        }
        copy_vector(to, from);
        return;
    }
    uint per_row = p.out_dims.z * p.out_dims.w / VEC_ELEMS;
    uint row = v / per_row, e0 = (v % per_row) * VEC_ELEMS;
    uint x = e0 / p.out_dims.w, c0 = e0 % p.out_dims.w;
    uint y = row % p.out_dims.y, n = row / p.out_dims.y;
    uint o = (n * p.out_strides.x + y * p.out_strides.y + x * p.out_strides.z + c0) * ELEM_BYTES / VEC_BYTES;
    copy_vector(o, source_dcr(n, y, x, c0) * ELEM_BYTES / VEC_BYTES);
}

const uint BB = BLOCK * BLOCK;
const uint EW = ELEM_BYTES >= 4 ? ELEM_BYTES / 4 : 1;     // words per element
const uint EPW = ELEM_BYTES >= 4 ? 1 : 4 / ELEM_BYTES;    // elements per word
const uint EBITS = 8 * ELEM_BYTES;
const uint EMASK = ELEM_BYTES >= 4 ? 0xFFFFFFFFu : (1u << EBITS) - 1u;

// Sub-word element i of a word, moved to element place o of a word, its other bits zero (shifts
// and masks the compiler can merge: fixed i and o make it one shift and one mask, or a byte
// permute).
uint move_element(uint word, uint i, uint o) {
    return ((word >> (i * EBITS)) & EMASK) << (o * EBITS);
}

uvec4 load_vec(uint elem) {
    uint at = elem * ELEM_BYTES / VEC_BYTES;
    if (VEC_BYTES == 16) return src4[at];
    if (VEC_BYTES == 8) return uvec4(src2[at], 0, 0);
    return uvec4(src1[at], 0, 0, 0);
}

void store_vec(uint elem, uint words[4]) {
    uint at = elem * ELEM_BYTES / VEC_BYTES;
    if (VEC_BYTES == 16) dst4[at] = uvec4(words[0], words[1], words[2], words[3]);
    else if (VEC_BYTES == 8) dst2[at] = uvec2(words[0], words[1]);
    else dst1[at] = words[0];
}

// COLUMN_ROW_DEPTH: invocation v writes the v-th vector of the output (one pixel's channels),
// gathering its elements one by one.
void move_crd(uint v) {
    uint per_pixel = p.out_dims.w / VEC_ELEMS;
    uint pix = v / per_pixel, c0 = (v % per_pixel) * VEC_ELEMS;
    uint x = pix % p.out_dims.z, y = (pix / p.out_dims.z) % p.out_dims.y, n = pix / (p.out_dims.z * p.out_dims.y);
    uint words[4] = uint[4](0, 0, 0, 0);
    [[unroll]] for (uint k = 0; k < VEC_ELEMS; ++k) {
        uint c = c0 + k, iy, ix, ic;
        if (D2S != 0) {
            iy = y / BLOCK; ix = x / BLOCK; ic = c * BB + (y % BLOCK) * BLOCK + x % BLOCK;
        } else {
            uint blk = c % BB;
            iy = y * BLOCK + blk / BLOCK; ix = x * BLOCK + blk % BLOCK; ic = c / BB;
        }
        uint e = n * p.in_strides.x + iy * p.in_strides.y + ix * p.in_strides.z + ic;
        if (ELEM_BYTES >= 4) {
            [[unroll]] for (uint w = 0; w < EW; ++w) words[k * EW + w] = src1[e * EW + w];
        } else {
            // (as shifts and masks, space-to-depth of float16 B = 3 / 4 ran at 77 / 91 % of copy on
            // an H200 against 67 / 82 % with bitfield extracts and inserts; depth-to-space B = 3 at
            // 71 % against 77 %)
            if (D2S != 0) {
                uint bits = bitfieldExtract(src1[e / EPW], int((e % EPW) * EBITS), int(EBITS));
                words[k / EPW] = bitfieldInsert(words[k / EPW], bits, int((k % EPW) * EBITS), int(EBITS));
            } else {
                words[k / EPW] |= move_element(src1[e / EPW], e % EPW, k % EPW);
            }
        }
    }
    store_vec(n * p.out_strides.x + y * p.out_strides.y + x * p.out_strides.z + c0, words);
}

// move_blocks moves R channels of a BLOCK x BLOCK block of output pixels: VEC_ELEMS, one vector of
// each pixel, or with SEG all SEG channels, the output then moving as BLOCK row segments of BLOCK
// abutting pixels (pixels narrower than a vector).
layout(constant_id = 7) const uint SEG = 0;
const uint R = SEG != 0 ? SEG : VEC_ELEMS;
const uint MAT_WORDS = BB * R * ELEM_BYTES / 4;
const uint PARTS = SEG != 0 ? BLOCK : BB;          // output runs: row segments, or pixels
const uint PART_WORDS = MAT_WORDS / PARTS;
// The transpose: input (R channels x BB block positions) to output (BB x R).
const uint TR = R, TC = BB;

// The 4 x 4 byte transpose of four words: word i of the result holds byte i of a.x, a.y, a.z, a.w.
uvec4 transpose4x4(uvec4 a) {
    uint t0 = (a.x & 0x00FF00FFu) | ((a.y << 8) & 0xFF00FF00u);     // x.0 y.0 x.2 y.2
    uint t1 = ((a.x >> 8) & 0x00FF00FFu) | (a.y & 0xFF00FF00u);     // x.1 y.1 x.3 y.3
    uint t2 = (a.z & 0x00FF00FFu) | ((a.w << 8) & 0xFF00FF00u);
    uint t3 = ((a.z >> 8) & 0x00FF00FFu) | (a.w & 0xFF00FF00u);
    return uvec4((t0 & 0xFFFFu) | (t2 << 16), (t1 & 0xFFFFu) | (t3 << 16),
                 (t0 >> 16) | (t2 & 0xFFFF0000u), (t1 >> 16) | (t3 & 0xFFFF0000u));
}

// b = the transpose of the TR x TC matrix of elements a (both row-major in words). Sub-word
// elements move in EPW x EPW blocks with word masks and shifts, a few operations a word, where EPW
// divides TR and TC; else element by element.
void transpose(uint a[MAT_WORDS], out uint b[MAT_WORDS]) {
    [[unroll]] for (uint w = 0; w < MAT_WORDS; ++w) b[w] = 0;
    if (ELEM_BYTES >= 4) {
        [[unroll]] for (uint r = 0; r < TR; ++r)
            [[unroll]] for (uint c = 0; c < TC; ++c)
                [[unroll]] for (uint w = 0; w < EW; ++w) b[(c * TR + r) * EW + w] = a[(r * TC + c) * EW + w];
    } else if (TR % EPW == 0 && TC % EPW == 0) {
        uint rw = TR / EPW, cw = TC / EPW;      // words of a row of b, of a row of a
        [[unroll]] for (uint I = 0; I < rw; ++I) {
            [[unroll]] for (uint J = 0; J < cw; ++J) {
                // block (I, J): words a[(I*EPW + i)*cw + J], i < EPW; to b[(J*EPW + i)*rw + I]
                if (EPW == 2) {
                    uint a0 = a[(I * 2) * cw + J], a1 = a[(I * 2 + 1) * cw + J];
                    b[(J * 2) * rw + I] = (a0 & 0xFFFFu) | (a1 << 16);
                    b[(J * 2 + 1) * rw + I] = (a0 >> 16) | (a1 & 0xFFFF0000u);
                } else {
                    uvec4 t = transpose4x4(uvec4(a[(I * 4) * cw + J], a[(I * 4 + 1) * cw + J],
                                                 a[(I * 4 + 2) * cw + J], a[(I * 4 + 3) * cw + J]));
                    [[unroll]] for (uint i = 0; i < 4; ++i) b[(J * 4 + i) * rw + I] = t[i];
                }
            }
        }
    } else {
        [[unroll]] for (uint m = 0; m < TR * TC; ++m) {
            uint src = (m % TR) * TC + m / TR;      // b's element m is a's (m % TR, m / TR)
            b[m / EPW] |= move_element(a[src / EPW], src % EPW, m % EPW);
        }
    }
}

// Words [first, first + count) of m to memory at element `elem`, whole vectors.
void write_run(uint elem, uint first, uint count, uint m[MAT_WORDS]) {
    [[unroll]] for (uint v = 0; v < count / VEC_WORDS; ++v) {
        uint f = first + v * VEC_WORDS;
        store_vec(elem + v * VEC_ELEMS, uint[4](m[f], VEC_WORDS > 1 ? m[f + 1] : 0,
                  VEC_WORDS > 2 ? m[f + 2] : 0, VEC_WORDS > 3 ? m[f + 3] : 0));
    }
}

// Depth-to-space, BLOCKS = 1: invocation v moves R output channels c0.. of a BLOCK x BLOCK block
// of output pixels, whose sources are the contiguous input channels c0*BLOCK^2.. of one input
// pixel: whole vector loads, in COLUMN_ROW_DEPTH order a transpose in registers (DEPTH_COLUMN_ROW
// has the output's order already), whole vector stores, of single pixels or (SEG) of row
// segments. (For space-to-depth the mirror images measured slower on an H200 than move_crd: 51 %
// of copy against 59 % for uint8 B = 2, and with row segments 31 % against 82 % for float16 B = 4.)
void move_blocks(uint v) {
    uint per = p.out_dims.w / R;                         // channel groups of an output pixel
    uint c0 = (v % per) * R, pix = v / per;              // pix: the input pixel
    uint x = pix % p.in_dims.z, y = (pix / p.in_dims.z) % p.in_dims.y, n = pix / (p.in_dims.z * p.in_dims.y);
    uint a[MAT_WORDS], b[MAT_WORDS];
    uint first = n * p.in_strides.x + y * p.in_strides.y + x * p.in_strides.z + c0 * BB;
    [[unroll]] for (uint i = 0; i < MAT_WORDS / VEC_WORDS; ++i) {
        uvec4 q = load_vec(first + i * VEC_ELEMS);
        [[unroll]] for (uint w = 0; w < VEC_WORDS; ++w) a[i * VEC_WORDS + w] = q[w];
    }
    if (ORDER == 0) {
        [[unroll]] for (uint w = 0; w < MAT_WORDS; ++w) b[w] = a[w];
    } else {
        transpose(a, b);
    }
    [[unroll]] for (uint k = 0; k < PARTS; ++k) {
        uint bh = SEG != 0 ? k : k / BLOCK, bw = SEG != 0 ? 0 : k % BLOCK;
        write_run(n * p.out_strides.x + (y * BLOCK + bh) * p.out_strides.y + (x * BLOCK + bw) * p.out_strides.z + c0,
                  k * PART_WORDS, PART_WORDS, b);
    }
}

// move_staged's or move_tiled's tile, in words (1 for the other kernels).
layout(constant_id = 8) const uint TILE_WORDS = 1;
shared uint tile[TILE_WORDS];
// move_staged's and move_tiled's source vectors per invocation (at most), and move_staged's units
layout(constant_id = 10) const uint LOADS = 1;
layout(constant_id = 11) const uint UNIT_LOADS = 1;
layout(constant_id = 12) const uint DEPTH_TILE = 0;     // move_staged: 1, the depth side through the tile too

// Element e of a row of pixels, from the row's first element: `channels` elements a pixel, pixels
// `pixel_stride` apart (whole vectors never span pixels unless the pixels abut).
uint pixel_offset(uint e, uint pixel_stride, uint channels) {
    return pixel_stride == channels ? e : (e / channels) * pixel_stride + e % channels;
}

// The tile's vectors move to and from it as words, 4 to a bank where each invocation takes its
// vector's words in order. With ROTATE (16-byte vectors) each group of 8 neighbouring invocations
// starts at another word of its vector, so that the 32 invocations of a word access fall into 32
// banks, at the cost of selects and an address a word.
layout(constant_id = 13) const uint ROTATE = 0;
// move_tiled with one source row of pixels of 2^SWIZZLE words (SWIZZLE >= 5; 0: off): pixel p's
// 16-byte vectors trade places within their 128-byte blocks (an XOR with p % 8), so that gathers at
// the same place of 8 neighbouring pixels fall into different banks
layout(constant_id = 14) const uint SWIZZLE = 0;

uint swizzle(uint w) {
    return w ^ (((w >> SWIZZLE) & 7u) << 2);
}

uint bank_rotation() {
    return ROTATE != 0 && VEC_WORDS == 4 ? (gl_LocalInvocationID.x >> 3) & 3u : 0u;
}

// q with its words rotated: word w of the result is word (w + r) % 4 of q.
uvec4 rotate_words(uvec4 q, uint r) {
    return r == 0 ? q : r == 1 ? q.yzwx : r == 2 ? q.zwxy : q.wxyz;
}

// `rows` rows of pixels in memory (the first element of row r at first + r * row_stride), row_vecs
// whole vectors each, into the tile from word `at`, rows `pitch` words apart and without the gaps
// between pixels: neighbouring invocations on neighbouring vectors, every load of an invocation in
// flight before the first reaches the tile (at most LOADS an invocation).
void stage_rows(uint first, uint rows, uint row_stride, uint pixel_stride, uint channels, uint row_vecs,
                uint at, uint pitch, bool swizzled) {
    uint L = gl_WorkGroupSize.x, lid = gl_LocalInvocationID.x, rot = bank_rotation();
    uvec4 vecs[LOADS];
    [[unroll]] for (uint k = 0; k < LOADS; ++k) {
        uint i = lid + k * L;
        uint e = (i % row_vecs) * VEC_ELEMS;
        if (i < rows * row_vecs) vecs[k] = load_vec(first + (i / row_vecs) * row_stride + pixel_offset(e, pixel_stride, channels));
    }
    [[unroll]] for (uint k = 0; k < LOADS; ++k) {
        uint i = lid + k * L, w0 = at + (i / row_vecs) * pitch + (i % row_vecs) * VEC_WORDS;
        if (swizzled) w0 = swizzle(w0);
        if (i < rows * row_vecs) {
            uvec4 q = rotate_words(vecs[k], rot);
            [[unroll]] for (uint w = 0; w < VEC_WORDS; ++w) tile[w0 + ((w + rot) & 3u)] = q[w];
        }
    }
}

// stage_rows the other way round: the tile's rows to memory, whole vectors. With `all_at_once`
// (at most LOADS vectors an invocation) every tile read of an invocation comes before its first
// store: on an H200 faster for move_staged's depth-side tile (uint8 B = 3 space-to-depth 70 % of
// copy against 66 %), slower for its space-side rows (uint8 B = 2 depth-to-space 90 % against 97 %).
void unstage_rows(uint first, uint rows, uint row_stride, uint pixel_stride, uint channels, uint row_vecs,
                  uint at, uint pitch, bool all_at_once) {
    uint L = gl_WorkGroupSize.x, lid = gl_LocalInvocationID.x, rot = bank_rotation();
    if (all_at_once) {
        uvec4 vecs[LOADS];
        [[unroll]] for (uint k = 0; k < LOADS; ++k) {
            uint i = lid + k * L, f = at + (i / row_vecs) * pitch + (i % row_vecs) * VEC_WORDS;
            vecs[k] = uvec4(0);
            if (i < rows * row_vecs) {
                [[unroll]] for (uint w = 0; w < VEC_WORDS; ++w) vecs[k][w] = tile[f + ((w + rot) & 3u)];
            }
        }
        [[unroll]] for (uint k = 0; k < LOADS; ++k) {
            uint i = lid + k * L;
            uvec4 q = rotate_words(vecs[k], (4u - rot) & 3u);
            if (i < rows * row_vecs)
                store_vec(first + (i / row_vecs) * row_stride + pixel_offset((i % row_vecs) * VEC_ELEMS, pixel_stride, channels),
                          uint[4](q.x, q.y, q.z, q.w));
        }
        return;
    }
    for (uint i = lid; i < rows * row_vecs; i += L) {
        uint r = i / row_vecs, j = i % row_vecs, f = at + r * pitch + j * VEC_WORDS;
        uvec4 q = uvec4(0);
        [[unroll]] for (uint w = 0; w < VEC_WORDS; ++w) q[w] = tile[f + ((w + rot) & 3u)];
        q = rotate_words(q, (4u - rot) & 3u);
        store_vec(first + r * row_stride + pixel_offset(j * VEC_ELEMS, pixel_stride, channels),
                  uint[4](q.x, q.y, q.z, q.w));
    }
}

// A unit of move_staged: the EPW channels of one space-side word at every block position. In the
// depth side's order (channel-major, BB contiguous words) `a`, to the space side's (word t: the
// channels of block position t) `b`, or back: 4 x 4 byte blocks where they fill words, else
// element by element (shifts fixed at compile time).
void unit_to_space(uint a[BB], out uint b[BB]) {
    if (ELEM_BYTES == 1 && BB % 4 == 0) {
        [[unroll]] for (uint I = 0; I < BB / 4; ++I) {
            uvec4 t = transpose4x4(uvec4(a[I], a[BB / 4 + I], a[2 * BB / 4 + I], a[3 * BB / 4 + I]));
            [[unroll]] for (uint i = 0; i < 4; ++i) b[I * 4 + i] = t[i];
        }
        return;
    }
    [[unroll]] for (uint t = 0; t < BB; ++t) b[t] = 0;
    [[unroll]] for (uint j = 0; j < EPW * BB; ++j)        // element j of a: channel j / BB, position j % BB
        b[j % BB] |= move_element(a[j / EPW], j % EPW, j / BB);
}

void unit_to_depth(uint a[BB], out uint b[BB]) {
    if (ELEM_BYTES == 1 && BB % 4 == 0) {
        [[unroll]] for (uint I = 0; I < BB / 4; ++I) {
            uvec4 t = transpose4x4(uvec4(a[I * 4], a[I * 4 + 1], a[I * 4 + 2], a[I * 4 + 3]));
            [[unroll]] for (uint i = 0; i < 4; ++i) b[i * BB / 4 + I] = t[i];
        }
        return;
    }
    [[unroll]] for (uint t = 0; t < BB; ++t) b[t] = 0;
    [[unroll]] for (uint j = 0; j < EPW * BB; ++j)
        b[j / EPW] |= move_element(a[j % BB], j / BB, j % EPW);
}

// COLUMN_ROW_DEPTH of 1- or 2-byte elements, BLOCKS = 2, through shared memory: workgroup `wg`
// moves XT depth-side pixels (n, Y, X0..) of one row and the BLOCK space-side row segments of
// BLOCK*XT abutting pixels they correspond to, which live in the tile (rows PITCH words apart: an
// odd count, or whole vectors with ROTATE) and move to or from memory as whole vectors,
// neighbouring invocations on neighbouring vectors, every load of an invocation in flight at once.
// Between tile and depth side each invocation moves units (unit_to_space), whose BLOCK^2
// depth-side words are contiguous: straight to or from memory, or with DEPTH_TILE (odd BLOCK,
// whose units are not whole vectors) through a second part of the tile, the depth side's XT
// pixels, which moves as whole vectors too.
void move_staged(uint wg) {
    uint XT = p.tile_pixels, PITCH = p.tile_pitch;
    uvec4 dd = D2S != 0 ? p.in_dims : p.out_dims;                  // depth side N, H, W, C
    uvec3 ds = D2S != 0 ? p.in_strides.xyz : p.out_strides.xyz;
    uvec3 ss = D2S != 0 ? p.out_strides.xyz : p.in_strides.xyz;
    uint cs = dd.w / BB;                                           // space-side channels
    uint cw = cs / EPW;                                            // their words: units of a depth-side pixel
    uint tiles = (dd.z + XT - 1) / XT;
    uint X0 = (wg % tiles) * XT, Y = (wg / tiles) % dd.y, n = wg / (tiles * dd.y);
    uint xt = min(XT, dd.z - X0);
    uint row_vecs = xt * BLOCK * cw / VEC_WORDS;                   // of a space-side row segment
    uint L = gl_WorkGroupSize.x, lid = gl_LocalInvocationID.x;
    uint space0 = n * ss.x + Y * BLOCK * ss.y + X0 * BLOCK * cs;
    uint depth0 = n * ds.x + Y * ds.y + X0 * ds.z, cd = dd.w;
    uint DT0 = BLOCK * PITCH, dvecs = xt * cd / VEC_ELEMS;        // the depth side's part of the tile
    if (D2S != 0 && DEPTH_TILE != 0) {
        stage_rows(depth0, 1, 0, ds.z, cd, dvecs, DT0, 0, false);
        barrier();
    }
    if (D2S == 0) {
        stage_rows(space0, BLOCK, ss.y, cs, cs, row_vecs, 0, PITCH, false);
        barrier();
    }
    uint a[UNIT_LOADS][BB];
    if (D2S != 0) {
        [[unroll]] for (uint k = 0; k < UNIT_LOADS; ++k) {
            uint u = lid + k * L, depth = n * ds.x + Y * ds.y + (X0 + u / cw) * ds.z + (u % cw) * EPW * BB;
            if (u < xt * cw && DEPTH_TILE != 0) {
                [[unroll]] for (uint t = 0; t < BB; ++t) a[k][t] = tile[DT0 + u * BB + t];
            } else if (u < xt * cw) {
                [[unroll]] for (uint v = 0; v < BB / VEC_WORDS; ++v) {
                    uvec4 q = load_vec(depth + v * VEC_ELEMS);
                    [[unroll]] for (uint w = 0; w < VEC_WORDS; ++w) a[k][v * VEC_WORDS + w] = q[w];
                }
            }
        }
    }
    [[unroll]] for (uint k = 0; k < UNIT_LOADS; ++k) {
        uint u = lid + k * L;
        if (u >= xt * cw) break;
        uint xl = u / cw, g = u % cw;
        uint b[BB];
        if (D2S != 0) {
            unit_to_space(a[k], b);
            [[unroll]] for (uint t = 0; t < BB; ++t)
                tile[(t / BLOCK) * PITCH + (xl * BLOCK + t % BLOCK) * cw + g] = b[t];
        } else {
            [[unroll]] for (uint t = 0; t < BB; ++t)
                a[k][t] = tile[(t / BLOCK) * PITCH + (xl * BLOCK + t % BLOCK) * cw + g];
            unit_to_depth(a[k], b);
            uint depth = n * ds.x + Y * ds.y + (X0 + xl) * ds.z + g * EPW * BB;
            if (DEPTH_TILE != 0) {
                [[unroll]] for (uint t = 0; t < BB; ++t) tile[DT0 + u * BB + t] = b[t];
                continue;
            }
            [[unroll]] for (uint v = 0; v < BB / VEC_WORDS; ++v) {
                uint f = v * VEC_WORDS;
                store_vec(depth + v * VEC_ELEMS, uint[4](b[f], VEC_WORDS > 1 ? b[f + 1] : 0,
                          VEC_WORDS > 2 ? b[f + 2] : 0, VEC_WORDS > 3 ? b[f + 3] : 0));
            }
        }
    }
    if (D2S == 0 && DEPTH_TILE != 0) {
        barrier();
        unstage_rows(depth0, 1, 0, ds.z, cd, dvecs, DT0, 0, true);
    }
    if (D2S != 0) {
        barrier();
        unstage_rows(space0, BLOCK, ss.y, cs, cs, row_vecs, 0, PITCH, false);
    }
}

// move_tiled's runs that are contiguous on both sides, in bytes: one element in COLUMN_ROW_DEPTH
// order; in DEPTH_COLUMN_ROW a space-side pixel's channels, or the largest power of two dividing
// them, up to a vector.
layout(constant_id = 9) const uint UNIT_BYTES = 4;
const uint UNIT_ELEMS = UNIT_BYTES / ELEM_BYTES;
const uint UNITS = VEC_BYTES / UNIT_BYTES;              // runs per vector
const uint UNIT_BITS = UNIT_BYTES < 4 ? 8 * UNIT_BYTES : 32;

// Any element size, block size and order, BLOCKS = 3: workgroup `wg` moves XT depth-side pixels
// (n, Y, X0..) of one row and the BLOCK space-side row segments of BLOCK*XT pixels they
// correspond to. The source side comes into the tile as it lies in memory, whole vectors,
// neighbouring invocations on neighbouring vectors (rows of pixels' channels without the gaps
// between pixels, PITCH words apart); each destination vector is then gathered from the tile a
// contiguous run (UNIT_BYTES) at a time and stored whole, neighbouring invocations again on
// neighbouring vectors.
void move_tiled(uint wg) {
    uint XT = p.tile_pixels, PITCH = p.tile_pitch;
    uvec4 dd = D2S != 0 ? p.in_dims : p.out_dims;                  // depth side N, H, W, C
    uvec3 ds = D2S != 0 ? p.in_strides.xyz : p.out_strides.xyz;
    uvec3 ss = D2S != 0 ? p.out_strides.xyz : p.in_strides.xyz;
    uint cd = dd.w, cs = cd / BB;
    uint tiles = (dd.z + XT - 1) / XT;
    uint X0 = (wg % tiles) * XT, Y = (wg / tiles) % dd.y, n = wg / (tiles * dd.y);
    uint xt = min(XT, dd.z - X0);
    uint depth0 = n * ds.x + Y * ds.y + X0 * ds.z;
    uint space0 = n * ss.x + Y * BLOCK * ss.y + X0 * BLOCK * ss.z;
    // each side as rows of pixels: first element, row stride, pixel stride, channels, vectors a row
    uint s0 = D2S != 0 ? depth0 : space0, s_rs = D2S != 0 ? 0 : ss.y;
    uint s_ps = D2S != 0 ? ds.z : ss.z, s_c = D2S != 0 ? cd : cs;
    uint d0 = D2S != 0 ? space0 : depth0, d_rs = D2S != 0 ? ss.y : 0;
    uint d_ps = D2S != 0 ? ss.z : ds.z, d_c = D2S != 0 ? cs : cd;
    uint s_rows = D2S != 0 ? 1 : BLOCK, d_rows = BLOCK + 1 - s_rows;
    uint s_vecs = xt * cd / s_rows / VEC_ELEMS, d_vecs = xt * cd / d_rows / VEC_ELEMS;
    uint L = gl_WorkGroupSize.x, lid = gl_LocalInvocationID.x;

    stage_rows(s0, s_rows, s_rs, s_ps, s_c, s_vecs, 0, PITCH, SWIZZLE != 0);
    barrier();
    for (uint i = lid; i < d_rows * d_vecs; i += L) {
        uint r = i / d_vecs, e = (i % d_vecs) * VEC_ELEMS;
        uint q = e / d_c, ch = e % d_c;          // the destination pixel in the tile, its channel
        uint dst_at = d0 + r * d_rs + pixel_offset(e, d_ps, d_c);
        uint words[4] = uint[4](0, 0, 0, 0);
        [[unroll]] for (uint u = 0; u < UNITS; ++u) {
            uint sr, se;                         // the run's source: tile row, element in the row
            if (D2S != 0) {                      // r: block row, q: xl * BLOCK + block column
                uint xl = q / BLOCK, bx = q % BLOCK;
                sr = 0;
                se = xl * cd + (ORDER == 0 ? (r * BLOCK + bx) * cs + ch : ch * BB + r * BLOCK + bx);
            } else {                             // q: xl, ch: the depth-side channel
                uint pos = ORDER == 0 ? ch / cs : ch % BB, c = ORDER == 0 ? ch % cs : ch / BB;
                sr = pos / BLOCK;
                se = (q * BLOCK + pos % BLOCK) * cs + c;
            }
            uint byte = se * ELEM_BYTES, at = sr * PITCH + byte / 4;
            if (UNIT_BYTES >= 4) {
                [[unroll]] for (uint k = 0; k < UNIT_BYTES / 4; ++k)
                    words[u * UNIT_BYTES / 4 + k] = tile[SWIZZLE != 0 ? swizzle(at + k) : at + k];
            } else {
                uint bits = bitfieldExtract(tile[SWIZZLE != 0 ? swizzle(at) : at], int(8 * (byte % 4)), int(UNIT_BITS));
                uint w = u * UNIT_BYTES / 4;
                words[w] = bitfieldInsert(words[w], bits, int(8 * (u * UNIT_BYTES % 4)), int(UNIT_BITS));
            }
            ch += UNIT_ELEMS;
            if (ch == d_c) { ch = 0; ++q; }
        }
        store_vec(dst_at, words);
    }
}

void main() {
    uint local = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x
               + gl_LocalInvocationID.x;
    if (local >= p.items) return;    // whole workgroups, where BLOCKS is 2 or 3
    if (BLOCKS == 3) move_tiled((p.first + local) / gl_WorkGroupSize.x);
    else if (BLOCKS == 2) move_staged((p.first + local) / gl_WorkGroupSize.x);
    else if (BLOCKS == 1) move_blocks(p.first + local);
    else if (ORDER == 0) move_dcr(p.first + local);
    else move_crd(p.first + local);
}
