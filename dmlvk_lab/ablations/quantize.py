"""dmlvk_lab/shader_ablation.py recipe: QuantizeLinear (quantize_linear.comp) as committed (its four loads
issued together, the loop unrolled; per tensor, x times the scale's reciprocal in double) against
as it was before: a rolled loop that NVIDIA's driver kept rolled, each element's load, then a double
division with its slow path, one after the other (dmlvk_lab/sass.py). The outputs are the same."""
F = "quantize_linear.comp"
NOW = """    uint out_word = 0;
    double rcp = PER_AXIS != 0 ? 0.0 : 1.0 / double(uintBitsToFloat(params[0]));
    float xs[4];
    [[unroll]] for (uint e = 0; e < 4; ++e) xs[e] = word * 4 + e < p.count ? x[word * 4 + e] : 0.0;
    [[unroll]] for (uint e = 0; e < 4; ++e) {
        uint i = word * 4 + e;
        if (i >= p.count) break;
        uint ch = PER_AXIS != 0 ? (i / p.inner) % p.channels : 0;
        float scale = uintBitsToFloat(params[ch]);
        int zp = int(params[p.channels + ch]);
        float v = xs[e];
        int q;
        if (isnan(v)) {
            q = lo;
        } else {
            float quotient = PER_AXIS != 0 ? float(double(v) / double(scale)) : float(double(v) * rcp);"""
DIVIDING = NOW.replace("PER_AXIS != 0 ? float(double(v) / double(scale)) : float(double(v) * rcp);",
                       "float(double(v) / double(scale));")
# the loop as it was: rolled, each element loaded where it is used
BEFORE = DIVIDING.replace(NOW.splitlines()[1] + "\n", "").replace(NOW.splitlines()[2] + "\n", "").replace(
    NOW.splitlines()[3] + "\n", "").replace("[[unroll]] for", "for").replace("float v = xs[e];", "float v = x[i];")

VARIANTS = {
    "as is": [],
    "loads together, dividing": [(F, NOW, DIVIDING)],
    "as before (rolled, dividing)": [(F, NOW, BEFORE)],
}
