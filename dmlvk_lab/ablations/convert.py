"""dmlvk_lab/shader_ablation.py recipe: the requantizing epilogues' integer-to-float conversions (one an
output, float(a) in requantized_bits, qconv_common.glsl) replaced by the bits trick the stores
already use the other way: for |a| < 2^22, intBitsToFloat(a + 0x4B400000) is MAGIC + a exactly, so
less MAGIC it is float(a) with two additions instead of one conversion. The dequantizing epilogue
(conv.dot.float) likewise. "no conversion" is a bound, not an answer: its outputs are wrong. On the
H200 neither gained (benchmarks/README.md), so the shaders keep their conversions."""
Q = "qconv_common.glsl"
D = "qlinear_conv_dot.comp"
BITS = "uint requantized_bits(int a, float mult, Requant rq) { return requantized_float_bits(float(a), mult, rq); }"
MAGIC_BITS = (Q, BITS, "uint requantized_bits(int a, float mult, Requant rq) { precise float f = "
              "intBitsToFloat(a + 0x4B400000) - MAGIC; return requantized_float_bits(f, mult, rq); }")
NO_CONVERSION = (Q, BITS, "uint requantized_bits(int a, float mult, Requant rq) { "
                 "return requantized_float_bits(intBitsToFloat(a), mult, rq); }")
DQ = """    int q = int(bits - 0x4B400000u) + yzp;
    precise float f = float(q - int(DQ_ZP_BITS)) * uintBitsToFloat(DQ_SCALE);"""
MAGIC_DQ = (D, DQ, """    uint qb = bits + uint(yzp - int(DQ_ZP_BITS));
    precise float f = (uintBitsToFloat(qb) - MAGIC) * uintBitsToFloat(DQ_SCALE);""")

VARIANTS = {
    "as is": [],
    "requantization without conversions": [MAGIC_BITS],
    "requantization and dequantization without conversions": [MAGIC_BITS, MAGIC_DQ],
    "no conversion (a bound; wrong outputs)": [NO_CONVERSION, MAGIC_DQ],
}
