#version 450
// QUANTIZED_LINEAR_CONVOLUTION (spec 4.3): int8/uint8 input and filter, int32 accumulation with
// wraparound, float32 requantization with round-half-even, saturation to int8/uint8.
// One invocation computes OC_TILE output channels of one output pixel: each input value is read
// once and multiplied with OC_TILE filter values. 8-bit data stays packed four per 32-bit word.
// Padding taps are skipped: they contribute (xZP - xZP) * w = 0.

#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
#include "qconv_common.glsl"
const uint OC_TILE = 4;

void main() {
    uint local = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x
               + gl_LocalInvocationID.x;
    if (local >= p.items) return;
    uint item = p.first + local;

    uint ow = item % p.out_sizes.w; item /= p.out_sizes.w;
    uint oh = item % p.out_sizes.z; item /= p.out_sizes.z;
    uint tiles = (p.mg + OC_TILE - 1) / OC_TILE;
    uint groups = p.out_sizes.y / p.mg;
    uint tile = item % tiles; item /= tiles;
    uint g = item % groups;
    uint n = item / groups;

    uint M = p.out_sizes.y;
    uint m0 = g * p.mg + tile * OC_TILE;
    int wzp[OC_TILE];
    uint wbase[OC_TILE];
    int acc[OC_TILE];
    for (uint j = 0; j < OC_TILE; ++j) {
        uint m = min(m0 + j, g * p.mg + p.mg - 1);      // lanes past the group repeat its last channel
        wzp[j] = int(params[2 + M + m]);
        wbase[j] = m * p.w_strides.x;
        acc[j] = 0;
    }
    int xzp = int(params[0]);

    int ih0 = int(oh * p.conv_stride.x) - int(p.start_pad.x);
    int iw0 = int(ow * p.conv_stride.y) - int(p.start_pad.y);
    uint xbase = n * p.in_strides.x + g * p.cg * p.in_strides.y;
    for (uint c = 0; c < p.cg; ++c) {
        uint xc = xbase + c * p.in_strides.y;
        uint wc = c * p.w_strides.y;
        for (uint kh = 0; kh < KH; ++kh) {
            uint ih;
            if (!input_tap(oh, kh, p.conv_stride.x, p.dilation.x, p.start_pad.x, p.in_sizes.z, ih0, ih)) continue;
            for (uint kw = 0; kw < KW; ++kw) {
                uint iw;
                if (!input_tap(ow, kw, p.conv_stride.y, p.dilation.y, p.start_pad.y, p.in_sizes.w, iw0, iw)) continue;
                int xv = load_x(xc + ih * p.in_strides.z + iw * p.in_strides.w) - xzp;
                uint wk = wc + kh * p.w_strides.z + kw * p.w_strides.w;
                for (uint j = 0; j < OC_TILE; ++j) {
                    acc[j] += xv * (load_w(wbase[j] + wk) - wzp[j]);
                }
            }
        }
    }

    for (uint j = 0; j < OC_TILE; ++j) {
        if (m0 + j < g * p.mg + p.mg) store_output(n, m0 + j, oh, ow, acc[j]);
    }
}
