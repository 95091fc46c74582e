"""tools/shader_ablation.py recipe: conv.dot's channels-last output (the ESPCN 5x5 1->64 layer, which
the halo kernel reads) stored 8 channels of a pixel a store (CL_VEC, DOT_VEC_STORES: the default)
against four channels a word, and either without its stores (a bound: the output changes)."""
F = "qlinear_conv_dot.comp"
VEC = "                y_vec2[output_offset(n, m0, oh, ow0 + j) >> 3] = uvec2(w[0], w[1]);"
WORD = "                [[unroll]] for (uint k = 0; k < MB / 4; ++k) y_words[output_offset(n, m0 + 4 * k, oh, ow0 + j) >> 2] = w[k];"
VARIANTS = {
    "8-channel stores (as is)": [],
    "word stores": {"edits": [], "tuning": {"DOT_VEC_STORES": False}},
    "8-channel stores cut": [(F, VEC, f"                {{ if ({NEVER}) " + VEC.lstrip() + " }")],
    "word stores cut": {"edits": [(F, WORD, WORD.replace(" y_words", f" if ({NEVER}) y_words"))],
                        "tuning": {"DOT_VEC_STORES": False}},
}
