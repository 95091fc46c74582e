#version 450
// DEPTH_TO_SPACE(1) / SPACE_TO_DEPTH(1) for channel-last tensors: both with unit C stride, packed
// NHWC or with gaps between pixels (see dmlvk/ops/depth_space.py, _nhwc_kernel). Each invocation writes one
// VEC_BYTES piece (16, 8 or 4 bytes) of an output pixel's channels, so neighbouring invocations
// write neighbouring vectors. In DEPTH_COLUMN_ROW order the piece's channels are contiguous in one
// input pixel: one vector load. In COLUMN_ROW_DEPTH order they are BLOCK^2 (depth-to-space) or
// spread over input pixels (space-to-depth): gathered element by element.

#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ELEM_BYTES = 4;
layout(constant_id = 2) const uint BLOCK = 2;
layout(constant_id = 3) const uint D2S = 1;      // 1: depth-to-space, 0: space-to-depth
layout(constant_id = 4) const uint ORDER = 0;    // 0: DEPTH_COLUMN_ROW (DCR), 1: COLUMN_ROW_DEPTH (CRD)
layout(constant_id = 5) const uint VEC_BYTES = 16;

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

// The input element (index in elements) holding output channel c of output pixel (n, y, x).
uint source(uint n, uint y, uint x, uint c) {
    uint iy, ix, ic;
    if (D2S != 0) {
        uint i = y % BLOCK, j = x % BLOCK;
        iy = y / BLOCK; ix = x / BLOCK;
        ic = ORDER == 0 ? (i * BLOCK + j) * p.out_dims.w + c : c * BLOCK * BLOCK + i * BLOCK + j;
    } else {
        uint blk, cin;
        if (ORDER == 0) { blk = c / p.in_dims.w; cin = c % p.in_dims.w; }
        else { blk = c % (BLOCK * BLOCK); cin = c / (BLOCK * BLOCK); }
        iy = y * BLOCK + blk / BLOCK; ix = x * BLOCK + blk % BLOCK;
        ic = cin;
    }
    return n * p.in_strides.x + iy * p.in_strides.y + ix * p.in_strides.z + ic;
}

void main() {
    uint local = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x
               + gl_LocalInvocationID.x;
    if (local >= p.items) return;
    uint v = p.first + local;
    uint per_pixel = p.out_dims.w / VEC_ELEMS;
    uint pix = v / per_pixel, c0 = (v % per_pixel) * VEC_ELEMS;
    uint x = pix % p.out_dims.z, y = (pix / p.out_dims.z) % p.out_dims.y, n = pix / (p.out_dims.z * p.out_dims.y);
    uint o = (n * p.out_strides.x + y * p.out_strides.y + x * p.out_strides.z + c0) * ELEM_BYTES / VEC_BYTES;
    if (ORDER == 0) {             // a contiguous, aligned run: one vector
        uint at = source(n, y, x, c0) * ELEM_BYTES / VEC_BYTES;
        if (VEC_BYTES == 16) dst4[o] = src4[at];
        else if (VEC_BYTES == 8) dst2[o] = src2[at];
        else dst1[o] = src1[at];
        return;
    }
    uint words[4] = uint[4](0, 0, 0, 0);
    [[unroll]] for (uint k = 0; k < VEC_ELEMS; ++k) {
        uint e = source(n, y, x, c0 + k);
        if (ELEM_BYTES >= 4) {
            [[unroll]] for (uint w = 0; w < ELEM_BYTES / 4; ++w) words[k * (ELEM_BYTES / 4) + w] = src1[e * (ELEM_BYTES / 4) + w];
        } else {
            uint bits = bitfieldExtract(src1[e * ELEM_BYTES / 4], int((e * ELEM_BYTES % 4) * 8), int(ELEM_BYTES * 8));
            uint pos = k * ELEM_BYTES;
            words[pos / 4] |= bits << ((pos % 4) * 8);
        }
    }
    if (VEC_BYTES == 16) dst4[o] = uvec4(words[0], words[1], words[2], words[3]);
    else if (VEC_BYTES == 8) dst2[o] = uvec2(words[0], words[1]);
    else dst1[o] = words[0];
}
