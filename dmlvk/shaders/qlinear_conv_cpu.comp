#version 450
// QUANTIZED_LINEAR_CONVOLUTION for CPU Vulkan devices (lavapipe). A CPU driver runs each
// invocation as a SIMD lane and loads memory lane by lane (shared memory included, whatever the
// address), so this kernel minimises loads per multiply-add: an invocation computes 16 output
// channels (a tile fixed by the workgroup index) of PIXELS consecutive output pixels, and per
// filter tap k loads one 16-byte vector of the tile's filter bytes (packed by
// qconv_pack_filter_cpu.comp) and one input byte per pixel: 16 * PIXELS multiply-adds for
// PIXELS + 1 loads. No shared memory, no barriers. Exact int32 arithmetic with wraparound
// (spec 4.3); padding taps contribute (xZP - xZP) * w = 0.

#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
#include "qconv_common.glsl"
layout(std430, binding = 1) readonly buffer Packed { uvec4 wp[]; };   // replaces W (binding 1)
const uint PIXELS = 4;

void main() {
    uint NP = p.out_sizes.x * p.out_sizes.z * p.out_sizes.w;
    uint per_group = gl_WorkGroupSize.x * PIXELS;
    uint ptiles = (NP + per_group - 1) / per_group;
    uint wg = p.first / gl_WorkGroupSize.x + gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    uint ctile = wg / ptiles;                            // the workgroup's (group, channel tile)
    uint tiles = (p.mg + 15) / 16;
    uint groups = p.out_sizes.y / p.mg;
    if (ctile >= tiles * groups) return;
    uint g = ctile / tiles, tile = ctile % tiles, m0 = g * p.mg + tile * 16;
    uint pix0 = (wg % ptiles) * per_group + gl_LocalInvocationID.x * PIXELS;
    if (pix0 >= NP) return;

    uint M = p.out_sizes.y;
    int wzp[16];
    for (uint j = 0; j < 16; ++j) wzp[j] = int(params[2 + M + min(m0 + j, g * p.mg + p.mg - 1)]);
    int xzp = int(params[0]);
    uint n[PIXELS], oh[PIXELS], ow[PIXELS], xbase[PIXELS];
    int ih0[PIXELS], iw0[PIXELS];
    for (uint i = 0; i < PIXELS; ++i) {
        uint q = min(pix0 + i, NP - 1);                  // pixels past the end repeat the last one
        ow[i] = q % p.out_sizes.w; oh[i] = (q / p.out_sizes.w) % p.out_sizes.z;
        n[i] = q / (p.out_sizes.w * p.out_sizes.z);
        ih0[i] = int(oh[i] * p.conv_stride.x) - int(p.start_pad.x);
        iw0[i] = int(ow[i] * p.conv_stride.y) - int(p.start_pad.y);
        xbase[i] = n[i] * p.in_strides.x + g * p.cg * p.in_strides.y;
    }
    int acc[PIXELS][16];
    for (uint i = 0; i < PIXELS; ++i)
        for (uint j = 0; j < 16; ++j) acc[i][j] = 0;

    uint k = 0, K = p.cg * KH * KW;
    uint wrow = ctile * K;
    for (uint c = 0; c < p.cg; ++c) {
        for (uint kh = 0; kh < KH; ++kh) {
            for (uint kw = 0; kw < KW; ++kw, ++k) {
                int xv[PIXELS];
                for (uint i = 0; i < PIXELS; ++i) {
                    uint ih, iw;
                    bool inside = input_tap(oh[i], kh, p.conv_stride.x, p.dilation.x, p.start_pad.x, p.in_sizes.z, ih0[i], ih)
                        && input_tap(ow[i], kw, p.conv_stride.y, p.dilation.y, p.start_pad.y, p.in_sizes.w, iw0[i], iw);
                    xv[i] = inside ? load_x(xbase[i] + c * p.in_strides.y + ih * p.in_strides.z + iw * p.in_strides.w) - xzp : 0;
                }
                uvec4 w = wp[wrow + k];
                for (uint j = 0; j < 16; ++j) {
                    uint word = w[j / 4];
                    int wv = (W_SIGNED != 0 ? bitfieldExtract(int(word), int(j % 4) * 8, 8)
                                            : int(bitfieldExtract(word, int(j % 4) * 8, 8))) - wzp[j];
                    for (uint i = 0; i < PIXELS; ++i) acc[i][j] += xv[i] * wv;
                }
            }
        }
    }
    for (uint i = 0; i < PIXELS; ++i) {
        if (pix0 + i >= NP) break;
        for (uint j = 0; j < 16; ++j)
            if (m0 + j < g * p.mg + p.mg) store_output(n[i], m0 + j, oh[i], ow[i], acc[i][j]);
    }
}
