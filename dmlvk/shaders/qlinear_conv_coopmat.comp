#version 450
// QUANTIZED_LINEAR_CONVOLUTION on the int8 tensor units: an implicit GEMM per group,
// C[m, pixel] = sum_k Wp[m, k] * Xp[k, pixel], multiplied by subgroup-scope cooperative matrices
// (int8 x int8 -> int32, 16 x 16 x 32) over the repacked operands of qconv_packed.glsl, then
// corrected to the exact accumulator of spec 4.3 (qconv_pack_filter.comp gives the algebra):
//     acc = C + cw[m] * sum_k Xp[k, pixel] + corr[m]      (int32, wrapping)
// and requantized like the portable shaders. The window sums come from one more multiply per
// pixel fragment, by a matrix of ones, and only when some cw is nonzero.
//
// With SPLIT > 1 each workgroup multiplies one K slice and stores its int32 partial tile;
// qlinear_conv_splitk.comp finishes (small batches: more workgroups than output tiles).
//
// A workgroup is 8 subgroups of 32 invocations (the host uses this shader only where the
// subgroup size is 32) and computes a BM x 128 tile: subgroup (wm, wn) owns WM x 2 fragments.
// Each 64-byte K step is staged in shared memory, the next one's global loads (16 bytes per
// invocation and operand row) in flight while the current one is multiplied.
//
// With NHWC_INPUT (the input's channels contiguous, Cg a multiple of 32, its other strides multiples
// of 16 bytes) binding 0 is the input itself: each 16-byte piece of Xp a K step needs is read from
// the tap's input position and shifted like Xp, or is the padding byte's where the tap lies outside
// the input, so no packing kernel runs.
//
// With HALO (stride and dilation 1, the input read as with NHWC_INPUT, WM 1) a workgroup computes a
// tile of 8 output rows by 32 columns for all BM = 32 channels: it loads the tile's input window
// (8 + KH - 1 rows of 32 + KW - 1 positions, every channel of the group, CQ = Cg / 16 vectors a
// position) and the BM filter rows of Wp into shared memory once, then subgroup r multiplies row r of
// the tile, each tap's B fragments being the window read KW - 1 positions on, each A fragment the
// filter rows' columns of that tap. A 3x3 layer's input is read about 1.3 times instead of 9 times,
// and there is no K loop through global memory. With TILES > 1 (one group, one filter tile) a
// workgroup computes TILES tiles one after the other (tiles wg, wg + n, ... of its n workgroups): its
// filter rows loaded once, each next tile's window loaded into registers while the tile before
// multiplies, stored into Xs once that tile's epilogue is done with it. With AREG (a channels-last
// output) subgroup s multiplies rows 2 (s % 4) and that + 1 for the channels 16 (s / 4) ... + 15 instead,
// the A fragments of its channels held in registers, loaded once from the filter rows in As (AREG 2:
// from Wp, no filter rows in shared memory), each B fragment serving both rows' taps; no next window
// in registers then.
//
// HALO's channels-last outputs: with PACKED_OUT 3 stored whole words at a time
// (four channels of a pixel a word), with PACKED_OUT 4 (16-byte strides, Mg a multiple of 16)
// 16 bytes at a time (a fragment's 16 channels of a pixel, one lane a pixel). With LANES (HALO) they
// are requantized where the accumulators hold them, in each lane's own elements, and their bytes
// brought to the lanes that store them by subgroup shuffles, with no round trip through shared
// memory; this needs the accumulators' elements where coopmat_lanes.glsl says they are, which each
// subgroup checks first (else the stage, as without LANES).
//
// With COOPMAT_EMULATED (devices without VK_KHR_cooperative_matrix, lavapipe in CI) the same source
// runs on coopmat_emulation.glsl: the matrices, their loads, stores and multiply-adds, and
// "subgroups" of 32 invocations, emulated with shared memory and plain arithmetic.

#extension GL_GOOGLE_include_directive : require
#ifndef COOPMAT_EMULATED
#extension GL_KHR_cooperative_matrix : require
#endif
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_vote : require
#if defined(HALO) && !defined(COOPMAT_EMULATED)
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0) in;   // 256
#include "qconv_common.glsl"
#include "qconv_packed.glsl"
layout(std430, binding = 0) readonly buffer X4 { uvec4 xp[]; };
layout(std430, binding = 1) readonly buffer W4 { uvec4 wp[]; };
layout(std430, binding = 3) writeonly buffer Part { int part[]; };     // SPLIT > 1: the partials
layout(std430, binding = 3) writeonly buffer Y16 { uvec4 y_vec4[]; };  // PACKED_OUT = 2

const uint AS = BK / 16 + 1;      // uvec4 per shared row: the step's 64 bytes and 16 of padding
// 0: no window sums, their multiplies compiled out (the host knew the filter zero points when the
// operator was initialized, and they need none); else params[2 + 3M] says at each execution.
layout(constant_id = 12) const uint WSUM = 1;
#ifdef HALO
const uint HALO_ROWS = 8, HALO_COLS = 32;     // the output tile
const uint HH = HALO_ROWS + KH - 1, HWD = HALO_COLS + KW - 1;   // its input window
#endif
#ifdef HALO
// Tiles a workgroup computes one after the other: its filter rows loaded once where
// its tiles share them (one group, one filter tile), each later tile's window loaded into registers
// while the tile before multiplies (HALO_PREFETCH), stored once its epilogue is done.
layout(constant_id = 13) const uint TILES = 1;
#define HALO_PREFETCH 1
#else
const uint TILES = 1;
#endif
#ifdef HALO
// 1: the channels-last outputs (PACKED_OUT 3, 4) requantized in the accumulators' own lanes (see above)
layout(constant_id = 14) const uint LANES = 1;
// KSPLIT > 1 (HALO): the group's input channels taken in KSPLIT slices
// one after the other, the window and filter rows in shared memory a slice's (Cg / KSPLIT channels) at
// a time, each slice's loaded once the slice before has multiplied, the filter rows at every tile (no
// next window in registers): a smaller workgroup, so that an SM can hold more of them
layout(constant_id = 15) const uint KSPLIT = 1;
// 1 (HALO, KSPLIT 1, a channels-last output): subgroup s multiplies rows 2 (s % 4) and
// that + 1 of the tile for the 16 channels s / 4 (acc[r][j]: row r, columns j), each tap's A fragment
// held in its registers, loaded where they are new (once where a workgroup's tiles share them) from
// the filter rows in As, or with 2 straight from Wp, the filter rows never in shared memory (real
// matrices; emulated, each fragment is read from As where it is used), each B fragment the window's,
// read once for both rows
layout(constant_id = 16) const uint AREG = 0;
#else
const uint LANES = 0;
const uint KSPLIT = 1;
const uint AREG = 0;
#endif
#if   defined(HALO)
layout(constant_id = 10) const uint CQ = 4;   // 16-byte vectors of a position's channels (Cg / 16)
const uint CQW = CQ / KSPLIT;                 // of them in shared memory at a time (a slice's)
const uint PS = CQW + 1;                      // uvec4 a window position (one of padding: odd strides
const uint KQ = KH * KW * CQW, AQ = KQ + 1;   // keep the fragments' 16-byte rows in distinct banks)
shared uvec4 Xs[HH * HWD * PS];               // Xs[row][position][channels]: the tile's input window
const uint PRE = (HH * HWD * CQW + gl_WorkGroupSize.x - 1) / gl_WorkGroupSize.x;   // vectors an invocation loads
uvec4 pre[PRE];                               // HALO_PREFETCH: the next tile's, this invocation's
bool prefetched = false;
#if   defined(COOPMAT_EMULATED)
shared uvec4 As[BM * AQ];                     // As[m][k]: the tile's filter rows, k = tap * Cg + c
#else
// (AREG 1: read only into the subgroups' fragments where a workgroup's rows are new; AREG 2: none)
shared uvec4 As[AREG == 2 ? 1 : BM * AQ];
#endif
// LANES: the filter rows' channels' biases (corrected: Wp's corr added), cw and multipliers' bits,
// [0, BM), [BM, 2 BM), [2 BM, 3 BM), loaded with the rows (their latency off each epilogue)
shared uint ch_sh[3 * BM];
#else
shared uvec4 As[BM * AS];         // As[m][k]: row-major A
shared uvec4 Bs[BN * AS];         // Bs[pixel][k]: column-major B
#endif
// The epilogue's stage: one 16 x 16 int fragment per subgroup (with 8 x 32 tiles 320 ints, for
// channels-last outputs' columns 20 ints apart). With real matrices and no row tiles it
// is Bs's memory, free once the main loop is done (8 KiB less shared memory a workgroup: the ESPCN
// 3x3 64->32 layer took 130.7 us at 540x960 on the H200 against 141.3 with a stage of its own).
// With HALO it is the window's memory, emulated or not.
#if defined(HALO)
#define STAGE_MEM Xs
#elif !defined(COOPMAT_EMULATED)
#define STAGE_MEM Bs
#endif
#ifndef STAGE_MEM
shared int stage[8 * 256];
#define STAGE_STORE(m, at) coopMatStore(m, stage, at, 16, gl_CooperativeMatrixLayoutRowMajor)
#define STAGE(i) stage[i]
#define STAGE_SET(i, v) stage[i] = (v)
#define STAGE_ROW8(v, at) [[unroll]] for (uint e_ = 0; e_ < 8; ++e_) v[e_] = stage[(at) + e_];
#else
#ifdef COOPMAT_EMULATED
#define STAGE_STORE(m, at) coopMatStoreWords(m, STAGE_MEM, at, 16)
#else
#define STAGE_STORE(m, at) coopMatStore(m, STAGE_MEM, (at) / 4, 4, gl_CooperativeMatrixLayoutRowMajor)
#endif
#define STAGE(i) int(STAGE_MEM[(i) >> 2][(i) & 3])
#define STAGE_SET(i, v) STAGE_MEM[(i) >> 2][(i) & 3] = uint(v)
// v[0..7] = the 8 ints from `at` (a multiple of 4), read as two vectors
#define STAGE_ROW8(v, at) {                                                                    \
        uvec4 s0_ = STAGE_MEM[(at) >> 2], s1_ = STAGE_MEM[((at) >> 2) + 1];                     \
        [[unroll]] for (uint e_ = 0; e_ < 4; ++e_) { v[e_] = int(s0_[e_]); v[e_ + 4] = int(s1_[e_]); } \
    }
#endif

#ifdef COOPMAT_EMULATED
#if   defined(HALO)
#define COOPMAT_EMU_A As
#define COOPMAT_EMU_B Xs
#else
#define COOPMAT_EMU_A As
#define COOPMAT_EMU_B Bs
#endif
#include "coopmat_emulation.glsl"
#else
#define MAT_A coopmat<int8_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA>
#define MAT_B coopmat<int8_t, gl_ScopeSubgroup, 32, 16, gl_MatrixUseB>
#define MAT_C coopmat<int32_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
#define MAT_C_ZERO MAT_C(0)
#define MAT_A_ONES MAT_A(int8_t(1))
#define SUBGROUP_ID gl_SubgroupID
#define SUBGROUP_LANE gl_SubgroupInvocationID
#define SUBGROUP_BARRIER() subgroupBarrier()
#define SUBGROUP_MEMORY_BARRIER_SHARED() subgroupMemoryBarrierShared()
#endif
#ifdef COOPMAT_EMULATED
#define UNROLL_REAL
#define C_ELEM(m, e) (m).v[e]
#define LOAD_B_FROM_AS(b, off) coopMatLoadBFromA(b, off, 2)
#else
#define UNROLL_REAL [[unroll]]
#define C_ELEM(m, e) (m)[e]
#define LOAD_B_FROM_AS(b, off) coopMatLoad(b, As, off, 2, gl_CooperativeMatrixLayoutColumnMajor)
#include "coopmat_lanes.glsl"
#endif

#if defined(HALO) && !defined(COOPMAT_EMULATED)
// AREG: the subgroup's A fragments, tap * CQ / 2 + c / 2 (the emulation's are offsets in As, made
// where they are used: an array of them took lavapipe a minute to compile)
const uint NAREG = AREG != 0 ? KH * KW * CQ / 2 : 1;
MAT_A areg[NAREG];
#endif
#ifdef HALO
// Whether this subgroup's accumulators keep their elements where coopmat_lanes.glsl says (LANES): an
// index matrix stored into its stage at `sbase` and loaded as an accumulator, once (TILES > 1: at the
// first tile). (The emulation keeps them so.) In uniform control flow, the stage free.
int lanes_found = -1;
bool lanes_as_expected(uint sbase) {
#ifdef COOPMAT_EMULATED
    return true;
#else
    if (lanes_found >= 0) return lanes_found != 0;
    uint lane = SUBGROUP_LANE;
    [[unroll]] for (uint e = 0; e < 8; ++e) STAGE_SET(sbase + e * 32 + lane, int(e * 32 + lane));
    SUBGROUP_MEMORY_BARRIER_SHARED();
    SUBGROUP_BARRIER();
    MAT_C idx;
    coopMatLoad(idx, STAGE_MEM, sbase / 4, 4, gl_CooperativeMatrixLayoutRowMajor);
    bool ok;
    LANES_HOLD(ok, idx, lane);
    SUBGROUP_BARRIER();
    lanes_found = subgroupAll(ok) ? 1 : 0;
    return lanes_found != 0;
#endif
}

#ifdef COOPMAT_EMULATED
shared uint lane_sh[256];
#endif
// The value v of the lane `mask` apart (subgroup shuffles; emulated: through shared memory, in uniform
// control flow).
uint lane_xor(uint v, uint mask) {
#ifdef COOPMAT_EMULATED
    lane_sh[gl_LocalInvocationID.x] = v;
    SUBGROUP_MEMORY_BARRIER_SHARED();
    SUBGROUP_BARRIER();
    uint r = lane_sh[gl_LocalInvocationID.x ^ mask];
    SUBGROUP_BARRIER();
    return r;
#else
    return subgroupShuffleXor(v, mask);
#endif
}

// Two 4 x 4 byte blocks transposed across the four lanes of a quad (lanes 4 apart, quad index iq =
// lane / 4 % 4): w[b] holds row iq of block b (its byte s: column s); returned, w[b] holds column iq
// (its byte r: row r). Two exchanges of half the bytes, both blocks' in one word.
void quad_transpose(inout uint w[2], uint iq) {
    // with the lane 8 apart (iq ^ 2): keep the columns of this lane's half (iq & 2), send the others;
    // then x[b]'s byte 2 * rs + cs is row (iq & 1) | 2 * rs, column (iq & 2) | cs
    bool hi = (iq & 2u) != 0u;
    uint own0 = hi ? w[0] >> 16 : w[0] & 0xFFFFu, own1 = hi ? w[1] >> 16 : w[1] & 0xFFFFu;
    uint got = lane_xor(hi ? (w[0] & 0xFFFFu) | (w[1] << 16) : (w[0] >> 16) | (w[1] & 0xFFFF0000u), 8u);
    uint x0 = hi ? (got & 0xFFFFu) | (own0 << 16) : own0 | (got << 16);
    uint x1 = hi ? (got >> 16) | (own1 << 16) : own1 | (got & 0xFFFF0000u);
    // with the lane 4 apart (iq ^ 1): keep column iq's bytes (cs = iq & 1), send the others
    const uint EVEN = 0x00FF00FFu, ODD = 0xFF00FF00u;
    bool odd = (iq & 1u) != 0u;
    got = lane_xor(odd ? (x0 & EVEN) | ((x1 & EVEN) << 8) : (x0 & ODD) | ((x1 & ODD) >> 8), 4u);
    w[0] = odd ? (x0 & ODD) | ((got & ODD) >> 8) : (x0 & EVEN) | ((got & EVEN) << 8);
    w[1] = odd ? (x1 & ODD) | (got & EVEN) : (x1 & EVEN) | (got & ODD);
}
#endif

#ifdef HALO
// The 8 x 32 tile pt's image n, first output row oh0 and column ow0.
void tile_origin(uint pt, out uint n, out uint oh0, out uint ow0) {
    uint col_tiles = (p.out_sizes.w + HALO_COLS - 1) / HALO_COLS, rest = pt / col_tiles;
    uint row_tiles = (p.out_sizes.z + HALO_ROWS - 1) / HALO_ROWS;
    n = rest / row_tiles;
    oh0 = (rest % row_tiles) * HALO_ROWS;
    ow0 = (pt % col_tiles) * HALO_COLS;
}
// Output tiles, of 8 x 32 pixels and BM channels of a group.
uint pixel_tiles() {
    return p.out_sizes.x * ((p.out_sizes.z + HALO_ROWS - 1) / HALO_ROWS) * ((p.out_sizes.w + HALO_COLS - 1) / HALO_COLS);
}
#endif
#ifdef HALO
// Vector e of slice ks of the input window, shifted to int8 (the padding byte outside the input), of the
// tile whose window starts at input row ih0 and column iw0 of image n, group g: position e / CQW, its
// channels' vector ks * CQW + e % CQW.
uvec4 window_vector(uint e, uint ks, uint n, uint g, int ih0, int iw0) {
    uint flip4 = X_SIGNED != 0 ? 0u : 0x80808080u;
    uint pos = e / CQW, qv = ks * CQW + e % CQW;
    int ih = ih0 + int(pos / HWD), iw = iw0 + int(pos % HWD);
    bool inside = uint(ih) < p.in_sizes.z && uint(iw) < p.in_sizes.w;
    uint at = inside ? (n * p.in_strides.x + g * p.cg + uint(ih) * p.in_strides.z + uint(iw) * p.in_strides.w) / 16 + qv : 0u;
    return inside ? xp[at] ^ flip4 : uvec4(((params[0] & 0xFFu) * 0x01010101u) ^ flip4);
}
#endif

// Workgroup tile wg (pixel tile, channel tile, group, K slice), the k-th its workgroup computes; `next`
// the one after (TILES > 1).
void tile_main(uint wg, uint k, uint next) {
    uint t = gl_LocalInvocationID.x;
    uint ohw = p.out_sizes.z * p.out_sizes.w;
    uint P = p.out_sizes.x * ohw;
    uint G = packed_groups(), cp = packed_cp(), kp = packed_kp(), mp = packed_mp();
    uint hp = packed_hp(), wpx = packed_wp();
#if   defined(HALO)
    uint ptiles = pixel_tiles(), mtiles = mp / BM;
#else
    uint ptiles = (P + BN - 1) / BN, mtiles = mp / BM;
#endif
    uint pt = wg % ptiles; wg /= ptiles;
    uint mt = wg % mtiles; wg /= mtiles;
    uint g = wg % G;
    uint split = wg / G;
    if (split >= SPLIT) return;                       // uniform across the workgroup

    // Loader roles: operand rows lrow and lrow + 64 (of A, those below BM), 16-byte quarter q of
    // each K step.
    uint q = t % 4, lrow = t / 4;
    uint pos_stride = G * cp / 16;                    // uvec4 between neighbouring Xp positions
    uint xrow[2];
    bool pok[2];
#ifdef NHWC_INPUT
    int ih0[2], iw0[2];                               // the pixel's window's first input row and column
    int xat[2];                                       // its byte there, channel 0 of the group (may be < 0)
    uint flip4 = X_SIGNED != 0 ? 0u : 0x80808080u;
    uvec4 pad4 = uvec4(((params[0] & 0xFFu) * 0x01010101u) ^ flip4);
#endif
    [[unroll]] for (uint i = 0; i < 2; ++i) {
        uint px = pt * BN + lrow + 64 * i;
        pok[i] = px < P;
        px = min(px, P - 1);
        uint n = px / ohw, r = px % ohw;
        uint oh = r / p.out_sizes.w, ow = r % p.out_sizes.w;
#ifdef NHWC_INPUT
        ih0[i] = int(oh * p.conv_stride.x) - int(p.start_pad.x);
        iw0[i] = int(ow * p.conv_stride.y) - int(p.start_pad.y);
        xat[i] = int(n * p.in_strides.x + g * p.cg) + ih0[i] * int(p.in_strides.z) + iw0[i] * int(p.in_strides.w);
#else
        xrow[i] = ((n * hp + oh * p.conv_stride.x) * wpx + ow * p.conv_stride.y) * pos_stride + g * cp / 16;
#endif
    }
    uint wrow = (packed_header_words() * 4 + (g * mp + mt * BM + lrow) * kp) / 16;
    uint chunks_per_tap = cp / 32;
    uint real_chunks = KH * KW * chunks_per_tap;      // 32-deep chunks holding taps
    uint steps = kp / BK;
    uint per_split = (steps + SPLIT - 1) / SPLIT;
    uint s_begin = min(steps, split * per_split), s_end = min(steps, s_begin + per_split);

    uvec4 ra[2], rb[2];
#ifdef NHWC_INPUT
    // Xp's 16 bytes read from the input itself: the tap's input position, shifted to int8, or the
    // padding byte outside the input (Cg is a multiple of 32: no channels past it).
    #define LOAD_B(s) {                                                                         \
        uint kc = (s) * 2 + q / 2;                                                              \
        uint tap = kc / chunks_per_tap;                                                         \
        int dy = int((tap / KW) * p.dilation.x), dx = int((tap % KW) * p.dilation.y);          \
        int off = dy * int(p.in_strides.z) + dx * int(p.in_strides.w) + int(((kc % chunks_per_tap) * 2 + q % 2) * 16); \
        [[unroll]] for (uint i = 0; i < 2; ++i) {                                                          \
            bool inside = uint(ih0[i] + dy) < p.in_sizes.z && uint(iw0[i] + dx) < p.in_sizes.w;  \
            uint at = inside ? uint(xat[i] + off) / 16 : 0u;                                   \
            rb[i] = !(pok[i] && kc < real_chunks) ? uvec4(0) : inside ? xp[at] ^ flip4 : pad4;  \
        }                                                                                       \
    }
#else
    #define LOAD_B(s) {                                                                         \
        uint kc = (s) * 2 + q / 2;                                                              \
        uint tap = kc / chunks_per_tap;                                                         \
        uint tap_off = ((tap / KW) * p.dilation.x * wpx + (tap % KW) * p.dilation.y) * pos_stride \
                     + (kc % chunks_per_tap) * 2 + q % 2;                                       \
        [[unroll]] for (uint i = 0; i < 2; ++i)                                                            \
            rb[i] = (pok[i] && kc < real_chunks) ? xp[xrow[i] + tap_off] : uvec4(0);            \
    }
#endif
    #define LOAD_STEP(s) {                                                                      \
        ra[0] = BM >= 64 || lrow < BM ? wp[wrow + (s) * 4 + q] : uvec4(0);                      \
        ra[1] = BM > 64 ? wp[wrow + 64 * kp / 16 + (s) * 4 + q] : uvec4(0);                     \
        LOAD_B(s)                                                                               \
    }

    // With 8 x 32 tiles every subgroup multiplies all BM rows (FM fragments) for its row of the tile.
#ifdef HALO
    const uint FM = 2 * WM;
    uint warp = SUBGROUP_ID, wm = 0, wn = warp % 4;
    uint arow0 = AREG != 0 ? 2 * (warp % 4) : warp;   // AREG: the subgroup's first row of the tile
#else
    const uint FM = WM;
    uint warp = SUBGROUP_ID, wm = warp / 4, wn = warp % 4;
#endif
    // Fragments whose 16 rows all lie past the group's Mg output channels (tiles taller than Mg:
    // 4 channels in a 64-row tile) are not multiplied; the condition is uniform in each subgroup.
    uint mrow0 = mt * BM + wm * WM * 16;
#ifdef HALO
    if (AREG != 0) mrow0 += (warp / 4) * 16;         // its one fragment of channels
#endif
    bool alive = mrow0 < p.mg;
    MAT_C acc[FM][2];
    [[unroll]] for (uint i = 0; i < FM; ++i)
        [[unroll]] for (uint j = 0; j < 2; ++j) acc[i][j] = MAT_C_ZERO;
    MAT_C sums[2] = { MAT_C_ZERO, MAT_C_ZERO };
#ifdef HALO
    MAT_C sums2[2] = { MAT_C_ZERO, MAT_C_ZERO };      // AREG: its second row's
#endif
    MAT_A ones = MAT_A_ONES;
    bool wsum = WSUM != 0 && window_sums_needed() != 0;

#ifdef HALO
    // the tile: image h_n, output rows h_oh0.., columns h_ow0..; this subgroup's row h_oh = h_oh0 + warp;
    // its input window's first row and column h_ih0, h_iw0 (stride and dilation 1)
    uint h_n, h_oh0, h_oh, h_ow0;
    int h_ih0, h_iw0;
    tile_origin(pt, h_n, h_oh0, h_ow0);
    h_oh = h_oh0 + warp;
    h_ih0 = int(h_oh0) - int(p.start_pad.x);
    h_iw0 = int(h_ow0) - int(p.start_pad.y);
#endif
#ifdef HALO
    for (uint ks = 0; ks < KSPLIT; ++ks) {            // the input channels' slices (one but with KSPLIT)
        if (ks > 0) barrier();                        // the slice before multiplied: its memory is free
        // the window, shifted to int8 (the padding byte outside the input); neighbouring invocations
        // take neighbouring vectors of a position, then neighbouring positions
        // (loops unrolled: every load of an invocation in flight before its first store; 112.5 us
        // rolled against 104.9 unrolled for the ESPCN 3x3 64->32 layer at 540x960 on the H200). With
        // HALO_PREFETCH a workgroup's later tiles find their window stored (main).
        if (!prefetched)
            [[unroll]] for (uint e0 = 0; e0 < HH * HWD * CQW; e0 += gl_WorkGroupSize.x) {
                uint e = e0 + t;
                if (e >= HH * HWD * CQW) break;
                Xs[(e / CQW) * PS + e % CQW] = window_vector(e, ks, h_n, g, h_ih0, h_iw0);
            }
        // the filter rows: Wp's first KH x KW x CQ vectors of rows mt * BM .. (once a workgroup where its
        // tiles share them), the slice's CQW vectors of each tap (k = tap * Cg + c)
        uint a0 = (packed_header_words() * 4 + (g * mp + mt * BM) * kp) / 16;
        bool new_rows = k == 0 || mtiles * G > 1 || KSPLIT > 1;
        if (new_rows) {
#ifndef COOPMAT_EMULATED
            if (AREG != 2)
#endif
            [[unroll]] for (uint e0 = 0; e0 < BM * KQ; e0 += gl_WorkGroupSize.x) {
                uint e = e0 + t;
                if (e >= BM * KQ) break;
                uint row = e / KQ, kq = e % KQ;
                As[row * AQ + kq] = wp[a0 + row * (kp / 16) + (kq / CQW) * CQ + ks * CQW + kq % CQW];
            }
            if (LANES != 0 && t < BM && ks == 0) {        // (the same for every slice)
                uint M = p.out_sizes.y, me = g * p.mg + min(mt * BM + t, p.mg - 1);
                ch_sh[t] = w_words[me] + params[2 + 2 * M + me];
                ch_sh[BM + t] = w_words[M + me];
                ch_sh[2 * BM + t] = params[2 + me];
            }
        }
        barrier();
#ifndef COOPMAT_EMULATED
        // AREG: the subgroup's A fragments where the rows are new, from the filter rows in As (AREG 2:
        // straight from Wp, which NVIDIA's driver 580 loads an 8-bit element at a time, 288 byte loads a
        // lane for the ESPCN 3x3 64->32 layer, where from shared memory it uses LDSM: 70.4 us against
        // 65.0 at 540x960 on the H200, 255 registers an invocation against 168; loaded from Wp again at
        // every tile, that layer took 566 us at 1080x1920 against 256)
        if (AREG != 0 && new_rows && alive)
            [[unroll]] for (uint f = 0; f < NAREG; ++f) {
                uint tap = f / (CQ / 2), c = (f % (CQ / 2)) * 2, i0 = mrow0 - mt * BM;
                if (AREG == 2)
                    coopMatLoad(areg[f], wp, a0 + i0 * (kp / 16) + tap * CQ + c, kp / 16, gl_CooperativeMatrixLayoutRowMajor);
                else
                    coopMatLoad(areg[f], As, i0 * AQ + tap * CQW + c, AQ, gl_CooperativeMatrixLayoutRowMajor);
            }
#endif
        // the next tile's window into registers, its loads in flight while this tile's taps multiply
        // (not with AREG: its registers hold the filter's fragments)
        prefetched = HALO_PREFETCH != 0 && AREG == 0 && KSPLIT == 1 && TILES > 1 && k + 1 < TILES && next < ptiles * mtiles * G;
        if (prefetched) {
            uint npt = next % ptiles, ng = next / ptiles / mtiles, nn, noh0, now0;
            tile_origin(npt, nn, noh0, now0);
            [[unroll]] for (uint i = 0; i < PRE; ++i) {
                uint e = i * gl_WorkGroupSize.x + t;
                if (e < HH * HWD * CQW)
                    pre[i] = window_vector(e, 0u, nn, ng, int(noh0) - int(p.start_pad.x), int(now0) - int(p.start_pad.y));
            }
        }
        s_begin = s_end = 0;                          // no K loop of the packed kind
        // real matrices: the taps' loop unrolled, so that fragments load while others multiply (95.0 us
        // against 112.5 rolled, 89.0 with the loads' loops unrolled too; emulated: kept rolled, as
        // each multiply-add is a loop of its own there)
        // AREG: each B fragment of window row arow0 + wr serves row 0's tap (wr, kw) and row 1's
        // (wr - 1, kw)
        if (AREG != 0) {
            if (alive) UNROLL_REAL for (uint c = 0; c < CQW; c += 2) {
                UNROLL_REAL for (uint wr = 0; wr < KH + 1; ++wr) {
                    UNROLL_REAL for (uint kw = 0; kw < KW; ++kw) {
                        MAT_B b[2];
                        [[unroll]] for (uint j = 0; j < 2; ++j)
                            coopMatLoad(b[j], Xs, ((arow0 + wr) * HWD + j * 16 + kw) * PS + c, PS,
                                        gl_CooperativeMatrixLayoutColumnMajor);
                        [[unroll]] for (uint r = 0; r < 2; ++r) {
                            if (wr < r || wr - r >= KH) continue;
                            uint tap = (wr - r) * KW + kw;
#ifdef COOPMAT_EMULATED
                            MAT_A a;
                            coopMatLoad(a, As, (mrow0 - mt * BM) * AQ + tap * CQW + c, AQ, gl_CooperativeMatrixLayoutRowMajor);
#else
                            MAT_A a = areg[tap * (CQ / 2) + c / 2];
#endif
                            [[unroll]] for (uint j = 0; j < 2; ++j) acc[r][j] = coopMatMulAdd(a, b[j], acc[r][j]);
                            if (wsum)
                                [[unroll]] for (uint j = 0; j < 2; ++j) {
                                    if (r == 0) sums[j] = coopMatMulAdd(ones, b[j], sums[j]);
                                    else sums2[j] = coopMatMulAdd(ones, b[j], sums2[j]);
                                }
                        }
                    }
                }
            }
        } else
        if (alive) UNROLL_REAL for (uint tap = 0; tap < KH * KW; ++tap) {
            uint kh = tap / KW, kw = tap % KW;
            UNROLL_REAL for (uint c = 0; c < CQW; c += 2) {
                MAT_B b[2];
                [[unroll]] for (uint j = 0; j < 2; ++j)
                    coopMatLoad(b[j], Xs, ((warp + kh) * HWD + j * 16 + kw) * PS + c, PS,
                                gl_CooperativeMatrixLayoutColumnMajor);
                [[unroll]] for (uint i = 0; i < FM; ++i) {
                    if (mrow0 + i * 16 >= p.mg) break;
                    MAT_A a;
                    coopMatLoad(a, As, i * 16 * AQ + tap * CQW + c, AQ, gl_CooperativeMatrixLayoutRowMajor);
                    [[unroll]] for (uint j = 0; j < 2; ++j) acc[i][j] = coopMatMulAdd(a, b[j], acc[i][j]);
                }
                if (wsum)
                    [[unroll]] for (uint j = 0; j < 2; ++j) sums[j] = coopMatMulAdd(ones, b[j], sums[j]);
            }
        }
    }
#endif
#ifndef HALO
    if (s_begin < s_end) LOAD_STEP(s_begin);
    for (uint s = s_begin; s < s_end; ++s) {
        barrier();                                    // the previous step's multiplies are done
        if (BM >= 64 || lrow < BM) As[lrow * AS + q] = ra[0];
        if (BM > 64) As[(lrow + 64) * AS + q] = ra[1];
        Bs[lrow * AS + q] = rb[0];
        Bs[(lrow + 64) * AS + q] = rb[1];
        barrier();
        if (s + 1 < s_end) LOAD_STEP(s + 1);
        if (alive) [[unroll]] for (uint h = 0; h < 2; ++h) {
            MAT_B b[2];
            [[unroll]] for (uint j = 0; j < 2; ++j)
                coopMatLoad(b[j], Bs, (wn * 32 + j * 16) * AS + h * 2, AS, gl_CooperativeMatrixLayoutColumnMajor);
            [[unroll]] for (uint i = 0; i < WM; ++i) {
                if (mrow0 + i * 16 >= p.mg) break;
                MAT_A a;
                coopMatLoad(a, As, (wm * WM * 16 + i * 16) * AS + h * 2, AS, gl_CooperativeMatrixLayoutRowMajor);
                [[unroll]] for (uint j = 0; j < 2; ++j) acc[i][j] = coopMatMulAdd(a, b[j], acc[i][j]);
            }
            if (wsum)
                [[unroll]] for (uint j = 0; j < 2; ++j) sums[j] = coopMatMulAdd(ones, b[j], sums[j]);
        }
    }
#endif

    if (SPLIT > 1) {
        // The partial tile and (subgroups of the first row) the partial window sums.
        [[unroll]] for (uint i = 0; i < FM; ++i) {
            uint m0 = mrow0 + i * 16;
            [[unroll]] for (uint j = 0; j < 2; ++j)
                coopMatStore(acc[i][j], part, partial_index(split, g, m0, pt * BN + wn * 32 + j * 16), 16,
                             gl_CooperativeMatrixLayoutRowMajor);
        }
        if (wsum && wm == 0) {
            [[unroll]] for (uint j = 0; j < 2; ++j)
                coopMatStore(sums[j], part, partial_sum_index(split, g, pt * BN + wn * 32 + j * 16), 16,
                             gl_CooperativeMatrixLayoutRowMajor);
        }
        return;
    }

    // Epilogue: each lane takes 8 neighbouring pixels of one row of a fragment.
    barrier();                                        // every subgroup's last multiplies are done (STAGE)
    uint lane = SUBGROUP_LANE, r = lane / 2, c8 = (lane % 2) * 8;
#ifdef HALO
    uint sbase = warp * 320;                          // room for a fragment stored with columns of 20 ints
#else
    uint sbase = warp * 256;
#endif
    int colsum[2][8];
    [[unroll]] for (uint j = 0; j < 2; ++j) {
        [[unroll]] for (uint e = 0; e < 8; ++e) colsum[j][e] = 0;
        if (wsum) {
            STAGE_STORE(sums[j], sbase);
            SUBGROUP_MEMORY_BARRIER_SHARED();
            SUBGROUP_BARRIER();
            [[unroll]] for (uint e = 0; e < 8; ++e) colsum[j][e] = STAGE(sbase + c8 + e);   // row 0: the column sums
            SUBGROUP_BARRIER();
        }
    }
    uint M = p.out_sizes.y;
    float yzp = float(int(params[1]));
    Requant rq = requant_for(int(params[1]));          // the packed outputs' (requantized_bits)
#ifdef HALO
    bool lanes = LANES != 0 && (PACKED_OUT == 3 || PACKED_OUT == 4) && lanes_as_expected(sbase);
#endif
    [[unroll]] for (uint i = 0; i < FM; ++i) {
        uint mf = AREG != 0 ? mrow0 : mrow0 + i * 16;   // the fragment's first channel in the group
#ifdef HALO
        uint f_oh = AREG != 0 ? h_oh0 + arow0 + i : h_oh;   // and its output row
#endif
#ifndef COOPMAT_EMULATED
        // A fragment past the group's channels stores nothing (its subgroup skips it whole; the
        // emulation's barriers are the workgroup's, so there every subgroup goes through).
        if (mf >= p.mg) break;
#endif
        uint ml = mf + r;
        uint m = g * p.mg + min(ml, p.mg - 1);
        // the channel's numbers, read once (stores to the output could alias them for the compiler)
        int corr = int(w_words[m]), cw = int(w_words[M + m]);
        int bias = int(params[2 + 2 * M + m]);
        float mult = uintBitsToFloat(params[2 + m]);
#ifdef HALO
        if (PACKED_OUT == 3 || PACKED_OUT == 4) {
#ifdef HALO
            if (lanes) {
                // Lane 16 k + 4 iq + q holds channels mf + 4 k + iq and that + 8 (rows), pixels 2 q, 2 q + 1
                // and those + 8 (its column slots) of each fragment; after the quads' transposes, pixel c's
                // channels mf + 4 k .. + 3 and mf + 8 + 4 k .. + 3.
                uint q = lane % 4, iq = (lane / 4) % 4, k = lane / 16, c = 2 * q + (iq & 1) + 8 * (iq >> 1);
                int cbl[2], cwl[2];
                float mul[2];
                [[unroll]] for (uint h = 0; h < 2; ++h) {
                    uint row = mf - mt * BM + lane / 4 + 8 * h;   // in the filter tile
                    cbl[h] = int(ch_sh[row]);
                    cwl[h] = int(ch_sh[BM + row]);
                    mul[h] = uintBitsToFloat(ch_sh[2 * BM + row]);
                }
                uint v4[4];                                   // PACKED_OUT 4: [j * 2 + h]
                [[unroll]] for (uint j = 0; j < 2; ++j) {
                    uint w[2] = { 0u, 0u };                   // its rows' bytes, a column slot a byte
                    [[unroll]] for (uint e = 0; e < 8; ++e) {
                        uint h = c_half(e);
                        int a = C_ELEM(acc[i][j], e) + cbl[h];
                        if (wsum)                             // (every row of sums: the pixels' window sums)
                            a += cwl[h] * (AREG != 0 && i == 1 ? C_ELEM(sums2[j], e) : C_ELEM(sums[j], e));
                        w[h] += requantized_bits(a, mul[h], rq) << (8 * c_slot(e));
                    }
                    [[unroll]] for (uint h = 0; h < 2; ++h) w[h] = requantized_word(w[h], rq);
                    quad_transpose(w, iq);
                    if (PACKED_OUT == 4) {
                        v4[j * 2] = w[0];
                        v4[j * 2 + 1] = w[1];
                        continue;
                    }
                    uint ow = h_ow0 + j * 16 + c, mc = mf + 4 * k;
                    if (f_oh < p.out_sizes.z && ow < p.out_sizes.w) {
                        uint at = (h_n * p.out_strides.x + (g * p.mg + mc) + f_oh * p.out_strides.z + ow * p.out_strides.w) >> 2;
                        [[unroll]] for (uint h = 0; h < 2; ++h)
                            if (mc + 8 * h < p.mg) y_words[at + 2 * h] = w[h];
                    }
                }
                if (PACKED_OUT == 4) {
                    // lanes k store pixel c of fragment j = k: 16 channels, half of them the lane 16 apart's
                    bool k0 = k == 0;
                    uint r0 = lane_xor(k0 ? v4[2] : v4[0], 16u), r1 = lane_xor(k0 ? v4[3] : v4[1], 16u);
                    uvec4 px16 = k0 ? uvec4(v4[0], r0, v4[1], r1) : uvec4(r0, v4[2], r1, v4[3]);
                    uint ow = h_ow0 + 16 * k + c;
                    if (f_oh < p.out_sizes.z && ow < p.out_sizes.w && mf < p.mg)
                        y_vec4[(h_n * p.out_strides.x + (g * p.mg + mf) + f_oh * p.out_strides.z + ow * p.out_strides.w) >> 4] = px16;
                }
                continue;
            }
#endif
            // Channels last (channel stride 1, the others whole words; Mg a multiple of 4): each
            // fragment stored column-major into the subgroup's stage (a pixel's 16 channels
            // contiguous, columns 20 ints apart: with 16, four lanes' stores met in one bank, and the
            // ESPCN 3x3 64->32 layer took 88.2 us at 540x960 on the H200 against 76.8 with 20);
            // lane (pixel pix, half h8) reads its pixel's channels h8 .. h8 + 7 as two
            // vectors, requantizes them with those channels' numbers and stores them as two words
            // (PACKED_OUT 3), or keeps them for the fragment's 16-byte stores (PACKED_OUT 4).
            uint pix = lane % 16, h8 = (lane / 16) * 8;
            uint w4[4];                                               // PACKED_OUT 4: [j * 2 + h]
            uint mc = mf + h8;                                        // the lane's first channel in the group
            int cb[8], cwe[8];
            float mu[8];
            [[unroll]] for (uint e = 0; e < 8; ++e) {
                uint me = g * p.mg + min(mc + e, p.mg - 1);
                cb[e] = int(w_words[me]) + int(params[2 + 2 * M + me]);
                cwe[e] = int(w_words[M + me]);
                mu[e] = uintBitsToFloat(params[2 + me]);
            }
            [[unroll]] for (uint j = 0; j < 2; ++j) {
                int csum = 0;
                if (wsum) {                                   // row 0 of the sums: the pixels' window sums
                    if (AREG != 0 && i == 1) {
                        STAGE_STORE(sums2[j], sbase);
                    } else {
                        STAGE_STORE(sums[j], sbase);
                    }
                    SUBGROUP_MEMORY_BARRIER_SHARED();
                    SUBGROUP_BARRIER();
                    csum = STAGE(sbase + pix);
                    SUBGROUP_BARRIER();
                }
#ifdef COOPMAT_EMULATED
                coopMatStoreWordsColumns(acc[i][j], STAGE_MEM, sbase, 20);
#else
                coopMatStore(acc[i][j], STAGE_MEM, sbase / 4, 5, gl_CooperativeMatrixLayoutColumnMajor);
#endif
                SUBGROUP_MEMORY_BARRIER_SHARED();
                SUBGROUP_BARRIER();
                uvec4 q[2] = { STAGE_MEM[(sbase + pix * 20 + h8) / 4], STAGE_MEM[(sbase + pix * 20 + h8) / 4 + 1] };
                SUBGROUP_BARRIER();
                uint w2[2] = { 0u, 0u };
                [[unroll]] for (uint e = 0; e < 8; ++e)
                    w2[e / 4] += requantized_bits(int(q[e / 4][e % 4]) + cb[e] + cwe[e] * csum, mu[e], rq) << (8 * (e % 4));
                if (PACKED_OUT == 4) {
                    [[unroll]] for (uint h = 0; h < 2; ++h) w4[j * 2 + h] = requantized_word(w2[h], rq);
                    continue;
                }
                uint ow = h_ow0 + j * 16 + pix;
                if (f_oh < p.out_sizes.z && ow < p.out_sizes.w) {
                    uint at = (h_n * p.out_strides.x + (g * p.mg + mc) + f_oh * p.out_strides.z + ow * p.out_strides.w) >> 2;
                    [[unroll]] for (uint h = 0; h < 2; ++h)
                        if (mc + 4 * h < p.mg) y_words[at + h] = requantized_word(w2[h], rq);
                }
            }
            if (PACKED_OUT == 4) {
                // the subgroup's 32 pixels (j * 16 + pix), 16 bytes each, into its stage; then lane
                // t stores pixel t's
                [[unroll]] for (uint j = 0; j < 2; ++j)
                    [[unroll]] for (uint h = 0; h < 2; ++h) STAGE_MEM[sbase / 4 + j * 16 + pix][h8 / 4 + h] = w4[j * 2 + h];
                SUBGROUP_MEMORY_BARRIER_SHARED();
                SUBGROUP_BARRIER();
                uvec4 px16 = STAGE_MEM[sbase / 4 + lane];
                SUBGROUP_BARRIER();
                uint ow = h_ow0 + lane;
                if (f_oh < p.out_sizes.z && ow < p.out_sizes.w && mf < p.mg)
                    y_vec4[(h_n * p.out_strides.x + (g * p.mg + mf) + f_oh * p.out_strides.z + ow * p.out_strides.w) >> 4] = px16;
            }
            continue;
        }
#endif
        if (PACKED_OUT == 2) {
            // The two fragments' bytes as a 16 x 32-byte tile in the subgroup's stage (row r: its
            // channel's 32 pixels, 8 words), then lane (r, half) stores 16 of them at once.
            uint words[4];
            [[unroll]] for (uint j = 0; j < 2; ++j) {
                STAGE_STORE(acc[i][j], sbase);
                SUBGROUP_MEMORY_BARRIER_SHARED();
                SUBGROUP_BARRIER();
                int v[8];
                STAGE_ROW8(v, sbase + r * 16 + c8)
                [[unroll]] for (uint e = 0; e < 8; ++e) v[e] += corr + cw * colsum[j][e];
                SUBGROUP_BARRIER();
                [[unroll]] for (uint h = 0; h < 2; ++h) {
                    uint word = 0;
                    [[unroll]] for (uint e = 0; e < 4; ++e)
                        word += requantized_bits(v[4 * h + e] + bias, mult, rq) << (8 * e);
                    words[j * 2 + h] = requantized_word(word, rq);
                }
            }
            [[unroll]] for (uint j = 0; j < 2; ++j) {
#ifdef STAGE_MEM
                // words j * 4 + c8 / 4 .. + 1 of row r: half a vector
                STAGE_MEM[(sbase + r * 8 + j * 4) >> 2][c8 / 4] = words[j * 2];
                STAGE_MEM[(sbase + r * 8 + j * 4) >> 2][c8 / 4 + 1] = words[j * 2 + 1];
#else
                [[unroll]] for (uint h = 0; h < 2; ++h) STAGE_SET(sbase + r * 8 + j * 4 + c8 / 4 + h, int(words[j * 2 + h]));
#endif
            }
            SUBGROUP_MEMORY_BARRIER_SHARED();
            SUBGROUP_BARRIER();
            uint half16 = lane % 2, at = sbase + r * 8 + half16 * 4;
#ifdef STAGE_MEM
            uvec4 q = STAGE_MEM[at >> 2];                   // at: a multiple of 4
#else
            uvec4 q = uvec4(STAGE(at), STAGE(at + 1), STAGE(at + 2), STAGE(at + 3));
#endif
            SUBGROUP_BARRIER();
            uint px = pt * BN + wn * 32 + half16 * 16;      // OH * OW, and so P, multiples of 16
            bool px_ok = px < P;
#ifdef HALO
            // the tile's row (OW a multiple of 16: its 16-pixel pieces lie in the row or past it)
            px = (h_n * p.out_sizes.z + f_oh) * p.out_sizes.w + h_ow0 + half16 * 16;
            px_ok = f_oh < p.out_sizes.z && h_ow0 + half16 * 16 < p.out_sizes.w;
#endif
            if (ml < p.mg && px_ok) {
                uint n = px / ohw;
                y_vec4[(n * p.out_strides.x + m * p.out_strides.y + (px - n * ohw)) >> 4] = q;
            }
            continue;
        }
        [[unroll]] for (uint j = 0; j < 2; ++j) {
            STAGE_STORE(acc[i][j], sbase);
            SUBGROUP_MEMORY_BARRIER_SHARED();
            SUBGROUP_BARRIER();
            uint px0 = pt * BN + wn * 32 + j * 16 + c8;
#if   defined(HALO)
            uint ow = h_ow0 + j * 16 + c8;
            px0 = (h_n * p.out_sizes.z + f_oh) * p.out_sizes.w + ow;
            uint row_left = f_oh < p.out_sizes.z && ow < p.out_sizes.w ? p.out_sizes.w - ow : 0u;
#else
            uint row_left = 8u;
#endif
            int v[8];
            STAGE_ROW8(v, sbase + r * 16 + c8)
            [[unroll]] for (uint e = 0; e < 8; ++e) v[e] += corr + cw * colsum[j][e];
            SUBGROUP_BARRIER();
            if (ml < p.mg) {
                if (PACKED_OUT != 0) {
                    [[unroll]] for (uint h = 0; h < 2; ++h) {
                        uint px = px0 + 4 * h;
                        if (px >= P || 4 * h >= row_left) break;
                        uint word = 0;
                        [[unroll]] for (uint e = 0; e < 4; ++e)
                            word += requantized_bits(v[4 * h + e] + bias, mult, rq) << (8 * e);
                        // packed NCHW: the pixel's place in its image is its offset in the plane
                        uint n = px / ohw;
                        y_words[(n * p.out_strides.x + m * p.out_strides.y + (px - n * ohw)) >> 2] = requantized_word(word, rq);
                    }
                } else {
                    [[unroll]] for (uint e = 0; e < 8; ++e) {
                        uint px = px0 + e;
                        if (px >= P || e >= row_left) break;
                        uint n = px / ohw, rr = px % ohw;
                        store_output(n, m, rr / p.out_sizes.w, rr % p.out_sizes.w, v[e]);
                    }
                }
            }
        }
    }
}

void main() {
    uint wg = p.first / gl_WorkGroupSize.x + gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (TILES == 1) {
        tile_main(wg, 0u, 0u);
        return;
    }
#ifdef HALO
    // workgroup wg of n computes tiles wg, wg + n, wg + 2n, ... (n: the host's count of workgroups)
    uint n = (pixel_tiles() * (packed_mp() / BM) * packed_groups() + TILES - 1) / TILES;
    for (uint k = 0; k < TILES; ++k) {
        tile_main(wg + k * n, k, wg + (k + 1) * n);
        if (k + 1 == TILES)
            break;
        barrier();                                    // the tile's epilogue is done with the window
        if (prefetched)
            [[unroll]] for (uint i = 0; i < PRE; ++i) {
                uint e = i * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
                if (e < HH * HWD * CQW) Xs[(e / CQW) * PS + e % CQW] = pre[i];
            }
    }
#endif
}
