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
// Two ways to multiply, both exact:
// - float32 (the default): every (x - xZP) and (w - wZP) is an integer of magnitude at most 255, so
//   each product is at most 65025 and the sum of 64 of them stays below 2^22, where float32 holds
//   every integer (NVIDIA GPUs have twice as many float32 units as integer units). Bytes become
//   floats by placing them in a float's mantissa (2^23 + byte).
// - DOT = 1 (a compile-time define; devices with shaderIntegerDotProduct, KW <= 4, horizontal
//   dilation 1): one packed 4 x 8-bit dot product (SPV_KHR_integer_dot_product) per output and
//   filter row, of the 4 input bytes from the output's first tap and the filter row's bytes as
//   int8, w - s with s = 0 for int8 filters and 128 for uint8 ones (so that they always fit), and
//   0 past KW. With c = s - wZP, sum (x - xZP)(w - wZP) = sum x (w - s) - xZP sum (w - s)
//   + c (sum x - K xZP) for the K = CG * KH * KW taps; the window sums of x (one more dot
//   product a row) are needed only where some channel's c is not 0 (params[2 + 3M], set by the host).
//
// Requantization (spec 4.3, the same results as requantize_biased in qconv_common.glsl) takes the
// float32 value of the biased accumulator a: where |bias| < 2^22 (a per-channel test) a is below
// 2^23 in magnitude and its float is the exact sum of the accumulator's and the bias's; otherwise
// float(a) of the wrapped int32 sum. The product a * multiplier rounds half to even by adding
// 1.5 * 2^23 (exact below 2^22; larger products land beyond the saturation bounds either way), and
// the output bytes come from the clamped floats' bits (store_row): no conversion instructions.

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifndef DOT
#define DOT 0
#endif

layout(local_size_x_id = 0) in;
#include "qconv_common.glsl"
#if DOT
#include "qconv_dot.glsl"
#endif
layout(constant_id = 7) const uint SX = 1;       // horizontal stride
layout(constant_id = 8) const uint DX = 1;       // horizontal dilation
// The window's first column less its word-aligned start, (-start_pad) mod 4: the same for every
// invocation, since OPT * SX is a multiple of 4.
layout(constant_id = 9) const uint SHIFT = 0;
layout(constant_id = 10) const uint OPT = 16;               // outputs per invocation, a multiple of 4
layout(constant_id = 12) const uint CG = 1;                 // input channels per group (11: INT32_OUT)
layout(constant_id = 13) const uint ROWS = 1;               // output rows per invocation

// Input columns of the window: with DOT, each output's 4 bytes from its first tap.
const uint WIN = DOT != 0 ? (OPT - 1) * SX + 4 : (OPT - 1) * SX + (KW - 1) * DX + 1;
const uint WORDS = (SHIFT + WIN + 3) / 4;                   // input words of a window row
const uint SUMS = ROWS == 1 ? OPT : KH * OPT;               // sums held: one row, or KH rows
const float TWO23 = 8388608.0;                              // 2^23: bits 0x4B000000
const int FAST_BIAS = 1 << 22;                              // |bias| below it: the exact float sum

#if DOT
const uint KMASK = KW >= 4 ? 0x01010101u : 0x01010101u & ((1u << (8 * KW)) - 1u);   // KW bytes of 1
// sum of x's first KW bytes.
int dot_ones(uint x) { return dot_mask(x, KMASK); }
#define ACC_T int
#else
#define ACC_T float
#endif

// Set once per invocation in main.
uint xa_word;                  // the word of the window's first column in a row
bool inside[WORDS];            // which of the window's words lie in the row
uint keep[WORDS];              // their bytes in the row (the zero point stands in for the rest)
uint zp_word, flip;
float x_sub;                   // 2^23 + xZP (biased by 128 for signed inputs)

ACC_T acc[SUMS];
uint n, c, oh0, ow0, xbase0;   // the invocation's image, output channel, first output row and column
int y0;                        // the input row of its first window row
bool fast;                     // |bias| < FAST_BIAS (see store_row)
float fbias;                   // with fast: the bias (float32 path) or MAGIC less it (DOT)
int bias, corr;                // the bias; with DOT the sums' start: the correction, + 0x4B400000
#if DOT
uint wrow[CG * KH];            // filter rows as int8 bytes w - s, 0 past KW
int cw;                        // s - wZP
#else
float wv[CG * KH * KW];        // w - wZP
#endif

// Word w of the window in input row y of the channel starting at element xbase, all zero-point
// bytes outside the input; for the float32 products signed inputs are biased by 128 (x ^ 0x80),
// so that 2^23 + byte is exact.
uint window_word(uint xbase, int y, uint w) {
    bool row_in = y >= 0 && y < int(p.in_sizes.z);
    uint raw = row_in && inside[w] ? x_words[((xbase + uint(y) * p.in_strides.z) >> 2) + xa_word + w] : 0u;
    uint k = row_in ? keep[w] : 0u;
    return ((raw & k) | (zp_word & ~k)) ^ flip;
}

// x - xZP of column col of a window row.
float column(uint word, uint col) {
    return uintBitsToFloat(0x4B000000u | ((word >> (8 * (col % 4))) & 0xFFu)) - x_sub;
}

// Tap t (filter row t / KW, column t % KW) of input channel ic of output channel c.
int tap(uint c, uint ic, uint t) {
    return load_w(c * p.w_strides.x + ic * p.w_strides.y + (t / KW) * p.w_strides.z + (t % KW) * p.w_strides.w);
}

// Requantizes sums acc[first..first+OPT) and stores them as output row oh from column ow0 (spec
// 4.3, see the header), four outputs a word (requantized_float_bits, qconv_common.glsl).
void store_row(uint first, uint oh) {
    float mult = uintBitsToFloat(params[2 + c]);
    Requant rq = requant_for(int(params[1]));
    float f[OPT];
    if (fast) {
        [[unroll]] for (uint j = 0; j < OPT; ++j)
#if DOT
            f[j] = intBitsToFloat(acc[first + j]) - fbias;
#else
            f[j] = acc[first + j] + fbias;
#endif
    } else {
        [[unroll]] for (uint j = 0; j < OPT; ++j)
#if DOT
            f[j] = float(acc[first + j] - 0x4B400000 + bias);
#else
            f[j] = float(floatBitsToInt(acc[first + j] + MAGIC) - 0x4B400000 + bias);
#endif
    }
    uint obase = output_offset(n, c, oh, ow0) >> 2;
    [[unroll]] for (uint w = 0; w < OPT / 4; ++w) {
        if (ow0 + 4 * w >= p.out_sizes.w) break;               // OW is a multiple of 4
        uint word = 0;
        [[unroll]] for (uint b = 0; b < 4; ++b) word += requantized_float_bits(f[4 * w + b], mult, rq) << (8 * b);
        y_words[obase + w] = requantized_word(word, rq);
    }
}

// ROWS = 1: the OPT outputs of output row oh0 from column ow0.
void one_row(bool ws) {
    [[unroll]] for (uint ic = 0; ic < CG; ++ic) {
        // Every load of the input channel at once (the host keeps KH x WORDS small).
        uint xbase = xbase0 + ic * p.in_strides.y;
        uint words[KH * WORDS];
        [[unroll]] for (uint kh = 0; kh < KH; ++kh)
            [[unroll]] for (uint w = 0; w < WORDS; ++w)
                words[kh * WORDS + w] = window_word(xbase, y0 + int(kh * p.dilation.x), w);
        [[unroll]] for (uint kh = 0; kh < KH; ++kh) {
#if DOT
            [[unroll]] for (uint j = 0; j < OPT; ++j) {
                uint o = SHIFT + j * SX;
                uint xw = four_bytes(words[kh * WORDS + o / 4], words[kh * WORDS + min(o / 4 + 1, WORDS - 1)], o);
                acc[j] += dot_w(xw, wrow[ic * KH + kh]) + (ws ? cw * dot_ones(xw) : 0);
            }
#else
            // Column by column, each column's x - xZP into the outputs whose taps land on it, so
            // that few values are live at once.
            [[unroll]] for (uint col = SHIFT; col < WORDS * 4; ++col) {
                float v = column(words[kh * WORDS + col / 4], col);
                [[unroll]] for (uint kw = 0; kw < KW; ++kw) {
                    uint j = (col - SHIFT - kw * DX) / SX;     // the output whose tap kw is this column
                    if (col >= SHIFT + kw * DX && (col - SHIFT - kw * DX) % SX == 0 && j < OPT)
                        acc[j] = fma(v, wv[(ic * KH + kh) * KW + kw], acc[j]);
                }
            }
#endif
        }
    }
    store_row(0, oh0);
}

// ROWS > 1: input row t (y0 + t) adds into output row t - kh through filter row kh, whose sums are
// acc[((t - kh) mod KH) * OPT ..]. Sums of rows before oh0 or past the last are computed too and
// never stored.
void walk(bool ws) {
    uint rows = min(ROWS, p.out_sizes.z - oh0);
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
#if DOT
                [[unroll]] for (uint j = 0; j < OPT; ++j) {
                    uint o = SHIFT + j * SX;
                    uint xw = four_bytes(cur[ic * WORDS + o / 4], cur[ic * WORDS + min(o / 4 + 1, WORDS - 1)], o);
                    int rs = ws ? cw * dot_ones(xw) : 0;
                    [[unroll]] for (uint kh = 0; kh < KH; ++kh) {
                        uint slot = (u + KH - kh) % KH;
                        acc[slot * OPT + j] += dot_w(xw, wrow[ic * KH + kh]) + rs;
                    }
                }
#else
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
#endif
            }
            // Output row t - (KH - 1) has all its input rows now.
            uint done = (u + 1) % KH;
            if (t >= KH - 1) store_row(done * OPT, oh0 + t - (KH - 1));
            [[unroll]] for (uint j = 0; j < OPT; ++j) acc[done * OPT + j] = DOT != 0 ? ACC_T(corr) : ACC_T(0);
        }
    }
}

void main() {
    uint i = p.first + (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x
           + gl_LocalInvocationID.x;
    uint OH = p.out_sizes.z, OW = p.out_sizes.w, M = p.out_sizes.y;
    uint per_row = (OW + OPT - 1) / OPT;
    uint q = i % per_row; i /= per_row;
    uint blocks = (OH + ROWS - 1) / ROWS;
    oh0 = (i % blocks) * ROWS; i /= blocks;
    c = i % M; n = i / M;
    if (n >= p.out_sizes.x) return;
    ow0 = q * OPT;
    int W = int(p.in_sizes.w);
    int xa = int(ow0 * SX) - int(p.start_pad.y) - int(SHIFT);     // a multiple of 4
    xa_word = uint(xa >> 2);
    y0 = int(oh0 * p.conv_stride.x) - int(p.start_pad.x);
    int xzp = int(params[0]);
    zp_word = (uint(xzp) & 0xFFu) * 0x01010101u;        // four bytes of the input zero point
    flip = X_SIGNED != 0 && DOT == 0 ? 0x80808080u : 0u;
    x_sub = TWO23 + float(xzp + (X_SIGNED != 0 ? 128 : 0));
    int wzp = int(params[2 + M + c]);
    uint c0 = (c / p.mg) * CG;                    // the group's first input channel
    [[unroll]] for (uint w = 0; w < WORDS; ++w) {
        int x = xa + int(4 * w);
        inside[w] = x >= 0 && x < W;
        int bytes = clamp(W - x, 0, 4);
        keep[w] = !inside[w] ? 0u : bytes == 4 ? 0xFFFFFFFFu : (1u << (8 * bytes)) - 1u;
    }
    bias = int(params[2 + 2 * M + c]);
    fast = bias > -FAST_BIAS && bias < FAST_BIAS;
    xbase0 = n * p.in_strides.x + c0 * p.in_strides.y;
#if DOT
    int s = W_SIGNED != 0 ? 0 : 128;
    int sum_w = 0;
    [[unroll]] for (uint r = 0; r < CG * KH; ++r) {
        uint packed = 0;
        [[unroll]] for (uint kw = 0; kw < KW; ++kw) {
            int w = tap(c, r / KH, (r % KH) * KW + kw) - s;
            sum_w += w;
            packed |= (uint(w) & 0xFFu) << (8 * kw);
        }
        wrow[r] = packed;
    }
    cw = s - wzp;
    corr = -xzp * sum_w - cw * int(CG * KH * KW) * xzp + 0x4B400000;
    [[unroll]] for (uint j = 0; j < SUMS; ++j) acc[j] = corr;
    fbias = MAGIC - float(bias);
    bool ws = params[2 + 3 * M] != 0u;
#else
    [[unroll]] for (uint k = 0; k < CG * KH * KW; ++k) wv[k] = float(tap(c, k / (KH * KW), k % (KH * KW)) - wzp);
    corr = 0;
    fbias = float(bias);
    [[unroll]] for (uint j = 0; j < SUMS; ++j) acc[j] = 0.0;
    bool ws = false;
#endif
    if (ROWS == 1) {
        if (ws) one_row(true); else one_row(false);
    } else {
        if (ws) walk(true); else walk(false);
    }
}
