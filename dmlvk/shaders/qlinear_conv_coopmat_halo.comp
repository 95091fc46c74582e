#version 450
// QUANTIZED_LINEAR_CONVOLUTION on the int8 tensor units over 8 x 32 output tiles, the halo kernel (the
// arithmetic of qlinear_conv_coopmat.comp; stride and dilation 1, a channels-last input as its
// NHWC_INPUT reads it, WM 1): a workgroup computes a
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
// Its channels-last outputs: with PACKED_OUT 3 stored whole words at a time
// (four channels of a pixel a word), with PACKED_OUT 4 (16-byte strides, Mg a multiple of 16)
// 16 bytes at a time (a fragment's 16 channels of a pixel, one lane a pixel). With LANES they
// are requantized where the accumulators hold them, in each lane's own elements, and their bytes
// brought to the lanes that store them by subgroup shuffles, with no round trip through shared
// memory; this needs the accumulators' elements where coopmat_lanes.glsl says they are, which each
// subgroup checks first (else the stage, as without LANES).
//
// With COOPMAT_EMULATED (devices without VK_KHR_cooperative_matrix, lavapipe in CI) the same source
// runs on coopmat_emulation.glsl: the matrices, their loads, stores and multiply-adds, and
// "subgroups" of 32 invocations, emulated with shared memory and plain arithmetic.

//
// Its declarations are qconv_coopmat_head.glsl's (under HALO), shared with qlinear_conv_coopmat.comp,
// and so is its epilogue, qconv_coopmat_epilogue.glsl (the requantized stores; under HALO its
// channels-last ones too).

#extension GL_GOOGLE_include_directive : require
#define HALO 1
#include "qconv_coopmat_head.glsl"

#if defined(HALO) && !defined(COOPMAT_EMULATED)
// AREG: the subgroup's A fragments, tap * CQ / 2 + c / 2 (the emulation's are offsets in As, made
// where they are used: an array of them took lavapipe a minute to compile)
const uint NAREG = AREG != 0 ? KH * KW * CQ / 2 : 1;
MAT_A areg[NAREG];
#endif
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

// Workgroup tile wg (pixel tile, channel tile, group, K slice), the k-th its workgroup computes; `next`
// the one after (TILES > 1).
void tile_main(uint wg, uint k, uint next) {
    uint t = gl_LocalInvocationID.x;
    uint ohw = p.out_sizes.z * p.out_sizes.w;
    uint P = p.out_sizes.x * ohw;
    uint G = packed_groups(), cp = packed_cp(), kp = packed_kp(), mp = packed_mp();
    uint hp = packed_hp(), wpx = packed_wp();
    uint ptiles = pixel_tiles(), mtiles = mp / BM;
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
    const uint FM = 2 * WM;
    uint warp = SUBGROUP_ID, wm = 0, wn = warp % 4;
    uint arow0 = AREG != 0 ? 2 * (warp % 4) : warp;   // AREG: the subgroup's first row of the tile
    // Fragments whose 16 rows all lie past the group's Mg output channels (tiles taller than Mg:
    // 4 channels in a 64-row tile) are not multiplied; the condition is uniform in each subgroup.
    uint mrow0 = mt * BM + wm * WM * 16;
    if (AREG != 0) mrow0 += (warp / 4) * 16;         // its one fragment of channels
    bool alive = mrow0 < p.mg;
    MAT_C acc[FM][2];
    [[unroll]] for (uint i = 0; i < FM; ++i)
        [[unroll]] for (uint j = 0; j < 2; ++j) acc[i][j] = MAT_C_ZERO;
    MAT_C sums[2] = { MAT_C_ZERO, MAT_C_ZERO };
    MAT_C sums2[2] = { MAT_C_ZERO, MAT_C_ZERO };      // AREG: its second row's
    MAT_A ones = MAT_A_ONES;
    bool wsum = WSUM != 0 && window_sums_needed() != 0;

    // the tile: image h_n, output rows h_oh0.., columns h_ow0..; this subgroup's row h_oh = h_oh0 + warp;
    // its input window's first row and column h_ih0, h_iw0 (stride and dilation 1)
    uint h_n, h_oh0, h_oh, h_ow0;
    int h_ih0, h_iw0;
    tile_origin(pt, h_n, h_oh0, h_ow0);
    h_oh = h_oh0 + warp;
    h_ih0 = int(h_oh0) - int(p.start_pad.x);
    h_iw0 = int(h_ow0) - int(p.start_pad.y);
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
#include "qconv_coopmat_epilogue.glsl"
}

void main() {
    uint wg = p.first / gl_WorkGroupSize.x + gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (TILES == 1) {
        tile_main(wg, 0u, 0u);
        return;
    }
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
}
