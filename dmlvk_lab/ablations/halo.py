"""dmlvk_lab/shader_ablation.py recipe: the parts of the halo kernel (conv.coopmat.halo: the ESPCN
3x3 64->32 layer) cut out one at a time. Each cut but "as is" changes the output."""
F = "qlinear_conv_coopmat_halo.comp"
E = "qconv_coopmat_epilogue.glsl"       # (shared with the packed kernel)
TAPS = "        if (alive) UNROLL_REAL for (uint tap = 0; tap < KH * KW; ++tap) {"
AREG_TAPS = "            if (alive) UNROLL_REAL for (uint c = 0; c < CQW; c += 2) {"      # (HALO_AREG, the default)
WINDOW = "    return inside ? xp[at] ^ flip4 : uvec4(((params[0] & 0xFFu) * 0x01010101u) ^ flip4);"
FILTER = "                As[row * AQ + kq] = wp[a0 + row * (kp / 16) + (kq / CQW) * CQ + ks * CQW + kq % CQW];"
AREG_FILTER = "                coopMatLoad(areg[f], wp, a0 + i0 * (kp / 16) + tap * CQ + c, kp / 16, gl_CooperativeMatrixLayoutRowMajor);"
EPILOGUE = "    if (SPLIT > 1) {"
# (the lanes' epilogue's 16-byte stores, LANES: the default on NVIDIA)
STORE = "uint ow = h_ow0 + 16 * k + c;\n                    if (f_oh < p.out_sizes.z && ow < p.out_sizes.w && mf < p.mg)"
# the accumulators summed and stored only where NEVER holds: the multiplies stay, the epilogue goes
# (real matrices: the emulated ones have no sum)
NO_EPILOGUE = (F, EPILOGUE, """#if defined(HALO) && !defined(COOPMAT_EMULATED)
    {
        MAT_C all_ = MAT_C_ZERO;
        [[unroll]] for (uint i = 0; i < FM; ++i) [[unroll]] for (uint j = 0; j < 2; ++j) all_ = all_ + acc[i][j];
        if (""" + NEVER + """) coopMatStore(all_, part, t, 16, gl_CooperativeMatrixLayoutRowMajor);
        return;
    }
#endif
""" + EPILOGUE)
NO_TAPS = [(F, t, t.replace("if (alive)", f"if (alive && {NEVER})")) for t in (TAPS, AREG_TAPS)]
NO_LOADS = [(F, WINDOW, "    return uvec4(((params[0] & 0xFFu) * 0x01010101u) ^ flip4);"),
            (F, FILTER, "                As[row * AQ + kq] = uvec4(row);"),
            (F, AREG_FILTER, "                areg[f] = MAT_A(int8_t(f));")]

VARIANTS = {
    "as is": [],
    "no taps": NO_TAPS,
    "no global loads": NO_LOADS,
    "no epilogue": [NO_EPILOGUE],
    "no final stores": [(E, STORE, STORE.replace("mf < p.mg)", f"mf < p.mg && {NEVER})"))],
    "loads alone": NO_TAPS + [NO_EPILOGUE],
    "epilogue alone": NO_LOADS + NO_TAPS,
    "launch and shared fill": NO_LOADS + NO_TAPS + [NO_EPILOGUE],
}
