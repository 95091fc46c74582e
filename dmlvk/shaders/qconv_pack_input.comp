#version 450
// Repacks QUANTIZED_LINEAR_CONVOLUTION's input as Xp (qconv_packed.glsl) for the
// cooperative-matrix shader. Neighbouring invocations take neighbouring padded positions of a row,
// so the input's rows are read whole.
// - QUAD = 0 (any input strides): one invocation writes 32 channels (a whole 32-byte sector) of one
//   padded input position, loading each byte on its own.
// - QUAD = 1 (input columns contiguous, in_strides.w = 1): one invocation writes 16 channels of 4
//   neighbouring padded positions of a row. It loads each channel's 4 columns as one word (two
//   where they straddle words), then transposes the 16 x 4 bytes in registers: a quarter of the
//   loads.

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0) in;
#include "qconv_common.glsl"
#include "qconv_packed.glsl"
layout(std430, binding = 3) writeonly buffer Y4 { uvec4 y_vec4[]; };
layout(constant_id = 10) const uint QUAD = 0;

void pack_quads(uint item) {
    uint cp = packed_cp(), G = packed_groups();
    uint blocks = G * cp / 16;                        // 16-channel blocks (uvec4) per position: even
    uint wp = packed_wp(), hp = packed_hp();
    uint quads = (wp + 3) / 4;
    uint rows = p.in_sizes.x * hp * quads;
    // Invocations 2i and 2i + 1 take the two halves of a 32-channel block of the same positions,
    // so that each 32-byte sector is written whole by one store instruction.
    uint r = (item / 2) % rows, blk = (item / 2 / rows) * 2 + item % 2;
    uint x0 = (r % quads) * 4, y = (r / quads) % hp, n = r / (quads * hp);
    uint g = blk / (cp / 16), c0 = (blk % (cp / 16)) * 16;
    uint flip = X_SIGNED != 0 ? 0u : 0x80808080u;
    uint zp_word = (params[0] & 0xFFu) * 0x01010101u;
    // Which of the 4 positions are input columns (the rest are padding, or past the row).
    uint valid = 0;
    [[unroll]] for (uint k = 0; k < 4; ++k) {
        uint x = x0 + k;
        if (x < wp && x >= p.start_pad.y && x - p.start_pad.y < p.in_sizes.w) valid |= 1u << k;
    }
    int kmin = max(findLSB(valid), 0), kmax = findMSB(valid);
    uint keep = 0;
    [[unroll]] for (uint k = 0; k < 4; ++k)
        if ((valid & (1u << k)) != 0) keep |= 0xFFu << (8 * k);
    bool row_in = y >= p.start_pad.x && y - p.start_pad.x < p.in_sizes.z && valid != 0;
    uint first = n * p.in_strides.x + (y - p.start_pad.x) * p.in_strides.z + g * p.cg * p.in_strides.y
               + (x0 + uint(kmin) - p.start_pad.y);   // column kmin of the group's channel 0
    uint words[16];
    [[unroll]] for (uint j = 0; j < 16; ++j) {
        uint c = c0 + j;
        bool load = row_in && c < p.cg;
        // Both loads issue unconditionally (word 0 stands in where nothing is read), so that all of
        // them are in flight at once: the word holding column kmin, and the next one where columns
        // up to kmax reach into it.
        uint a = load ? first + c * p.in_strides.y : 0u;
        uint s = (a & 3u) * 8u;
        uint lo = x_words[a >> 2];
        uint hi = x_words[(a >> 2) + (load && s / 8u + uint(kmax - kmin) >= 4u ? 1u : 0u)];
        uint got = s == 0u ? lo : (lo >> s) | (hi << (32u - s));
        uint v = ((got << (8 * kmin)) & keep) | (zp_word & ~keep);
        v = load ? v : zp_word;
        words[j] = c < p.cg ? v ^ flip : 0u;           // channels past Cg: zeros
    }
    uint base = ((n * hp + y) * wp + x0) * blocks + blk;
    [[unroll]] for (uint k = 0; k < 4; ++k) {
        if (x0 + k >= wp) break;
        uvec4 o;
        [[unroll]] for (uint q = 0; q < 4; ++q)
            o[q] = bitfieldExtract(words[4 * q], int(8 * k), 8)
                 | (bitfieldExtract(words[4 * q + 1], int(8 * k), 8) << 8)
                 | (bitfieldExtract(words[4 * q + 2], int(8 * k), 8) << 16)
                 | (bitfieldExtract(words[4 * q + 3], int(8 * k), 8) << 24);
        y_vec4[base + k * blocks] = o;
    }
}

void main() {
    uint local = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x
               + gl_LocalInvocationID.x;
    if (local >= p.items) return;
    uint item = p.first + local;
    if (QUAD != 0) {
        pack_quads(item);
        return;
    }
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
