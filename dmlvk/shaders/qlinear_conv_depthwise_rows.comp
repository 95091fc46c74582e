#version 450
// QUANTIZED_LINEAR_CONVOLUTION for depthwise layers and narrow groups (a few input channels per
// group) whose input rows and output rows are word aligned, with at most 64 products per output
// (input channels of a group x filter taps; see _depthwise_kernel in
// dmlvk/ops/quantized_conv.py), straight from the input: no shared memory, no barrier, whole
// output words. Each invocation computes OPT neighbouring outputs of a row of one output channel:
// - ROWS = 1 (any strides and dilations): of one output row, loading the input words under its
//   window (every filter row of every input channel of its group) at once;
// - ROWS > 1 (vertical stride and dilation 1): of ROWS output rows, walking down the input one row
//   at a time, each row loaded once (the next one is in flight while this one is multiplied) and
//   added into the KH output rows whose windows hold it; KH rows of sums rotate in registers, and
//   an output row is stored as soon as its last input row is in.
// The input zero point stands in for words outside the input and bytes outside the row.
//
// The multiply-adds run on the float32 units (NVIDIA GPUs have twice as many as integer units)
// and stay exact: every (x - xZP) and (w - wZP) is an integer of magnitude at most 255, so each
// product is at most 65025 and the sum of 64 of them stays below 2^22, where float32 holds every
// integer. Bytes become floats by placing them in a float's mantissa (2^23 + byte), and the exact
// sum becomes an int32 the same way (1.5 * 2^23 + sum), so the only conversions left are the two
// of the requantization (spec 4.3, requantize_biased).

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0) in;
#include "qconv_common.glsl"
layout(constant_id = 7) const uint SX = 1;       // horizontal stride
layout(constant_id = 8) const uint DX = 1;       // horizontal dilation
// The window's first column less its word-aligned start, (-start_pad) mod 4: the same for every
// invocation, since OPT * SX is a multiple of 4.
layout(constant_id = 9) const uint SHIFT = 0;
layout(constant_id = 10) const uint OPT = 16;               // outputs per invocation, a multiple of 4
layout(constant_id = 12) const uint CG = 1;                 // input channels per group (11: INT32_OUT)
layout(constant_id = 13) const uint ROWS = 1;               // output rows per invocation

const uint WIN = (OPT - 1) * SX + (KW - 1) * DX + 1;         // input columns of the window
const uint WORDS = (SHIFT + WIN + 3) / 4;                   // input words of a window row
const uint SUMS = ROWS == 1 ? OPT : KH * OPT;               // sums held: one row, or KH rows
const float TWO23 = 8388608.0;                              // 2^23: bits 0x4B000000
const float MAGIC = 12582912.0;                             // 1.5 * 2^23: bits 0x4B400000

// Set once per invocation in main.
uint xa_word;                  // the word of the window's first column in a row
bool inside[WORDS];            // which of the window's words lie in the row
uint keep[WORDS], zero_fill[WORDS];    // their bytes in the row, and the zero point for the rest
uint zp_word, flip;
float x_sub;                   // 2^23 + xZP (biased by 128 for signed inputs)

float acc[SUMS];

// Word w of the window in input row y of the channel starting at element xbase, all zero-point
// bytes outside the input; signed inputs biased by 128 (x ^ 0x80), so that 2^23 + byte is exact.
uint window_word(uint xbase, int y, uint w) {
    bool row_in = y >= 0 && y < int(p.in_sizes.z);
    uint raw = row_in && inside[w] ? x_words[((xbase + uint(y) * p.in_strides.z) >> 2) + xa_word + w] : 0u;
    return row_in ? ((raw & keep[w]) | zero_fill[w]) ^ flip : zp_word ^ flip;
}

// x - xZP of column col of a window row.
float column(uint word, uint col) {
    return uintBitsToFloat(0x4B000000u | ((word >> (8 * (col % 4))) & 0xFFu)) - x_sub;
}

// w - wZP of tap t (filter row t / KW, column t % KW) of input channel ic of output channel c.
float weight(uint c, uint ic, uint t, int wzp) {
    return float(load_w(c * p.w_strides.x + ic * p.w_strides.y + (t / KW) * p.w_strides.z
                        + (t % KW) * p.w_strides.w) - wzp);
}

// Requantizes sums acc[first..first+OPT) and stores them as output row oh from column ow0.
void store_row(uint first, int bias, uint n, uint c, uint oh, uint ow0) {
    float mult = uintBitsToFloat(params[2 + c]);
    float yzp = float(int(params[1]));
    uint obase = output_offset(n, c, oh, ow0) >> 2;
    [[unroll]] for (uint w = 0; w < OPT / 4; ++w) {
        if (ow0 + 4 * w >= p.out_sizes.w) break;               // OW is a multiple of 4
        uint word = 0;
        [[unroll]] for (uint b = 0; b < 4; ++b) {
            int a = floatBitsToInt(acc[first + 4 * w + b] + MAGIC) - 0x4B400000 + bias;
            word |= requantize_biased(a, mult, yzp) << (8 * b);
        }
        y_words[obase + w] = word;
    }
}

void main() {
    uint i = p.first + (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x
           + gl_LocalInvocationID.x;
    uint OH = p.out_sizes.z, OW = p.out_sizes.w, M = p.out_sizes.y;
    uint per_row = (OW + OPT - 1) / OPT;
    uint q = i % per_row; i /= per_row;
    uint blocks = (OH + ROWS - 1) / ROWS;
    uint oh0 = (i % blocks) * ROWS; i /= blocks;
    uint c = i % M, n = i / M;
    if (n >= p.out_sizes.x) return;
    uint ow0 = q * OPT;
    int W = int(p.in_sizes.w);
    int xa = int(ow0 * SX) - int(p.start_pad.y) - int(SHIFT);     // a multiple of 4
    xa_word = uint(xa >> 2);
    int y0 = int(oh0 * p.conv_stride.x) - int(p.start_pad.x);
    int xzp = int(params[0]);
    zp_word = (uint(xzp) & 0xFFu) * 0x01010101u;        // four bytes of the input zero point
    flip = X_SIGNED != 0 ? 0x80808080u : 0u;
    x_sub = TWO23 + float(xzp + (X_SIGNED != 0 ? 128 : 0));
    int wzp = int(params[2 + M + c]);
    uint c0 = (c / p.mg) * CG;                    // the group's first input channel
    [[unroll]] for (uint w = 0; w < WORDS; ++w) {
        int x = xa + int(4 * w);
        inside[w] = x >= 0 && x < W;
        int bytes = clamp(W - x, 0, 4);
        keep[w] = !inside[w] ? 0u : bytes == 4 ? 0xFFFFFFFFu : (1u << (8 * bytes)) - 1u;
        zero_fill[w] = zp_word & ~keep[w];
    }
    int bias = int(params[2 + 2 * M + c]);
    uint xbase0 = n * p.in_strides.x + c0 * p.in_strides.y;
    [[unroll]] for (uint j = 0; j < SUMS; ++j) acc[j] = 0.0;

    if (ROWS == 1) {
        for (uint ic = 0; ic < CG; ++ic) {
            // Every load of the input channel at once (the host keeps KH x WORDS small): the filter
            // rows, then the window rows.
            float wv[KH * KW];
            [[unroll]] for (uint t = 0; t < KH * KW; ++t) wv[t] = weight(c, ic, t, wzp);
            uint xbase = xbase0 + ic * p.in_strides.y;
            uint words[KH * WORDS];
            [[unroll]] for (uint kh = 0; kh < KH; ++kh)
                [[unroll]] for (uint w = 0; w < WORDS; ++w)
                    words[kh * WORDS + w] = window_word(xbase, y0 + int(kh * p.dilation.x), w);
            [[unroll]] for (uint kh = 0; kh < KH; ++kh) {
                // Column by column, each column's x - xZP into the outputs whose taps land on it,
                // so that few values are live at once.
                [[unroll]] for (uint col = SHIFT; col < WORDS * 4; ++col) {
                    float v = column(words[kh * WORDS + col / 4], col);
                    [[unroll]] for (uint kw = 0; kw < KW; ++kw) {
                        uint j = (col - SHIFT - kw * DX) / SX;     // the output whose tap kw is this column
                        if (col >= SHIFT + kw * DX && (col - SHIFT - kw * DX) % SX == 0 && j < OPT)
                            acc[j] = fma(v, wv[kh * KW + kw], acc[j]);
                    }
                }
            }
        }
        store_row(0, bias, n, c, oh0, ow0);
        return;
    }

    // ROWS > 1: input row t (y0 + t) adds into output row t - kh through filter row kh, whose sums
    // are acc[((t - kh) mod KH) * OPT ..]. Sums of rows before oh0 or past the last are computed
    // too and never stored.
    float wv[CG * KH * KW];
    [[unroll]] for (uint k = 0; k < CG * KH * KW; ++k) wv[k] = weight(c, k / (KH * KW), k % (KH * KW), wzp);
    uint rows = min(ROWS, OH - oh0);
    uint in_rows = rows + KH - 1;
    uint next[CG * WORDS];
    [[unroll]] for (uint k = 0; k < CG * WORDS; ++k)
        next[k] = window_word(xbase0 + (k / WORDS) * p.in_strides.y, y0, k % WORDS);
    for (uint tb = 0; tb < in_rows; tb += KH) {
        [[unroll]] for (uint u = 0; u < KH; ++u) {       // t mod KH is u: the rotation is static
            uint t = tb + u;
            if (t >= in_rows) break;
            uint cur[CG * WORDS];
            [[unroll]] for (uint k = 0; k < CG * WORDS; ++k) cur[k] = next[k];
            if (t + 1 < in_rows) {
                [[unroll]] for (uint k = 0; k < CG * WORDS; ++k)
                    next[k] = window_word(xbase0 + (k / WORDS) * p.in_strides.y, y0 + int(t) + 1, k % WORDS);
            }
            [[unroll]] for (uint ic = 0; ic < CG; ++ic) {
                [[unroll]] for (uint col = SHIFT; col < WORDS * 4; ++col) {
                    float v = column(cur[ic * WORDS + col / 4], col);
                    [[unroll]] for (uint kh = 0; kh < KH; ++kh) {
                        uint slot = (u + KH - kh) % KH;
                        [[unroll]] for (uint kw = 0; kw < KW; ++kw) {
                            uint j = (col - SHIFT - kw * DX) / SX;
                            if (col >= SHIFT + kw * DX && (col - SHIFT - kw * DX) % SX == 0 && j < OPT)
                                acc[slot * OPT + j] = fma(v, wv[(ic * KH + kh) * KW + kw], acc[slot * OPT + j]);
                        }
                    }
                }
            }
            // Output row t - (KH - 1) has all its input rows now.
            uint done = (u + 1) % KH;
            if (t >= KH - 1)
                store_row(done * OPT, bias, n, c, oh0 + t - (KH - 1), ow0);
            [[unroll]] for (uint j = 0; j < OPT; ++j) acc[done * OPT + j] = 0.0;
        }
    }
}
