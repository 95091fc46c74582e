#version 450
// Repacks QUANTIZED_LINEAR_CONVOLUTION's input as Xp (qconv_packed.glsl) for the
// cooperative-matrix shader: one invocation writes 32 channels (a whole 32-byte sector) of one
// padded input position;
// neighbouring invocations take neighbouring positions, so the input's rows are read whole.

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0) in;
#include "qconv_common.glsl"
#include "qconv_packed.glsl"
layout(std430, binding = 3) writeonly buffer Y4 { uvec4 y_vec4[]; };

void main() {
    uint local = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x
               + gl_LocalInvocationID.x;
    if (local >= p.items) return;
    uint item = p.first + local;
    uint cp = packed_cp(), G = packed_groups();
    uint per_pos = G * cp / 32;
    uint wp = packed_wp(), hp = packed_hp();
    uint positions = p.in_sizes.x * hp * wp;
    uint pos = item % positions, cblk = item / positions;
    uint g = cblk / (cp / 32), c0 = (cblk % (cp / 32)) * 32;
    uint x = pos % wp, y = (pos / wp) % hp, n = pos / (wp * hp);
    // Padded position (y, x) is input position (y - start_pad, x - start_pad).
    bool inside = y >= p.start_pad.x && y - p.start_pad.x < p.in_sizes.z
               && x >= p.start_pad.y && x - p.start_pad.y < p.in_sizes.w;
    uint flip = X_SIGNED != 0 ? 0u : 0x80u;
    uint pad_byte = (params[0] & 0xFFu) ^ flip;
    uint base = n * p.in_strides.x + (y - p.start_pad.x) * p.in_strides.z + (x - p.start_pad.y) * p.in_strides.w;
    uvec4 v[2] = uvec4[2](uvec4(0), uvec4(0));
    [[unroll]] for (uint j = 0; j < 32; ++j) {
        uint c = c0 + j;
        uint b = 0;
        if (c < p.cg) {
            if (inside) {
                uint off = base + (g * p.cg + c) * p.in_strides.y;
                b = bitfieldExtract(x_words[off >> 2], int((off & 3u) * 8u), 8) ^ flip;
            } else {
                b = pad_byte;
            }
        }
        v[j / 16][(j / 4) % 4] |= b << ((j % 4) * 8);
    }
    y_vec4[(pos * per_pos + cblk) * 2] = v[0];
    y_vec4[(pos * per_pos + cblk) * 2 + 1] = v[1];
}
