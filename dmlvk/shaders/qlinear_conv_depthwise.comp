#version 450
// QUANTIZED_LINEAR_CONVOLUTION for depthwise layers (one input and one output channel per group):
// a workgroup computes a 16 x 64 tile of one output plane from its input window, staged once in
// shared memory as (x - xZP) with the padding as 0, so the multiply loop has no bounds checks
// (the channel's KH x KW taps, less the filter zero point, follow the window there). Where the
// input's rows are word aligned (WORD_ROWS) the window is read a word at a time from a
// word-aligned column; each invocation computes 4 neighbouring outputs of a row (sliding along
// the row in registers when stride and dilation are 1) and stores them as one word where the
// output layout allows (PACKED_OUT), else byte by byte. The host uses it only when the window
// and the taps fit 6144 elements.

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0) in;   // 256
#include "qconv_common.glsl"
// 1 when the output's W stride is 1 and its other strides and OW are multiples of 4: the 4
// outputs of an invocation then fill one word of their own.
layout(constant_id = 8) const uint PACKED_OUT = 0;
// The window and taps of this description: shared memory sized to what is used, so that many
// workgroups fit on a multiprocessor.
layout(constant_id = 9) const uint TILE = 6144;
// 1 when the input's W stride is 1 and its N, C and H strides are multiples of 4.
layout(constant_id = 10) const uint WORD_ROWS = 0;

const uint TH = 16, TW = 64;
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
    uint sy = p.conv_stride.x, sx = p.conv_stride.y, dy = p.dilation.x, dx = p.dilation.y;
    uint hh = (TH - 1) * sy + (KH - 1) * dy + 1;
    uint hw = (TW - 1) * sx + (KW - 1) * dx + 1;
    int y0 = int(oh0 * sy) - int(p.start_pad.x);
    int x0 = int(ow0 * sx) - int(p.start_pad.y);
    // Tile rows start at column x0 - shift, a multiple of 4 when the rows are word aligned.
    uint shift = WORD_ROWS != 0 ? uint(x0) & 3u : 0u;
    int xa = x0 - int(shift);
    uint tw = WORD_ROWS != 0 ? (hw + shift + 3) & ~3u : hw;     // tile row length
    int xzp = int(params[0]);
    uint xbase = n * p.in_strides.x + c * p.in_strides.y;
    int H = int(p.in_sizes.z), W = int(p.in_sizes.w);
    if (WORD_ROWS != 0) {
        uint words = tw / 4;
        for (uint i = t; i < hh * words; i += gl_WorkGroupSize.x) {
            uint yy = i / words, wd = i % words;
            int y = y0 + int(yy), x = xa + int(4 * wd);
            ivec4 v = ivec4(0);
            if (y >= 0 && y < H && x >= 0 && x < W) {
                uint word = x_words[(xbase + uint(y) * p.in_strides.z + uint(x)) >> 2];
                [[unroll]] for (uint b = 0; b < 4; ++b) {
                    int byte = X_SIGNED != 0 ? bitfieldExtract(int(word), int(8 * b), 8)
                                             : int(bitfieldExtract(word, int(8 * b), 8));
                    v[b] = x + int(b) < W ? byte - xzp : 0;
                }
            }
            uint at = yy * tw + 4 * wd;
            tile[at] = v.x; tile[at + 1] = v.y; tile[at + 2] = v.z; tile[at + 3] = v.w;
        }
    } else {
        for (uint yy = t / 64; yy < hh; yy += 4) {
            int y = y0 + int(yy);
            bool row_in = y >= 0 && y < H;
            uint rbase = xbase + uint(y) * p.in_strides.z;
            for (uint xx = t % 64; xx < hw; xx += 64) {
                int x = x0 + int(xx);
                bool inside = row_in && x >= 0 && x < W;
                tile[yy * tw + xx] = inside ? load_x(rbase + uint(x) * p.in_strides.w) - xzp : 0;
            }
        }
    }
    uint taps = hh * tw;
    int wzp = int(params[2 + p.out_sizes.y + c]);
    for (uint k = t; k < KH * KW; k += gl_WorkGroupSize.x)
        tile[taps + k] = load_w(c * p.w_strides.x + (k / KW) * p.w_strides.z + (k % KW) * p.w_strides.w) - wzp;
    barrier();

    uint ty = t / 16, tq = t % 16;
    uint oh = oh0 + ty, ow = ow0 + 4 * tq;
    if (oh >= OH || ow >= OW) return;
    int acc[4] = int[4](0, 0, 0, 0);
    if (sx == 1 && dx == 1) {
        for (uint kh = 0; kh < KH; ++kh) {
            uint row = (ty * sy + kh * dy) * tw + shift + 4 * tq;
            int r[4 + KW - 1];
            [[unroll]] for (uint i = 0; i < 4 + KW - 1; ++i) r[i] = tile[row + i];
            [[unroll]] for (uint kw = 0; kw < KW; ++kw) {
                int wv = tile[taps + kh * KW + kw];
                [[unroll]] for (uint j = 0; j < 4; ++j) acc[j] += r[j + kw] * wv;
            }
        }
    } else {
        for (uint kh = 0; kh < KH; ++kh) {
            uint row = (ty * sy + kh * dy) * tw + shift + 4 * tq * sx;
            for (uint kw = 0; kw < KW; ++kw) {
                int wv = tile[taps + kh * KW + kw];
                uint at = row + kw * dx;
                [[unroll]] for (uint j = 0; j < 4; ++j) acc[j] += tile[at + j * sx] * wv;
            }
        }
    }
    // requantize() with this channel's constants read once.
    int bias = int(params[2 + 2 * p.out_sizes.y + c]);
    float mult = uintBitsToFloat(params[2 + c]);
    float yzp = float(int(params[1]));
    uint q[4];
    [[unroll]] for (uint j = 0; j < 4; ++j) q[j] = requantize_biased(acc[j] + bias, mult, yzp);
    if (PACKED_OUT != 0) {
        y_words[output_offset(n, c, oh, ow) >> 2] = q[0] | (q[1] << 8) | (q[2] << 16) | (q[3] << 24);
    } else {
        for (uint j = 0; j < 4 && ow + j < OW; ++j) store_byte(output_offset(n, c, oh, ow + j), q[j]);
    }
}
