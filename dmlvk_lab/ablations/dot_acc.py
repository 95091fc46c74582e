"""dmlvk_lab/shader_ablation.py recipe: conv.dot's and conv.dot.float's packed dot products (qconv_dot.glsl)
added to their sums by the dot product instruction itself. NVIDIA's compiler (driver 580.159.04, the
H200) turns each `acc += dot_w(x, w)` into IDP.4A with a zero accumulator and a separate IADD3 or
IMAD.IADD (dmlvk_lab/sass.py): an extra instruction a dot product. SPIR-V's only dot products with an
accumulator saturate (OpSDotAccSat, OpSUDotAccSat), which equals the wrapping sum wherever no partial
sum leaves int32; these variants measure whether the driver then uses IDP.4A's own accumulator.
"as is" against "accumulating"; "dot first" writes the sum the other way round (dot + acc)."""
Q = "qconv_dot.glsl"
D = "qlinear_conv_dot.comp"
SUDOT = "int sudot(int a, int b, spirv_literal int packed_4x8);     // a's bytes signed, b's unsigned\n"
ACC_DECL = (Q, SUDOT, SUDOT + """spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4453)
int sdot_acc(int a, int b, int acc, spirv_literal int packed_4x8);
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4455)
int sudot_acc(int a, int b, int acc, spirv_literal int packed_4x8);
int dot_w_acc(uint x, uint w, int acc) {
    return X_SIGNED != 0 ? sdot_acc(int(x), int(w), acc, 0) : sudot_acc(int(w), int(x), acc, 0);
}
""")
SITES = ["acc[mb][j] += dot_w(xv[j * SX + kw][e], wv);", "acc[mb][j] += dot_w(xw[j][kq], wv);",
         "acc[mb][j] += dot_w(colw[j], wv);", "acc[k][mb] += dot_w(xk[e], wsh[at + e]);"]


def _acc(site: str) -> tuple:
    target, call = site.split(" += ")
    return (D, site, f"{target} = {call.replace('dot_w(', 'dot_w_acc(')[:-2]}, {target});")


def _first(site: str) -> tuple:
    target, call = site.split(" += ")
    return (D, site, f"{target} = {call[:-1]} + {target};")


VARIANTS = {
    "as is": [],
    "accumulating": [ACC_DECL] + [_acc(s) for s in SITES],
    "dot first": [_first(s) for s in SITES],
}
