#version 450
// QUANTIZED_LINEAR_CONVOLUTION for groups with few output channels (at most 16; a last layer with 4)
// on int8 cooperative matrices, pixels as the matrices' rows: one group, stride and dilation 1, a
// channels-last input as conv.coopmat.halo reads it (channel stride 1, Cg a multiple of 32, the
// other strides multiples of 16 bytes). Each subgroup computes a run of 32 neighbouring output
// pixels of one row for every output channel: it stages its KH input rows' 32 + KW - 1 positions in
// its own part of shared memory (shifted to int8, the padding byte outside the input), then for each
// tap and 32-channel chunk multiplies two 16-pixel A fragments read from there at the tap's offset
// by the packed filter's B fragment (the filter's rows are B's columns: qconv_packed.glsl's Wp, its
// 16 rows staged in shared memory once a workgroup); a subgroup computes RUNS runs one after the
// other. Packed 4 x 8-bit dot products, which conv.dot spends on such layers, run far below the
// matrices' rate on the GPUs that have both; on the H200 this kernel still measured slower than
// conv.dot.nhwc on the ESPCN's last layer (docs/kernels.md), so it runs only where chosen.
// The sums go through the subgroup's stage (the window's memory) to their pixel's lane, are
// requantized as qlinear_conv_coopmat.comp requantizes them and stored as whole words: a
// channels-last output four channels of a pixel a word (OUT_CL), else output rows of whole words,
// four pixels of a channel a word. With D2S (conv.coopmat.few.float: the ONNX runner's
// QLinearConv -> [DepthToSpace ->] DequantizeLinear) each output is dequantized instead, as
// conv.dot.float does, and stored as a float at its place after a DepthToSpace of block D2S.

#extension GL_GOOGLE_include_directive : require
#ifndef COOPMAT_EMULATED
#extension GL_KHR_cooperative_matrix : require
#endif
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0) in;   // whole subgroups of 32
#include "qconv_common.glsl"
#include "qconv_packed.glsl"      // Wp's geometry (WM_SPEC 1: 32-row filter tiles; PACKED_OUT, SPLIT unused)
layout(std430, binding = 0) readonly buffer X4 { uvec4 xp[]; };
layout(std430, binding = 1) readonly buffer W4 { uvec4 wp[]; };

layout(constant_id = 10) const uint CQ = 2;       // 16-byte vectors of a position's channels (Cg / 16)
layout(constant_id = 12) const uint WSUM = 1;     // 0: no window sums ever needed (qlinear_conv_coopmat.comp's)
layout(constant_id = 13) const uint OUT_CL = 0;   // 1: a channels-last output (whole-word strides, Mg in fours)
layout(constant_id = 14) const uint RUNS = 1;     // runs a subgroup computes one after the other
// 0: the 8-bit output; else conv.dot.float's float32 image, block D2S, its order, scale bits, zero point's
layout(constant_id = 15) const uint D2S = 0;
layout(constant_id = 16) const uint D2S_CRD = 0;
layout(constant_id = 17) const uint DQ_SCALE = 0;
// (its bits: SwiftShader read a negative int specialization constant as 0 here)
layout(constant_id = 18) const uint DQ_ZP_BITS = 0;

const uint RUN = 32;                              // output pixels a subgroup
const uint TW = RUN + KW - 1;                     // input positions a window row
const uint PS = CQ + 1;                           // uvec4 a position (one of padding: an odd stride keeps
                                                  // a fragment's 16-byte rows in distinct banks)
const uint WINDOW = KH * TW * PS;
const uint STAGE_ROW = 20;                        // ints a pixel's row of the stage (16 channels, 4 of padding)
const uint STAGE = RUN * STAGE_ROW / 4;           // uvec4 of a stage: the run's sums, then its window sums
const uint SUB = WINDOW > 2 * STAGE ? WINDOW : 2 * STAGE;   // uvec4 a subgroup
const uint SUBGROUPS = gl_WorkGroupSize.x / 32;
shared uvec4 Xs[SUBGROUPS * SUB];
const uint KQ = KH * KW * CQ;                     // uvec4 of a filter row's taps
const uint BQ = KQ | 1u;                          // a row of Bs (odd, as PS)
shared uvec4 Bs[16 * BQ];                         // Bs[m][k]: the filter rows of output channels 0-15
const uint WV = KH * TW * CQ;                     // vectors of a window
const uint LOADS = (WV + 31) / 32;                // of them an invocation's
layout(std430, binding = 3) writeonly buffer Y2 { uvec2 y_vec2[]; };   // D2S 2, CRD: a block row's two floats
shared int cb_sh[16], cw_sh[16];                  // channel m's bias (corrected: Wp's corr[m] added), cw
shared float mult_sh[16];                         // its multiplier

#ifdef COOPMAT_EMULATED
#define COOPMAT_EMU_A Xs
#define COOPMAT_EMU_B Bs
#include "coopmat_emulation.glsl"
#define STORE_STAGE(m, at) coopMatStoreWords(m, Xs, (at) * 4, STAGE_ROW)
#define UNROLL_REAL
#else
#define MAT_A coopmat<int8_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA>
#define MAT_B coopmat<int8_t, gl_ScopeSubgroup, 32, 16, gl_MatrixUseB>
#define MAT_C coopmat<int32_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
#define MAT_C_ZERO MAT_C(0)
#define MAT_B_ONES MAT_B(int8_t(1))
#define SUBGROUP_ID gl_SubgroupID
#define SUBGROUP_LANE gl_SubgroupInvocationID
#define SUBGROUP_BARRIER() subgroupBarrier()
#define SUBGROUP_MEMORY_BARRIER_SHARED() subgroupMemoryBarrierShared()
#define STORE_STAGE(m, at) coopMatStore(m, Xs, at, STAGE_ROW / 4, gl_CooperativeMatrixLayoutRowMajor)
#define UNROLL_REAL [[unroll]]
#endif

// The bits of channel m's output q for sum a (window sum csum; the output zero point yzp) dequantized,
// float32(q - zero point) * DQ_SCALE, as conv.dot.float computes it.
uint dequantized(uint m, int a, int csum, Requant rq, int yzp) {
    int q = int(requantized_bits(a + cb_sh[m] + cw_sh[m] * csum, mult_sh[m], rq) - 0x4B400000u) + yzp;
    precise float f = float(q - int(DQ_ZP_BITS)) * uintBitsToFloat(DQ_SCALE);
    return floatBitsToUint(f);
}

// Into win: the window of the run whose first output pixel is ow0 on row oh of image n, shifted to
// int8 (the padding byte outside the input); neighbouring invocations take neighbouring vectors of a
// position, then positions.
void load_window(uint n, uint oh, uint ow0, out uvec4 win[LOADS]) {
    uint lane = SUBGROUP_LANE;
    uint flip4 = X_SIGNED != 0 ? 0u : 0x80808080u;
    uvec4 pad4 = uvec4(((params[0] & 0xFFu) * 0x01010101u) ^ flip4);
    int ih0 = int(oh) - int(p.start_pad.x), iw0 = int(ow0) - int(p.start_pad.y);
    [[unroll]] for (uint i = 0; i < LOADS; ++i) {
        uint e = lane + 32 * i, pos = e / CQ;
        int ih = ih0 + int(pos / TW), iw = iw0 + int(pos % TW);
        bool inside = e < WV && uint(ih) < p.in_sizes.z && uint(iw) < p.in_sizes.w;
        uint at = inside ? (n * p.in_strides.x + uint(ih) * p.in_strides.z + uint(iw) * p.in_strides.w) / 16 + e % CQ : 0u;
        win[i] = inside ? xp[at] ^ flip4 : pad4;
    }
}

// Run `run`'s image n, output row oh and first column ow0 (per_row runs a row).
void run_origin(uint run, uint per_row, out uint n, out uint oh, out uint ow0) {
    uint r = run / per_row;
    n = r / p.out_sizes.z;
    oh = r % p.out_sizes.z;
    ow0 = (run % per_row) * RUN;
}

// The subgroup's run of 32 output pixels (its first, ow0, on row oh of image n), its window stored to
// the subgroup's memory at uvec4 `base` (its stage after the taps); `live`: its outputs stored. (The
// next run's window loaded into registers while this one multiplies took 116 registers an invocation
// against 62, and longer: 197.8 us against 142.3 with 8 subgroups of 4 runs on the ESPCN's last layer at
// 1080x1920 on the H200.)
void tile(uint n, uint oh, uint ow0, bool live, uint base) {
    uint lane = SUBGROUP_LANE;
    uint OH = p.out_sizes.z, OW = p.out_sizes.w, M = p.out_sizes.y;
    uvec4 win[LOADS];
    load_window(n, oh, ow0, win);                     // every load issued before the first store
    SUBGROUP_BARRIER();                               // the run before's stage is read
    [[unroll]] for (uint i = 0; i < LOADS; ++i) {
        uint e = lane + 32 * i;
        if (e < WV) Xs[base + (e / CQ) * PS + e % CQ] = win[i];
    }
    SUBGROUP_MEMORY_BARRIER_SHARED();
    SUBGROUP_BARRIER();

    // the taps: B (32 channels of the tap x 16 output channels) from the filter rows, k = tap * Cg + c
    bool wsum = WSUM != 0 && window_sums_needed() != 0;
    MAT_C acc[2] = { MAT_C_ZERO, MAT_C_ZERO };
    MAT_C sums[2] = { MAT_C_ZERO, MAT_C_ZERO };
    MAT_B ones = MAT_B_ONES;
    UNROLL_REAL for (uint tap = 0; tap < KH * KW; ++tap) {
        uint kh = tap / KW, kw = tap % KW;
        [[unroll]] for (uint c = 0; c < CQ / 2; ++c) {
            MAT_B b;
            coopMatLoad(b, Bs, tap * CQ + 2 * c, BQ, gl_CooperativeMatrixLayoutColumnMajor);
            [[unroll]] for (uint j = 0; j < 2; ++j) {
                MAT_A a;
                coopMatLoad(a, Xs, base + (kh * TW + kw + 16 * j) * PS + 2 * c, PS, gl_CooperativeMatrixLayoutRowMajor);
                acc[j] = coopMatMulAdd(a, b, acc[j]);
                if (wsum) sums[j] = coopMatMulAdd(a, ones, sums[j]);
            }
        }
    }
    SUBGROUP_BARRIER();                               // every lane's window reads are done: the stage is its memory

    // Epilogue: the run's sums to the stage, pixel r's row at r * STAGE_ROW ints (its window sums, in
    // every column of theirs, after them); lane l takes pixel l (words of four pixels: see below)
    [[unroll]] for (uint j = 0; j < 2; ++j) {
        STORE_STAGE(acc[j], base + j * 16 * STAGE_ROW / 4);
        if (wsum) STORE_STAGE(sums[j], base + STAGE + j * 16 * STAGE_ROW / 4);
    }
    SUBGROUP_MEMORY_BARRIER_SHARED();
    SUBGROUP_BARRIER();
    int csum = wsum ? int(Xs[base + STAGE + lane * STAGE_ROW / 4].x) : 0;
    uint mg = p.mg;
    int yzp = int(params[1]);
    Requant rq = requant_for(yzp);
    uint ow = ow0 + lane;
    if (D2S != 0 || OUT_CL != 0) {
        if (!live || ow >= OW) return;
        #define V(m) int(Xs[base + lane * STAGE_ROW / 4 + (m) / 4][(m) % 4])
        if (D2S != 0) {
            uint C = M / (D2S * D2S), FH = OH * D2S, FWD = OW * D2S;    // the float image's channels, rows, columns
            // channel m's float at ((n C + c) FH + oh D2S + blk / D2S) FWD + ow D2S + blk % D2S
            #define FLOAT_AT(m, c, blk) (((n * C + (c)) * FH + oh * D2S + (blk) / D2S) * FWD + ow * D2S + (blk) % D2S)
            if (D2S == 2 && D2S_CRD != 0) {
                // column-row-depth, block 2: channels 2k and 2k + 1 side by side in one block row
                [[unroll]] for (uint m = 0; m < 16; m += 2) {
                    if (m >= mg) break;
                    y_vec2[FLOAT_AT(m, m / 4, m % 4) / 2] = uvec2(dequantized(m, V(m), csum, rq, yzp),
                                                                  dequantized(m + 1, V(m + 1), csum, rq, yzp));
                }
                return;
            }
            [[unroll]] for (uint m = 0; m < 16; ++m) {
                if (m >= mg) break;
                uint c = D2S_CRD != 0 ? m / (D2S * D2S) : m % C;
                uint blk = D2S_CRD != 0 ? m % (D2S * D2S) : m / C;        // (row, column) in the block
                y_words[FLOAT_AT(m, c, blk)] = dequantized(m, V(m), csum, rq, yzp);
            }
            return;
        }
        [[unroll]] for (uint k = 0; k < 4; ++k) {
            if (4 * k >= mg) break;
            uint word = 0;
            [[unroll]] for (uint b = 0; b < 4; ++b) {
                uint m = 4 * k + b;
                word += requantized_bits(V(m) + cb_sh[m] + cw_sh[m] * csum, mult_sh[m], rq) << (8 * b);
            }
            y_words[output_offset(n, 4 * k, oh, ow) >> 2] = requantized_word(word, rq);
        }
        return;
    }
    // Output rows of whole words (OW a multiple of 4): invocation e of the subgroup's 8 x mg takes
    // channel e / 8's pixels 4 (e % 8) .. + 3
    for (uint e = lane; e < 8 * mg; e += 32) {
        uint m = e / 8, w = e % 8;
        uint word = 0;
        [[unroll]] for (uint i = 0; i < 4; ++i) {
            int a = int(Xs[base + ((4 * w + i) * STAGE_ROW + m) / 4][m % 4]);
            int ws = wsum ? int(Xs[base + STAGE + (4 * w + i) * STAGE_ROW / 4].x) : 0;
            word += requantized_bits(a + cb_sh[m] + cw_sh[m] * ws, mult_sh[m], rq) << (8 * i);
        }
        if (live && ow0 + 4 * w < OW)
            y_words[output_offset(n, m, oh, ow0 + 4 * w) >> 2] = requantized_word(word, rq);
    }
}

void main() {
    uint sub = SUBGROUP_ID, M = p.out_sizes.y;
    // the filter rows (rows past the group's channels are zeros in Wp: its tiles have 32) and the
    // channels' numbers
    uint wrow = packed_header_words() / 4, kq = packed_kp() / 16;
    for (uint e = gl_LocalInvocationID.x; e < 16 * KQ; e += gl_WorkGroupSize.x)
        Bs[(e / KQ) * BQ + e % KQ] = wp[wrow + (e / KQ) * kq + e % KQ];
    if (gl_LocalInvocationID.x < 16) {
        uint m = min(gl_LocalInvocationID.x, M - 1);
        cb_sh[gl_LocalInvocationID.x] = int(w_words[m]) + int(params[2 + 2 * M + m]);
        cw_sh[gl_LocalInvocationID.x] = int(w_words[M + m]);
        mult_sh[gl_LocalInvocationID.x] = uintBitsToFloat(params[2 + m]);
    }
    memoryBarrierShared();
    barrier();

    // RUNS neighbouring runs a subgroup; one past the last run computes the last one again and stores
    // nothing (the emulation's subgroup barriers are the workgroup's: every invocation reaches them)
    uint per_row = (p.out_sizes.w + RUN - 1) / RUN;
    uint runs = p.out_sizes.x * p.out_sizes.z * per_row;
    uint wg = p.first / gl_WorkGroupSize.x + gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    uint first = (wg * SUBGROUPS + sub) * RUNS;
    for (uint k = 0; k < RUNS; ++k) {
        uint n, oh, ow0;
        run_origin(min(first + k, runs - 1), per_row, n, oh, ow0);
        tile(n, oh, ow0, first + k < runs, sub * SUB);
    }
}
