#version 450
// The filter of dmlvk/shaders/qlinear_conv_cpu.comp: per group and tile of 16 output channels,
// for each k = (c, kh, kw), the tile's 16 filter bytes as one 16-byte vector (channels past the
// group are 0). Invocation v writes vector v: ((g * tiles + tile) * K + k).

#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
#include "qconv_common.glsl"
layout(std430, binding = 3) writeonly buffer Packed { uvec4 wp[]; };

void main() {
    uint local = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x
               + gl_LocalInvocationID.x;
    if (local >= p.items) return;
    uint v = p.first + local;
    uint K = p.cg * KH * KW;
    uint tiles = (p.mg + 15) / 16;
    uint k = v % K, gt = v / K;
    uint tile = gt % tiles, g = gt / tiles;
    uint c = k / (KH * KW), r = k % (KH * KW);
    uint off = c * p.w_strides.y + (r / KW) * p.w_strides.z + (r % KW) * p.w_strides.w;
    uint words[4] = uint[4](0, 0, 0, 0);
    for (uint j = 0; j < 16; ++j) {
        uint m = tile * 16 + j;
        if (m < p.mg) {
            uint b = uint(load_w((g * p.mg + m) * p.w_strides.x + off)) & 0xFFu;
            words[j / 4] |= b << ((j % 4) * 8);
        }
    }
    wp[v] = uvec4(words[0], words[1], words[2], words[3]);
}
