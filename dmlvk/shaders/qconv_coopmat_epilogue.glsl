// The cooperative-matrix convolution kernels' epilogue, inside tile_main (qlinear_conv_coopmat.comp,
// qlinear_conv_coopmat_halo.comp): the accumulators corrected to the exact int32 sums (the window
// sums times cw, corr, the bias), requantized (qconv_common.glsl's requantized_bits) and stored as
// the output's layout asks: channels-last 16 bytes or a word a store (HALO: in the accumulators'
// lanes, or through the subgroup's stage), packed NCHW 16 bytes or a word a store, or a byte at a
// time (any strides).
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
