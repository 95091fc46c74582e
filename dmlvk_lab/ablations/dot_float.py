"""dmlvk_lab/shader_ablation.py recipe: the parts of conv.dot.float on a channels-last input
(qlinear_conv_dot.comp with CL_IN and D2S: the ESPCN's 3x3 32->4 last layer with its DepthToSpace and
DequantizeLinear) cut out one at a time, without WALK (DOT_WALK 0: each invocation OPT outputs of a
row, its window loaded for them; the path these edits cut). Each cut but "as is" changes the output."""
F = "qlinear_conv_dot.comp"
DOTS = "[[unroll]] for (uint j = 0; j < OPT; ++j) acc[mb][j] += dot_w(xv[j * SX + kw][e], wv);"
LOAD = "? x_vec4[(xbase + uint(y) * p.in_strides.z + uint(x) * p.in_strides.w) / 16 + v] : uvec4(zp_word);"
STORE = "                    y_vec4[at + w4] = v;"
EPILOGUE = ("            [[unroll]] for (uint j = 0; j < OPT; ++j) f[mb][j] = out_float(out_bits(acc[mb][j], rs[j], "
            "ch[mb], rq), yzp);")
# the multiply-adds as one xor each: the loads stay alive
NO_DOTS = (F, DOTS, DOTS.replace("+= dot_w(xv[j * SX + kw][e], wv)", "^= int(xv[j * SX + kw][e] ^ wv)"))
# every window position the zero point (plus its column, so that no two are the same)
NO_LOADS = (F, LOAD, "? uvec4(zp_word + c) : uvec4(zp_word);")
NO_STORES = (F, STORE, f"                    if ({NEVER}) y_vec4[at + w4] = v;")
NO_EPILOGUE = (F, EPILOGUE, "            [[unroll]] for (uint j = 0; j < OPT; ++j) f[mb][j] = intBitsToFloat(acc[mb][j]);")

NO_WALK = {"DOT_WALK": 0}

VARIANTS = {
    "as is": {"edits": [], "tuning": NO_WALK},
    "no dot products": {"edits": [NO_DOTS], "tuning": NO_WALK},
    "no input loads": {"edits": [NO_LOADS], "tuning": NO_WALK},
    "no requantization": {"edits": [NO_EPILOGUE], "tuning": NO_WALK},
    "no float stores": {"edits": [NO_STORES], "tuning": NO_WALK},
    "loads alone": {"edits": [NO_DOTS, NO_EPILOGUE, NO_STORES], "tuning": NO_WALK},
}
