"""dmlvk_lab/shader_ablation.py recipe: conv.dot's channels-last output (the ESPCN 5x5 1->64 layer, which
the halo kernel reads) in blocks of 8 channels an invocation (DOT_VEC_CHANNELS 8; 16 is the default)
stored 8 channels of a pixel a store (CL_VEC, DOT_VEC_STORES) against four channels a word, and
either without its stores (a bound: the output changes)."""
F = "qlinear_conv_dot.comp"
VEC = "                y_vec2[output_offset(n, m0, oh, ow0 + j) >> 3] = uvec2(w[0], w[LAST_W]);"
WORD = "                [[unroll]] for (uint k = 0; k < MB / 4; ++k) y_words[output_offset(n, m0 + 4 * k, oh, ow0 + j) >> 2] = w[k];"
EIGHT = {"DOT_VEC_CHANNELS": 8}
VARIANTS = {
    "8-channel stores": {"edits": [], "tuning": EIGHT},
    "word stores": {"edits": [], "tuning": dict(EIGHT, DOT_VEC_STORES=False)},
    "8-channel stores cut": {"edits": [(F, VEC, f"                {{ if ({NEVER}) " + VEC.lstrip() + " }")],
                             "tuning": EIGHT},
    "word stores cut": {"edits": [(F, WORD, WORD.replace(" y_words", f" if ({NEVER}) y_words"))],
                        "tuning": dict(EIGHT, DOT_VEC_STORES=False)},
}
