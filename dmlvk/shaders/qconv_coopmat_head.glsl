// The cooperative-matrix convolution kernels' declarations (qlinear_conv_coopmat.comp, the packed
// kernel; qlinear_conv_coopmat_halo.comp, which defines HALO): extensions, bindings, specialization
// constants, each family's shared memory, the epilogue's stage, the matrices (real, or
// coopmat_emulation.glsl's). Included right after the GL_GOOGLE_include_directive extension.
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
