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
// With COOPMAT_EMULATED (devices without VK_KHR_cooperative_matrix, lavapipe in CI) the same source
// runs on coopmat_emulation.glsl: the matrices, their loads, stores and multiply-adds, and
// "subgroups" of 32 invocations, emulated with shared memory and plain arithmetic.

//
// Its declarations are qconv_coopmat_head.glsl's, shared with qlinear_conv_coopmat_halo.comp, and
// so is its epilogue, qconv_coopmat_epilogue.glsl (the requantized stores).

#extension GL_GOOGLE_include_directive : require
#include "qconv_coopmat_head.glsl"

// Workgroup tile wg (pixel tile, channel tile, group, K slice), the k-th its workgroup computes; `next`
// the one after (TILES > 1).
void tile_main(uint wg, uint k, uint next) {
    uint t = gl_LocalInvocationID.x;
    uint ohw = p.out_sizes.z * p.out_sizes.w;
    uint P = p.out_sizes.x * ohw;
    uint G = packed_groups(), cp = packed_cp(), kp = packed_kp(), mp = packed_mp();
    uint hp = packed_hp(), wpx = packed_wp();
    uint ptiles = (P + BN - 1) / BN, mtiles = mp / BM;
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
    const uint FM = WM;
    uint warp = SUBGROUP_ID, wm = warp / 4, wn = warp % 4;
    // Fragments whose 16 rows all lie past the group's Mg output channels (tiles taller than Mg:
    // 4 channels in a 64-row tile) are not multiplied; the condition is uniform in each subgroup.
    uint mrow0 = mt * BM + wm * WM * 16;
    bool alive = mrow0 < p.mg;
    MAT_C acc[FM][2];
    [[unroll]] for (uint i = 0; i < FM; ++i)
        [[unroll]] for (uint j = 0; j < 2; ++j) acc[i][j] = MAT_C_ZERO;
    MAT_C sums[2] = { MAT_C_ZERO, MAT_C_ZERO };
    MAT_A ones = MAT_A_ONES;
    bool wsum = WSUM != 0 && window_sums_needed() != 0;

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
}
