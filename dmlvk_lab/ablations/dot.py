"""dmlvk_lab/shader_ablation.py recipe: the parts of conv.dot's rows-input kernel (qlinear_conv_dot.comp;
the ESPCN 5x5 1->64 layer, whose channels-last output the halo kernel reads) cut out one at a time.
Each cut but "as is" changes the output."""
F = "qlinear_conv_dot.comp"
# (the store of a pixel's 16 channels of an invocation, CL_VEC with DOT_VEC_CHANNELS 16: the default)
STORE = ("                y_vec4[output_offset(n, m0, oh, ow0 + j) >> 4] = uvec4(w[0], w[min(1u, LAST_W)], "
         "w[min(2u, LAST_W)], w[LAST_W]);")
DOTS = "    } else for (uint ic = 0; ic < CG; ++ic) {"
NO_STORES = (F, STORE, f"                {{ if ({NEVER}) " + STORE.lstrip() + " }")
NO_DOTS = (F, DOTS, f"    }} else if ({NEVER}) for (uint ic = 0; ic < CG; ++ic) {{")

VARIANTS = {
    "as is": [],
    "no channels-last stores": [NO_STORES],
    "no dot products": [NO_DOTS],
    "no dot products, no stores": [NO_DOTS, NO_STORES],
}
