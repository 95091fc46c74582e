"""tools/shader_ablation.py recipe: QuantizeLinear (quantize_linear.comp, the ESPCN's first dispatch)
reading each output word's 4 floats as one vector, as it does, against 4 scalar loads. The outputs
are the same."""
F = "quantize_linear.comp"
WHOLE = "    bool whole = word * 4 + 3 < p.count;"
VARIANTS = {
    "vector loads (as is)": [],
    "scalar loads": [(F, WHOLE, "    bool whole = false;")],
}
