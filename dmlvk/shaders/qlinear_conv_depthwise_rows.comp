#version 450
// QUANTIZED_LINEAR_CONVOLUTION for depthwise layers and narrow groups (a few input channels per
// group) whose input rows and output rows are word aligned, with at most 64 products per output
// (input channels of a group x filter taps; see _depthwise_kernel in
// dmlvk/ops/quantized_conv.py): each invocation computes OPT neighbouring outputs of one output
// row of one output channel straight from the input, with no shared memory and no barrier, so
// every invocation of the GPU can have its loads in flight. For each input channel of its group
// and each filter row it loads the input words under its window (the input zero point stands in
// for words outside the input and bytes outside the row), multiplies in registers and at the end
// stores whole output words.
//
// The multiply-adds run on the float32 units (NVIDIA GPUs have twice as many as integer units)
// and stay exact: every (x - xZP) and (w - wZP) is an integer of magnitude at most 255, so each
// product is at most 65025 and the sum of 64 of them stays below 2^22, where float32 holds every
// integer. Bytes become floats by placing them in a float's mantissa (2^23 + byte), and the exact
// sum becomes an int32 the same way (1.5 * 2^23 + sum), so the only conversions left are the two
// of the requantization (spec 4.3, as in requantize_biased).

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

const uint WIN = (OPT - 1) * SX + (KW - 1) * DX + 1;         // input columns of the window
const uint WORDS = (SHIFT + WIN + 3) / 4;                   // input words of a window row
const float TWO23 = 8388608.0;                              // 2^23: bits 0x4B000000
const float MAGIC = 12582912.0;                             // 1.5 * 2^23: bits 0x4B400000

void main() {
    uint i = p.first + (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x
           + gl_LocalInvocationID.x;
    uint OH = p.out_sizes.z, OW = p.out_sizes.w, M = p.out_sizes.y;
    uint per_row = (OW + OPT - 1) / OPT;
    uint q = i % per_row; i /= per_row;
    uint oh = i % OH; i /= OH;
    uint c = i % M, n = i / M;
    if (n >= p.out_sizes.x) return;
    uint ow0 = q * OPT;
    int H = int(p.in_sizes.z), W = int(p.in_sizes.w);
    int xa = int(ow0 * SX) - int(p.start_pad.y) - int(SHIFT);     // a multiple of 4
    int y0 = int(oh * p.conv_stride.x) - int(p.start_pad.x);
    int xzp = int(params[0]);
    uint zp_word = (uint(xzp) & 0xFFu) * 0x01010101u;   // four bytes of the input zero point
    // Signed inputs are biased by 128 (x ^ 0x80 as an unsigned byte), so 2^23 + byte is exact.
    uint flip = X_SIGNED != 0 ? 0x80808080u : 0u;
    float x_sub = TWO23 + float(xzp + (X_SIGNED != 0 ? 128 : 0));     // 2^23 + xZP (biased)
    int wzp = int(params[2 + M + c]);
    uint c0 = (c / p.mg) * CG;                    // the group's first input channel
    // The window's words, the same columns in every row: which lie in the row (inside), and the
    // mask of their bytes within it (keep; the input zero point fills the rest, zero_fill).
    bool inside[WORDS];
    uint keep[WORDS], zero_fill[WORDS];
    [[unroll]] for (uint w = 0; w < WORDS; ++w) {
        int x = xa + int(4 * w);
        inside[w] = x >= 0 && x < W;
        int bytes = clamp(W - x, 0, 4);
        keep[w] = !inside[w] ? 0u : bytes == 4 ? 0xFFFFFFFFu : (1u << (8 * bytes)) - 1u;
        zero_fill[w] = zp_word & ~keep[w];
    }
    float acc[OPT];
    [[unroll]] for (uint j = 0; j < OPT; ++j) acc[j] = 0.0;
    for (uint ic = 0; ic < CG; ++ic) {
        uint xbase = n * p.in_strides.x + (c0 + ic) * p.in_strides.y;
        // Every load of the channel at once (the host keeps KH x WORDS small): the filter rows, then
        // the window rows, those outside the input all zero-point bytes.
        float wv[KH * KW];
        [[unroll]] for (uint k = 0; k < KH * KW; ++k)
            wv[k] = float(load_w(c * p.w_strides.x + ic * p.w_strides.y + (k / KW) * p.w_strides.z
                                 + (k % KW) * p.w_strides.w) - wzp);
        uint words[KH * WORDS];
        [[unroll]] for (uint kh = 0; kh < KH; ++kh) {
            int y = y0 + int(kh * p.dilation.x);
            bool row_in = y >= 0 && y < H;
            int row = int((xbase + uint(y) * p.in_strides.z) >> 2) + (xa >> 2);   // word of column xa
            [[unroll]] for (uint w = 0; w < WORDS; ++w) {
                uint raw = row_in && inside[w] ? x_words[row + int(w)] : 0u;
                words[kh * WORDS + w] = row_in ? ((raw & keep[w]) | zero_fill[w]) ^ flip : zp_word ^ flip;
            }
        }
        [[unroll]] for (uint kh = 0; kh < KH; ++kh) {
            // Column by column, each column's x - xZP into the outputs whose taps land on it, so that
            // few values are live at once.
            [[unroll]] for (uint col = SHIFT; col < WORDS * 4; ++col) {
                uint word = words[kh * WORDS + col / 4];
                float v = uintBitsToFloat(0x4B000000u | ((word >> (8 * (col % 4))) & 0xFFu)) - x_sub;
                [[unroll]] for (uint kw = 0; kw < KW; ++kw) {
                    uint j = (col - SHIFT - kw * DX) / SX;     // the output whose tap kw is this column
                    if (col >= SHIFT + kw * DX && (col - SHIFT - kw * DX) % SX == 0 && j < OPT)
                        acc[j] = fma(v, wv[kh * KW + kw], acc[j]);
                }
            }
        }
    }
    int bias = int(params[2 + 2 * M + c]);
    float mult = uintBitsToFloat(params[2 + c]);
    float yzp = float(int(params[1]));
    float lo = Y_SIGNED != 0 ? -128.0 : 0.0;
    float hi = Y_SIGNED != 0 ? 127.0 : 255.0;
    uint obase = output_offset(n, c, oh, ow0) >> 2;
    [[unroll]] for (uint w = 0; w < OPT / 4; ++w) {
        if (ow0 + 4 * w >= OW) break;               // OW is a multiple of 4
        uint word = 0;
        [[unroll]] for (uint b = 0; b < 4; ++b) {
            int a = floatBitsToInt(acc[4 * w + b] + MAGIC) - 0x4B400000 + bias;
            // requantize_biased, with its last conversion through the mantissa (q is an integer)
            float r = roundEven(float(a) * mult);
            float qv = clamp(clamp(r, -512.0, 512.0) + yzp, lo, hi);
            word |= (floatBitsToUint(qv + MAGIC) & 0xFFu) << (8 * b);
        }
        y_words[obase + w] = word;
    }
}
