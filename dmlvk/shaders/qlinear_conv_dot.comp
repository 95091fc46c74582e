#version 450
// QUANTIZED_LINEAR_CONVOLUTION on packed 4 x 8-bit dot products (qconv_dot.glsl), for groups with
// few output channels (a last layer with 4) or few input channels (a first layer with one), whose
// input and output rows are word aligned and whose horizontal dilation is 1. Each invocation
// computes OPT neighbouring outputs of one output row for MB output channels of its group: every
// input row under its window is loaded once, as words, for all MB channels, and each dot product
// multiplies four neighbouring taps of a filter row (with KW % 4 == 1 the last column's taps, alone in
// their words otherwise, four rows at a time: COLS). A workgroup's channels (BLOCKS blocks of MB)
// share their filter, staged in shared memory once for its TILES tiles of invocations, computed one
// after the other: four taps of a filter row a word, as int8 bytes w - s (s = 0 for
// int8 filters, 128 for uint8 ones, so that they always fit), 0 past KW. With c = s - wZP,
//     sum (x - xZP)(w - wZP) = sum x (w - s) - xZP sum (w - s) + c (sum x - K xZP)
// over the K = CG * KH * KW taps, the input zero point standing in for taps outside the input. The
// window sums of x (one more dot product per four taps) are needed only where some channel's c is
// not 0 (params[2 + 3M], set by the host; WSUM 0 compiles them out). The biased sums are
// requantized as requantize_biased (qconv_common.glsl) does and stored as whole words: output rows
// word aligned with OW a multiple of 4, or (CL_OUT) a channels-last output, four channels of a pixel
// a word (CL_VEC: an invocation's 8 or 16 a store). With CL_IN (conv.dot.nhwc) the input is
// channels-last instead of word-aligned rows.
// With D2S (conv.dot.float: the ONNX runner's QLinearConv -> [DepthToSpace ->] DequantizeLinear) each
// output byte is then dequantized, float32(q - zero point) * DQ_SCALE as dequantize_linear.comp computes
// it, and stored as a float at its place after a DepthToSpace of block D2S (1: none), so that one
// kernel writes the float image.

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require

layout(local_size_x_id = 0) in;
#include "qconv_common.glsl"
#include "qconv_dot.glsl"
layout(constant_id = 7) const uint SX = 1;       // horizontal stride
// Tiles (a workgroup's invocations' outputs) a workgroup computes one after the other, its channels'
// filter staged once for them all.
layout(constant_id = 8) const uint TILES = 1;
// The window's first column less its word-aligned start, (-start_pad) mod 4: the same for every
// invocation, since OPT * SX is a multiple of 4.
layout(constant_id = 9) const uint SHIFT = 0;
layout(constant_id = 10) const uint OPT = 8;     // outputs per invocation, a multiple of 4
layout(constant_id = 12) const uint CG = 1;      // input channels per group (11: INT32_OUT, 0)
layout(constant_id = 13) const uint MB = 4;      // output channels per invocation
// 1 for a channels-last output (channels contiguous, other strides whole words, MB a multiple of 4
// dividing the group's channels): four channels of an output pixel a word.
layout(constant_id = 14) const uint CL_OUT = 0;
// Channel blocks of MB a workgroup covers (1, or with CL_OUT every block of the group, so that
// neighbouring invocations store one output pixel's channels together), dividing its invocations.
layout(constant_id = 15) const uint BLOCKS = 1;
// 0 where no window sums are ever needed (the filter zero points known before execution, none
// differing from s), else params[2 + 3M] decides.
layout(constant_id = 16) const uint WSUM = 1;
// 1 for a channels-last input (conv.dot.nhwc: channel stride 1, the other strides multiples of 16
// bytes, CG a multiple of 16): sixteen channels of a window position a vector, each dot product
// over four channels of one tap, the filter staged as [channel][kh][kw][four channels] words.
layout(constant_id = 17) const uint CL_IN = 0;
// With CL_IN, 0; or the output rows each subgroup walks down, one output column a lane (walk): each
// input row loaded once, a lane's own position and, for the first KW - 1 lanes, the one a subgroup
// further (16-byte loads of neighbouring positions, a subgroup's together), the next KW - 1 positions
// of the window taken from the next lanes by subgroup shuffles, and KH output rows' sums carried down
// as the rows come in (one channel block holding the group's every channel).
layout(constant_id = 18) const uint WALK = 0;
// 1 with CL_OUT and MB 8 or 16 (strides in MB bytes): a pixel's MB channels of an invocation one
// store, so that the store instruction of the invocations of a pixel's channel blocks covers them whole.
layout(constant_id = 19) const uint CL_VEC = 0;
// 0: the description's 8-bit output; else a float32 output [N, M / D2S^2, OH * D2S, OW * D2S] (packed),
// the DepthToSpace's order column-row-depth where D2S_CRD (else depth-column-row), the
// dequantization's scale bits and zero point's DQ_SCALE and DQ_ZP_BITS.
layout(constant_id = 20) const uint D2S = 0;
layout(constant_id = 21) const uint D2S_CRD = 0;
layout(constant_id = 22) const uint DQ_SCALE = 0;
// (its bits: SwiftShader read a negative int specialization constant as 0 here)
layout(constant_id = 23) const uint DQ_ZP_BITS = 0;

const uint KQ = (KW + 3) / 4;                    // words a window row's taps span
const uint LAST_MASK = KW % 4 == 0 ? 0x01010101u : (1u << (8 * (KW % 4))) - 1u & 0x01010101u;
const uint WIN = (OPT - 1) * SX + 4 * KQ;        // window columns: each output's 4 x KQ from its first tap
const uint WORDS = (SHIFT + WIN + 3) / 4;        // input words of a window row
const uint WINC = (OPT - 1) * SX + KW;           // CL_IN: window positions of a row
// With KW % 4 == 1 (rows input) a filter row's last tap would stand alone in its word: those taps are
// multiplied four rows at a time instead, one word of the last column (rows 4c .. 4c + 3) a dot
// product: a 5x5 filter takes 7 dot products an output, not 10.
// (1 or 0 in integer arithmetic: a select on a boolean specialization constant came out of glslang
// using that constant before defining it, which the driver's compiler refused)
const uint COLS = (1u - CL_IN) * (KW % 4u & 1u) * (1u - KW % 4u / 2u);
const uint RQ = KQ - COLS;                       // words of a filter row (taps in fours)
const uint CQW = COLS * ((KH + 3) / 4);          // words of the last column
const uint PIC = KH * RQ + CQW;                  // filter words of an input channel (rows input)
const uint PCW = CL_IN != 0 ? KH * KW * (CG / 4) : CG * PIC;      // filter words of a channel
// filter words of a block of MB channels: odd where a workgroup holds several blocks, whose
// invocations then read their blocks' words from distinct banks
const uint BWORDS = MB * PCW | (BLOCKS > 1 ? 1u : 0u);
const uint FW = BLOCKS * BWORDS;                 // filter words of a workgroup's channels
const uint LAST_W = (MB + 3) / 4 - 1;            // CL_OUT: the last of a pixel's words an invocation holds

layout(std430, binding = 0) readonly buffer X16 { uvec4 x_vec4[]; };  // CL_IN: the input, 16 bytes a load
layout(std430, binding = 3) writeonly buffer Y4 { uvec4 y_vec4[]; };   // D2S: the float image, 16 bytes a store; CL_VEC
layout(std430, binding = 3) writeonly buffer Y8 { uvec2 y_vec2[]; };   // CL_VEC: 8 channels a store
shared uint wsh[FW];                             // [block][channel][its PCW words] (see the prologue)
uint t, g, cb, m0, mcount;                       // the invocation, its group, block and channels
int s, xzp;                                      // the filter bytes' shift, the input zero point
shared int corr_sh[BLOCKS * MB];                 // the sums' start: the bias - xZP sum (w - s) - c K xZP

// An output channel's numbers for requantizing its sums: cw (its window sums' factor) and multiplier.
struct Chan {
    int cw;
    float mult;
};

Chan chan(uint m) {
    return Chan(s - int(params[2 + p.out_sizes.y + m]), uintBitsToFloat(params[2 + m]));
}

// The requantized bits (requantized_bits) of a channel's sum a, which holds the bias (corr_sh), and
// window sum r.
uint out_bits(int a, int r, Chan c, Requant rq) { return requantized_bits(a + c.cw * r, c.mult, rq); }

// The word of four channels 4k .. 4k + 3 of an invocation's MB (ch) for their sums a (window sum r).
uint cl_word(int a[4], int r, uint k, Chan ch[MB], Requant rq) {
    uint word = 0;
    [[unroll]] for (uint b = 0; b < 4; ++b) word += out_bits(a[b], r, ch[4 * k + b], rq) << (8 * b);
    return requantized_word(word, rq);
}

// D2S: an output's bits dequantized, float32(q - zero point) * DQ_SCALE, as dequantize_linear.comp
// computes it (q: the bits' value, the output zero point yzp added back).
float out_float(uint bits, int yzp) {
    int q = int(bits - 0x4B400000u) + yzp;
    precise float f = float(q - int(DQ_ZP_BITS)) * uintBitsToFloat(DQ_SCALE);
    return f;
}

// D2S: the float image's index of output (n, m, oh, ow) after the DepthToSpace.
uint float_at(uint n, uint m, uint oh, uint ow) {
    uint M = p.out_sizes.y, C = M / (D2S * D2S), FH = p.out_sizes.z * D2S, FWD = p.out_sizes.w * D2S;
    uint c = D2S_CRD != 0 ? m / (D2S * D2S) : m % C;
    uint blk = D2S_CRD != 0 ? m % (D2S * D2S) : m / C;            // (row, column) in the block
    return ((n * C + c) * FH + oh * D2S + blk / D2S) * FWD + ow * D2S + blk % D2S;
}

// The invocation's OPT outputs of item (a row's OPT columns, of one image) for its MB channels.
void outputs(uint item, uint items) {
    if (item >= items) return;
    uint OH = p.out_sizes.z, OW = p.out_sizes.w, M = p.out_sizes.y;
    uint per_row = (OW + OPT - 1) / OPT;
    uint q = item % per_row, r = item / per_row;
    uint oh = r % OH, n = r / OH;
    uint ow0 = q * OPT;
    int W = int(p.in_sizes.w);
    int xa = int(ow0 * SX) - int(p.start_pad.y) - int(SHIFT);  // a multiple of 4
    uint xa_word = uint(xa >> 2);
    uint zp_word = (uint(xzp) & 0xFFu) * 0x01010101u;          // four bytes of the input zero point
    bool inside[WORDS];                                        // which window words lie in the row
    uint keep[WORDS];                                          // their bytes in the row
    [[unroll]] for (uint w = 0; w < WORDS; ++w) {
        int x = xa + int(4 * w);
        inside[w] = x >= 0 && x < W;
        int bytes = clamp(W - x, 0, 4);
        keep[w] = !inside[w] ? 0u : bytes == 4 ? 0xFFFFFFFFu : (1u << (8 * bytes)) - 1u;
    }
    bool ws = WSUM != 0 && params[2 + 3 * M] != 0u;
    int acc[MB][OPT];
    int rs[OPT];
    [[unroll]] for (uint mb = 0; mb < MB; ++mb)
        [[unroll]] for (uint j = 0; j < OPT; ++j) acc[mb][j] = corr_sh[cb * MB + mb];
    [[unroll]] for (uint j = 0; j < OPT; ++j) rs[j] = 0;
    int y0 = int(oh * p.conv_stride.x) - int(p.start_pad.x);
    if (CL_IN != 0) {
        int x0 = int(ow0 * SX) - int(p.start_pad.y);
        uint xbase = n * p.in_strides.x + g * p.cg;            // bytes; a multiple of 16
        [[unroll]] for (uint kh = 0; kh < KH; ++kh) {
            int y = y0 + int(kh * p.dilation.x);
            bool row_in = y >= 0 && y < int(p.in_sizes.z);
            for (uint v = 0; v < CG / 16; ++v) {
                uvec4 xv[WINC];                                // the window row's positions, channels 16v..
                [[unroll]] for (uint c = 0; c < WINC; ++c) {
                    int x = x0 + int(c);
                    xv[c] = row_in && x >= 0 && x < W
                        ? x_vec4[(xbase + uint(y) * p.in_strides.z + uint(x) * p.in_strides.w) / 16 + v] : uvec4(zp_word);
                }
                if (ws) {
                    [[unroll]] for (uint j = 0; j < OPT; ++j)
                        [[unroll]] for (uint kw = 0; kw < KW; ++kw)
                            [[unroll]] for (uint e = 0; e < 4; ++e) rs[j] += dot_mask(xv[j * SX + kw][e], 0x01010101u);
                }
                [[unroll]] for (uint mb = 0; mb < MB; ++mb)
                    [[unroll]] for (uint kw = 0; kw < KW; ++kw)
                        [[unroll]] for (uint e = 0; e < 4; ++e) {
                            uint wv = wsh[cb * BWORDS + ((mb * KH + kh) * KW + kw) * (CG / 4) + 4 * v + e];
                            [[unroll]] for (uint j = 0; j < OPT; ++j) acc[mb][j] += dot_w(xv[j * SX + kw][e], wv);
                        }
            }
        }
    } else for (uint ic = 0; ic < CG; ++ic) {
        uint xbase = n * p.in_strides.x + (g * p.cg + ic) * p.in_strides.y;
        uint colw[OPT];                                        // COLS: the last column's taps, four rows a word
        [[unroll]] for (uint j = 0; j < OPT; ++j) colw[j] = 0u;
        [[unroll]] for (uint kh = 0; kh < KH; ++kh) {
            int y = y0 + int(kh * p.dilation.x);
            bool row_in = y >= 0 && y < int(p.in_sizes.z);
            uint words[WORDS];
            [[unroll]] for (uint w = 0; w < WORDS; ++w) {
                uint raw = row_in && inside[w] ? x_words[((xbase + uint(y) * p.in_strides.z) >> 2) + xa_word + w] : 0u;
                uint k = row_in ? keep[w] : 0u;
                words[w] = (raw & k) | (zp_word & ~k);
            }
            uint xw[OPT][KQ];
            [[unroll]] for (uint j = 0; j < OPT; ++j) {
                [[unroll]] for (uint kq = 0; kq < RQ; ++kq) {
                    uint o = SHIFT + j * SX + 4 * kq;
                    xw[j][kq] = four_bytes(words[o / 4], words[min(o / 4 + 1, WORDS - 1)], o);
                }
                if (COLS != 0) {                               // the row's last tap into its column word
                    uint o = SHIFT + j * SX + 4 * RQ;
                    colw[j] = bitfieldInsert(colw[j], bitfieldExtract(words[min(o / 4, WORDS - 1)], int(8 * (o % 4)), 8),
                                             int(8 * (kh % 4)), 8);
                }
            }
            if (ws) {
                [[unroll]] for (uint j = 0; j < OPT; ++j)
                    [[unroll]] for (uint kq = 0; kq < RQ; ++kq)
                        rs[j] += dot_mask(xw[j][kq], kq + 1 == KQ ? LAST_MASK : 0x01010101u);
            }
            [[unroll]] for (uint mb = 0; mb < MB; ++mb)
                [[unroll]] for (uint kq = 0; kq < RQ; ++kq) {
                    uint wv = wsh[cb * BWORDS + (mb * CG + ic) * PIC + kh * RQ + kq];
                    [[unroll]] for (uint j = 0; j < OPT; ++j) acc[mb][j] += dot_w(xw[j][kq], wv);
                }
            if (COLS != 0 && (kh % 4 == 3 || kh + 1 == KH)) {  // a column word's rows are in (bytes past: 0)
                if (ws)
                    [[unroll]] for (uint j = 0; j < OPT; ++j) rs[j] += dot_mask(colw[j], 0x01010101u);
                [[unroll]] for (uint mb = 0; mb < MB; ++mb) {
                    uint wv = wsh[cb * BWORDS + (mb * CG + ic) * PIC + KH * RQ + kh / 4];
                    [[unroll]] for (uint j = 0; j < OPT; ++j) acc[mb][j] += dot_w(colw[j], wv);
                }
                [[unroll]] for (uint j = 0; j < OPT; ++j) colw[j] = 0u;
            }
        }
    }

    // requantized as requantize_biased does (requantized_bits, qconv_common.glsl)
    int yzp = int(params[1]);
    Requant rq = requant_for(yzp);
    Chan ch[MB];
    [[unroll]] for (uint mb = 0; mb < MB; ++mb) ch[mb] = chan(m0 + min(mb, mcount - 1));
    if (CL_OUT != 0) {
        [[unroll]] for (uint j = 0; j < OPT; ++j) {
            // output j's channels m0 + 4k .. + 3 (the array's size and indices valid for every MB once
            // specialized, the branches not taken included: the validation layer checks them)
            uint w[(MB + 3) / 4];
            [[unroll]] for (uint k = 0; k < MB / 4; ++k) {
                int a[4];
                [[unroll]] for (uint b = 0; b < 4; ++b) a[b] = acc[4 * k + b][j];
                w[k] = cl_word(a, rs[j], k, ch, rq);
            }
            if (ow0 + j >= OW) break;
            if (CL_VEC != 0 && MB == 8)
                y_vec2[output_offset(n, m0, oh, ow0 + j) >> 3] = uvec2(w[0], w[LAST_W]);
            else if (CL_VEC != 0 && MB == 16)
                y_vec4[output_offset(n, m0, oh, ow0 + j) >> 4] = uvec4(w[0], w[min(1u, LAST_W)], w[min(2u, LAST_W)], w[LAST_W]);
            else
                [[unroll]] for (uint k = 0; k < MB / 4; ++k) y_words[output_offset(n, m0 + 4 * k, oh, ow0 + j) >> 2] = w[k];
        }
        return;
    }
    if (D2S != 0) {
        float f[MB][OPT];
        [[unroll]] for (uint mb = 0; mb < MB; ++mb)
            [[unroll]] for (uint j = 0; j < OPT; ++j) f[mb][j] = out_float(out_bits(acc[mb][j], rs[j], ch[mb], rq), yzp);
        if (MB == D2S * D2S && M == MB) {
            // One image channel, the invocation holding its every channel (either order: m = D2S * row
            // + column in the block): each of its D2S rows' OPT * D2S floats, 16 bytes a store (OW and
            // OPT multiples of 4: whole, aligned pieces).
            uint left = (OW - ow0) * D2S;                          // floats of the row from ow0 on
            [[unroll]] for (uint i = 0; i < D2S; ++i) {
                uint at = float_at(n, i * D2S, oh, ow0) / 4;
                [[unroll]] for (uint w4 = 0; w4 < OPT * D2S / 4; ++w4) {
                    if (4 * w4 >= left) break;
                    uvec4 v;
                    [[unroll]] for (uint e = 0; e < 4; ++e) {
                        uint k = 4 * w4 + e;
                        v[e] = floatBitsToUint(f[i * D2S + k % D2S][k / D2S]);
                    }
                    y_vec4[at + w4] = v;
                }
            }
            return;
        }
        [[unroll]] for (uint mb = 0; mb < MB; ++mb) {
            if (mb >= mcount) break;
            [[unroll]] for (uint j = 0; j < OPT; ++j) {
                if (ow0 + j >= OW) break;
                y_words[float_at(n, m0 + mb, oh, ow0 + j)] = floatBitsToUint(f[mb][j]);
            }
        }
        return;
    }
    [[unroll]] for (uint mb = 0; mb < MB; ++mb) {
        if (mb >= mcount) break;
        uint obase = output_offset(n, m0 + mb, oh, ow0) >> 2;
        [[unroll]] for (uint w = 0; w < OPT / 4; ++w) {
            if (ow0 + 4 * w >= OW) break;                      // OW is a multiple of 4
            uint word = 0;
            [[unroll]] for (uint b = 0; b < 4; ++b)
                word += out_bits(acc[mb][4 * w + b], rs[4 * w + b], ch[mb], rq) << (8 * b);
            y_words[obase + w] = requantized_word(word, rq);
        }
    }
}

// WALK: output row oh's MB sums a (window sums r) requantized and stored for this lane's column ow,
// as outputs() stores them; a lane past the output's last column stores nothing (its sums are the
// zero point's), and with 8-bit rows each lane whose column is a multiple of 4 stores the word of its
// own and the next three lanes' bytes.
void store_walked(uint n, uint oh, uint ow, int a[MB], int r) {
    bool live = ow < p.out_sizes.w;
    int yzp = int(params[1]);
    Requant rq = requant_for(yzp);
    Chan ch[MB];
    [[unroll]] for (uint mb = 0; mb < MB; ++mb) ch[mb] = chan(m0 + mb);
    if (D2S != 0) {
        [[unroll]] for (uint mb = 0; mb < MB; ++mb) {
            float f = out_float(out_bits(a[mb], r, ch[mb], rq), yzp);
            if (live) y_words[float_at(n, m0 + mb, oh, ow)] = floatBitsToUint(f);
        }
        return;
    }
    if (CL_OUT != 0) {
        [[unroll]] for (uint k = 0; k < MB / 4; ++k) {
            int a4[4];
            [[unroll]] for (uint b = 0; b < 4; ++b) a4[b] = a[4 * k + b];
            uint word = cl_word(a4, r, k, ch, rq);
            if (live) y_words[output_offset(n, m0 + 4 * k, oh, ow) >> 2] = word;
        }
        return;
    }
    uint lane = gl_SubgroupInvocationID;
    [[unroll]] for (uint mb = 0; mb < MB; ++mb) {
        uint bits = out_bits(a[mb], r, ch[mb], rq);
        uint word = bits;
        [[unroll]] for (uint b = 1; b < 4; ++b) word += subgroupShuffle(bits, min(lane + b, gl_SubgroupSize - 1)) << (8 * b);
        if (live && lane % 4 == 0) y_words[output_offset(n, m0 + mb, oh, ow) >> 2] = requantized_word(word, rq);
    }
}

// WALK: subgroup sg's WALK output rows (a band) of S = gl_SubgroupSize output columns (a segment) of
// one image, lane l computing column S x segment + l for the MB channels. Input row y's positions
// x0 + l and x0 + S + l (l < KW - 1) are loaded once; tap kw of lane l is position x0 + l + kw, lane
// (l + kw) mod S's first or (past the segment) second. Row y completes output row y + pad - (KH - 1),
// whose sums go out; each other sum moves one row on (acc[k]: output row y + pad - (KH - 1) + k).
void walk(uint sg) {
    uint S = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
    uint N = p.out_sizes.x, M = p.out_sizes.y, OH = p.out_sizes.z, OW = p.out_sizes.w;
    uint segs = (OW + S - 1) / S, bands = (OH + WALK - 1) / WALK;
    uint seg = sg % segs, r = sg / segs, band = r % bands, n = r / bands;
    if (n >= N) return;                                        // uniform across the subgroup
    uint ow = seg * S + lane, oh0 = band * WALK, rows = min(WALK, OH - oh0) + KH - 1;
    int W = int(p.in_sizes.w), H = int(p.in_sizes.z);
    int xa = int(seg * S + lane) - int(p.start_pad.y), xb = xa + int(S);
    bool a_in = xa >= 0 && xa < W, b_in = lane + 1 < KW && xb >= 0 && xb < W;
    uint xbase = n * p.in_strides.x + g * p.cg;                // bytes; a multiple of 16
    uvec4 zp4 = uvec4((uint(xzp) & 0xFFu) * 0x01010101u);
    bool ws = WSUM != 0 && params[2 + 3 * M] != 0u;
    int acc[KH][MB], rs[KH];
    [[unroll]] for (uint k = 0; k < KH; ++k) {
        rs[k] = 0;
        [[unroll]] for (uint mb = 0; mb < MB; ++mb) acc[k][mb] = corr_sh[mb];
    }
    int y = int(oh0) - int(p.start_pad.x);
    for (uint i = 0; i < rows; ++i, ++y) {
        bool row_in = y >= 0 && y < int(H);
        int row_sum = 0;
        for (uint v = 0; v < CG / 16; ++v) {
            uvec4 here = row_in && a_in ? x_vec4[(xbase + uint(y) * p.in_strides.z + uint(xa) * p.in_strides.w) / 16 + v] : zp4;
            uvec4 past = row_in && b_in ? x_vec4[(xbase + uint(y) * p.in_strides.z + uint(xb) * p.in_strides.w) / 16 + v] : zp4;
            [[unroll]] for (uint kw = 0; kw < KW; ++kw) {
                uvec4 xk = kw == 0 ? here : subgroupShuffle(lane < kw ? past : here, (lane + kw) & (S - 1));
                if (ws)
                    [[unroll]] for (uint e = 0; e < 4; ++e) row_sum += dot_mask(xk[e], 0x01010101u);
                [[unroll]] for (uint k = 0; k < KH; ++k)
                    [[unroll]] for (uint mb = 0; mb < MB; ++mb) {
                        uint at = ((mb * KH + KH - 1 - k) * KW + kw) * (CG / 4) + 4 * v;
                        [[unroll]] for (uint e = 0; e < 4; ++e) acc[k][mb] += dot_w(xk[e], wsh[at + e]);
                    }
            }
        }
        if (i + 1 >= KH) store_walked(n, oh0 + i + 1 - KH, ow, acc[0], rs[0] + row_sum);
        [[unroll]] for (uint k = 0; k + 1 < KH; ++k) {
            rs[k] = rs[k + 1] + row_sum;
            [[unroll]] for (uint mb = 0; mb < MB; ++mb) acc[k][mb] = acc[k + 1][mb];
        }
        rs[KH - 1] = 0;
        [[unroll]] for (uint mb = 0; mb < MB; ++mb) acc[KH - 1][mb] = corr_sh[mb];
    }
}

void main() {
    t = gl_LocalInvocationID.x;
    uint OW = p.out_sizes.w, M = p.out_sizes.y;
    uint items = p.out_sizes.x * p.out_sizes.z * ((OW + OPT - 1) / OPT);   // invocations of one channel block
    uint per_wg = gl_WorkGroupSize.x / BLOCKS;                 // of them a tile
    uint tiles = (items + per_wg - 1) / per_wg;
    uint runs = (tiles + TILES - 1) / TILES;                   // workgroups of one channel block
    uint blocks = (p.mg + MB * BLOCKS - 1) / (MB * BLOCKS);    // workgroups' channel blocks of a group
    uint wg = p.first / gl_WorkGroupSize.x + gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    uint per_wg_sg = gl_WorkGroupSize.x / gl_SubgroupSize;      // WALK: subgroups a workgroup
    if (WALK != 0)
        runs = (p.out_sizes.x * ((p.out_sizes.z + WALK - 1) / WALK) * ((OW + gl_SubgroupSize - 1) / gl_SubgroupSize)
                + per_wg_sg - 1) / per_wg_sg;
    uint run = wg % runs, blk = wg / runs;
    g = blk / blocks;
    if (g >= M / p.mg) return;                                 // uniform across the workgroup
    uint wm0 = g * p.mg + (blk % blocks) * MB * BLOCKS;        // the workgroup's first output channel
    uint wcount = min(MB * BLOCKS, (g + 1) * p.mg - wm0);
    s = W_SIGNED != 0 ? 0 : 128;
    xzp = int(params[0]);

    for (uint e = t; e < FW; e += gl_WorkGroupSize.x) {
        uint r = e % BWORDS, mb = e / BWORDS * MB + r / PCW, i = r % PCW;
        uint word = 0;
        if (r < MB * PCW && mb < wcount) {
            uint base = (wm0 + mb) * p.w_strides.x;
            [[unroll]] for (uint b = 0; b < 4; ++b) {
                // CL_IN: word i holds tap i / (CG / 4)'s channels 4 (i % (CG / 4)) + b; else input
                // channel i / PIC's word r = i % PIC: filter row r / RQ's taps 4 (r % RQ) + b, or
                // (COLS, r >= KH x RQ) the last column's rows 4 (r - KH x RQ) + b
                uint r = i % PIC;
                bool col = r >= KH * RQ;
                uint ic = CL_IN != 0 ? 4 * (i % (CG / 4)) + b : i / PIC;
                uint kh = CL_IN != 0 ? i / (CG / 4) / KW : col ? 4 * (r - KH * RQ) + b : r / RQ;
                uint kw = CL_IN != 0 ? i / (CG / 4) % KW : col ? KW - 1 : 4 * (r % RQ) + b;
                if (kw < KW && kh < KH)
                    word |= (uint(load_w(base + ic * p.w_strides.y + kh * p.w_strides.z + kw * p.w_strides.w) - s)
                             & 0xFFu) << (8 * b);
            }
        }
        wsh[e] = word;
    }
    barrier();
    if (t < MB * BLOCKS) {
        int sum_w = 0;
        uint at = t / MB * BWORDS + t % MB * PCW;
        for (uint e = 0; e < PCW; ++e) sum_w += sdot(int(wsh[at + e]), 0x01010101, 0);
        int cw = s - int(params[2 + M + min(wm0 + t, M - 1)]);
        corr_sh[t] = -xzp * sum_w - cw * int(CG * KH * KW) * xzp + int(params[2 + 2 * M + min(wm0 + t, M - 1)]);
    }
    barrier();

    cb = t % BLOCKS;                                           // the invocation's block of the workgroup's
    m0 = wm0 + cb * MB;                                        // its first output channel
    mcount = min(MB, (g + 1) * p.mg - min(m0, (g + 1) * p.mg));
    if (mcount == 0) return;
    if (WALK != 0) {
        walk(run * per_wg_sg + gl_SubgroupID);
        return;
    }
    for (uint tile = run * TILES; tile < min(tiles, run * TILES + TILES); ++tile)
        outputs(tile * per_wg + t / BLOCKS, items);
}
