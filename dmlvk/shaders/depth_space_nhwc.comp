#version 450
// DEPTH_TO_SPACE(1) / SPACE_TO_DEPTH(1) for channel-last tensors: both with unit C stride, packed
// NHWC or with gaps between pixels (see dmlvk/ops/depth_space.py, _nhwc_kernel). Every load and
// store is a whole, aligned VEC_BYTES vector (16, 8 or 4 bytes) of a pixel's channels; see
// move_dcr and move_crd for the two orders.

#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ELEM_BYTES = 4;
layout(constant_id = 2) const uint BLOCK = 2;
layout(constant_id = 3) const uint D2S = 1;      // 1: depth-to-space, 0: space-to-depth
layout(constant_id = 4) const uint ORDER = 0;    // 0: DEPTH_COLUMN_ROW (DCR), 1: COLUMN_ROW_DEPTH (CRD)
layout(constant_id = 5) const uint VEC_BYTES = 16;
layout(constant_id = 6) const uint CRD_BLOCKS = 0;   // COLUMN_ROW_DEPTH depth-to-space: 1 move_crd_blocks

layout(std430, binding = 0) restrict readonly buffer Src1 { uint src1[]; };
layout(std430, binding = 0) restrict readonly buffer Src2 { uvec2 src2[]; };
layout(std430, binding = 0) restrict readonly buffer Src4 { uvec4 src4[]; };
layout(std430, binding = 1) restrict writeonly buffer Dst1 { uint dst1[]; };
layout(std430, binding = 1) restrict writeonly buffer Dst2 { uvec2 dst2[]; };
layout(std430, binding = 1) restrict writeonly buffer Dst4 { uvec4 dst4[]; };

layout(push_constant) uniform Push {
    uvec4 out_dims;        // N, H, W, C of the output
    uvec4 in_dims;         // N, H, W, C of the input
    uvec4 out_strides;     // element strides N, H, W of the output (C stride is 1)
    uvec4 in_strides;      // element strides N, H, W of the input (C stride is 1)
    uint items;
    uint first;
} p;

const uint VEC_ELEMS = VEC_BYTES / ELEM_BYTES;
const uint VEC_WORDS = VEC_BYTES / 4;

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
    uint per_row = p.out_dims.z * p.out_dims.w / VEC_ELEMS;
    uint row = v / per_row, e0 = (v % per_row) * VEC_ELEMS;
    uint x = e0 / p.out_dims.w, c0 = e0 % p.out_dims.w;
    uint y = row % p.out_dims.y, n = row / p.out_dims.y;
    uint o = (n * p.out_strides.x + y * p.out_strides.y + x * p.out_strides.z + c0) * ELEM_BYTES / VEC_BYTES;
    uint at = source_dcr(n, y, x, c0) * ELEM_BYTES / VEC_BYTES;
    if (VEC_BYTES == 16) dst4[o] = src4[at];
    else if (VEC_BYTES == 8) dst2[o] = src2[at];
    else dst1[o] = src1[at];
}

const uint BB = BLOCK * BLOCK;
const uint EW = ELEM_BYTES >= 4 ? ELEM_BYTES / 4 : 1;     // words per element
const uint EPW = ELEM_BYTES >= 4 ? 1 : 4 / ELEM_BYTES;    // elements per word
const uint EBITS = 8 * ELEM_BYTES;

uvec4 load_vec(uint elem) {
    uint at = elem * ELEM_BYTES / VEC_BYTES;
    if (VEC_BYTES == 16) return src4[at];
    if (VEC_BYTES == 8) return uvec4(src2[at], 0, 0);
    return uvec4(src1[at], 0, 0, 0);
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
            uint bits = bitfieldExtract(src1[e / EPW], int((e % EPW) * EBITS), int(EBITS));
            words[k / EPW] = bitfieldInsert(words[k / EPW], bits, int((k % EPW) * EBITS), int(EBITS));
        }
    }
    uint o = (n * p.out_strides.x + y * p.out_strides.y + x * p.out_strides.z + c0) * ELEM_BYTES / VEC_BYTES;
    if (VEC_BYTES == 16) dst4[o] = uvec4(words[0], words[1], words[2], words[3]);
    else if (VEC_BYTES == 8) dst2[o] = uvec2(words[0], words[1]);
    else dst1[o] = words[0];
}

// COLUMN_ROW_DEPTH depth-to-space, CRD_BLOCKS: invocation v moves VEC_ELEMS output channels c0..
// of a BLOCK x BLOCK block of output pixels, whose sources are the contiguous input channels
// c0*BLOCK^2.. of one input pixel: BLOCK^2 vector loads, a transpose in registers, BLOCK^2 vector
// stores. (For space-to-depth the mirror image measured slower on an H200 than move_crd.)
void move_crd_blocks(uint v) {
    uint per = p.out_dims.w / VEC_ELEMS;                 // channel vectors of an output pixel
    uint c0 = (v % per) * VEC_ELEMS, pix = v / per;      // pix: the input pixel
    uint x = pix % p.in_dims.z, y = (pix / p.in_dims.z) % p.in_dims.y, n = pix / (p.in_dims.z * p.in_dims.y);
    uint a[BB * VEC_WORDS], b[BB * VEC_WORDS];
    uint first = n * p.in_strides.x + y * p.in_strides.y + x * p.in_strides.z + c0 * BB;
    [[unroll]] for (uint t = 0; t < BB; ++t) {
        uvec4 q = load_vec(first + t * VEC_ELEMS);
        [[unroll]] for (uint w = 0; w < VEC_WORDS; ++w) { a[t * VEC_WORDS + w] = q[w]; b[t * VEC_WORDS + w] = 0; }
    }
    // a holds element k*BB + t (channel c0+k, block position t); b gets t*VEC_ELEMS + k
    [[unroll]] for (uint m = 0; m < BB * VEC_ELEMS; ++m) {
        uint src = (m % VEC_ELEMS) * BB + m / VEC_ELEMS;
        if (ELEM_BYTES >= 4) {
            [[unroll]] for (uint w = 0; w < EW; ++w) b[m * EW + w] = a[src * EW + w];
        } else {
            uint bits = bitfieldExtract(a[src / EPW], int((src % EPW) * EBITS), int(EBITS));
            b[m / EPW] = bitfieldInsert(b[m / EPW], bits, int((m % EPW) * EBITS), int(EBITS));
        }
    }
    [[unroll]] for (uint t = 0; t < BB; ++t) {
        uint elem = n * p.out_strides.x + (y * BLOCK + t / BLOCK) * p.out_strides.y
                  + (x * BLOCK + t % BLOCK) * p.out_strides.z + c0;
        uint at = elem * ELEM_BYTES / VEC_BYTES, f = t * VEC_WORDS;
        if (VEC_BYTES == 16) dst4[at] = uvec4(b[f], b[f + 1], b[f + 2], b[f + 3]);
        else if (VEC_BYTES == 8) dst2[at] = uvec2(b[f], b[f + 1]);
        else dst1[at] = b[f];
    }
}

void main() {
    uint local = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x
               + gl_LocalInvocationID.x;
    if (local >= p.items) return;
    if (ORDER == 0) move_dcr(p.first + local);
    else if (CRD_BLOCKS == 1) move_crd_blocks(p.first + local);
    else move_crd(p.first + local);
}
