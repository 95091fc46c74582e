"""tools/shader_ablation.py recipe: the parts of conv.dot's rows-input kernel (qlinear_conv_dot.comp;
the ESPCN 5x5 1->64 layer, whose channels-last output the halo kernel reads) cut out one at a time.
Each cut but "as is" changes the output."""
F = "qlinear_conv_dot.comp"
STORE = "                y_words[output_offset(n, m0 + 4 * k, oh, ow0 + j) >> 2] = requantized_word(word, rq);"
DOTS = "    } else for (uint ic = 0; ic < CG; ++ic) {"
NO_STORES = (F, STORE, f"                if ({NEVER}) " + STORE.lstrip())
NO_DOTS = (F, DOTS, f"    }} else if ({NEVER}) for (uint ic = 0; ic < CG; ++ic) {{")

VARIANTS = {
    "as is": [],
    "no channels-last stores": [NO_STORES],
    "no dot products": [NO_DOTS],
    "no dot products, no stores": [NO_DOTS, NO_STORES],
}
