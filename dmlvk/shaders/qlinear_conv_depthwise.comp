#version 450
// QUANTIZED_LINEAR_CONVOLUTION for depthwise layers (one input and one output channel per group):
// a workgroup computes a 16 x 64 tile of one output plane from its input window, staged once in
// shared memory as (x - xZP) with the padding as 0, so the multiply loop has no bounds checks
// (the channel's KH x KW taps, less the filter zero point, follow the window there);
// each invocation computes 4 neighbouring outputs of a row and stores them as one word where
// the output layout allows (PACKED_OUT), else byte by byte. The host uses it only when the
// window and the taps fit 6144 elements.

#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;   // 256
#include "qconv_common.glsl"
// 1 when the output's W stride is 1 and its other strides and OW are multiples of 4: the 4
// outputs of an invocation then fill one word of their own.
layout(constant_id = 8) const uint PACKED_OUT = 0;

const uint TH = 16, TW = 64;
// The window and taps of this description (at most 6144 elements): shared memory sized to what
// is used, so that many workgroups fit on a multiprocessor.
layout(constant_id = 9) const uint TILE = 6144;
shared int tile[TILE];

void main() {
    uint t = gl_LocalInvocationID.x;
    uint OH = p.out_sizes.z, OW = p.out_sizes.w;
    uint rows = (OH + TH - 1) / TH, cols = (OW + TW - 1) / TW;
    uint wg = p.first / gl_WorkGroupSize.x + gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    uint tc = wg % cols; wg /= cols;
    uint tr = wg % rows; wg /= rows;
    uint c = wg % p.out_sizes.y, n = wg / p.out_sizes.y;
    if (n >= p.out_sizes.x) return;                   // uniform across the workgroup
    uint oh0 = tr * TH, ow0 = tc * TW;
    uint hh = (TH - 1) * p.conv_stride.x + (KH - 1) * p.dilation.x + 1;
    uint hw = (TW - 1) * p.conv_stride.y + (KW - 1) * p.dilation.y + 1;
    int y0 = int(oh0 * p.conv_stride.x) - int(p.start_pad.x);
    int x0 = int(ow0 * p.conv_stride.y) - int(p.start_pad.y);
    int xzp = int(params[0]);
    uint xbase = n * p.in_strides.x + c * p.in_strides.y;
    // The window, 4 rows of 64 at a time (no division per element), then the filter's taps after it.
    for (uint yy = t / 64; yy < hh; yy += 4) {
        int y = y0 + int(yy);
        bool row_in = y >= 0 && y < int(p.in_sizes.z);
        uint rbase = xbase + uint(y) * p.in_strides.z;
        for (uint xx = t % 64; xx < hw; xx += 64) {
            int x = x0 + int(xx);
            bool inside = row_in && x >= 0 && x < int(p.in_sizes.w);
            tile[yy * hw + xx] = inside ? load_x(rbase + uint(x) * p.in_strides.w) - xzp : 0;
        }
    }
    uint taps = hh * hw;
    int wzp = int(params[2 + p.out_sizes.y + c]);
    for (uint k = t; k < KH * KW; k += gl_WorkGroupSize.x)
        tile[taps + k] = load_w(c * p.w_strides.x + (k / KW) * p.w_strides.z + (k % KW) * p.w_strides.w) - wzp;
    barrier();

    uint ty = t / 16, tq = t % 16;
    uint oh = oh0 + ty, ow = ow0 + 4 * tq;
    if (oh >= OH || ow >= OW) return;
    int acc[4] = int[4](0, 0, 0, 0);
    uint sy = p.conv_stride.x, sx = p.conv_stride.y, dy = p.dilation.x, dx = p.dilation.y;
    for (uint kh = 0; kh < KH; ++kh) {
        uint row = (ty * sy + kh * dy) * hw + 4 * tq * sx;
        for (uint kw = 0; kw < KW; ++kw) {
            int wv = tile[taps + kh * KW + kw];
            uint at = row + kw * dx;
            for (uint j = 0; j < 4; ++j) acc[j] += tile[at + j * sx] * wv;
        }
    }
    // requantize() with this channel's constants read once.
    int bias = int(params[2 + 2 * p.out_sizes.y + c]);
    float mult = uintBitsToFloat(params[2 + c]);
    float yzp = float(int(params[1]));
    uint q[4];
    for (uint j = 0; j < 4; ++j) q[j] = requantize_biased(acc[j] + bias, mult, yzp);
    if (PACKED_OUT != 0) {
        y_words[output_offset(n, c, oh, ow) >> 2] = q[0] | (q[1] << 8) | (q[2] << 16) | (q[3] << 24);
    } else {
        for (uint j = 0; j < 4 && ow + j < OW; ++j) {
            uint off = output_offset(n, c, oh, ow + j);
            uint bit = (off & 3u) * 8u;
            atomicAnd(y_words[off >> 2], ~(0xFFu << bit));
            atomicOr(y_words[off >> 2], q[j] << bit);
        }
    }
}
