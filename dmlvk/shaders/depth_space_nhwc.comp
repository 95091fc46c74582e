#version 450
// DEPTH_TO_SPACE(1) / SPACE_TO_DEPTH(1) for channel-last tensors: both with unit C stride, packed
// NHWC or with gaps between pixels (see dmlvk/ops/depth_space.py, _nhwc_kernel). Every load and
// store is a whole, aligned VEC_BYTES vector (16, 8 or 4 bytes) of a pixel's channels, or of a
// run of abutting pixels; see move_dcr, move_crd, move_blocks, move_staged and move_tiled.

#extension GL_GOOGLE_include_directive : require
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

#include "depth_space_nhwc_tiles.glsl"

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
