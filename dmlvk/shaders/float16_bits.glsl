// float32 to float16 bits, rounded toward zero as DirectML's float16 results are (measured under Wine,
// docs/directml.md), in integer arithmetic (no reliance on the driver's conversion): NaN kept (quiet),
// infinities kept; a finite magnitude past the largest finite float16 (65504) gives the largest finite
// value, or an infinity where past_max_is_infinite (ELEMENT_WISE_ADD, MULTIPLY and CLIP do that; the
// activations give 65504). Included by activation.comp, resample.comp and elementwise.comp.
uint half_bits_toward_zero(float f, bool past_max_is_infinite) {
    uint v = floatBitsToUint(f), sign = (v >> 16) & 0x8000u, e = (v >> 23) & 0xFFu, m = v & 0x7FFFFFu;
    if (e == 255u)
        return sign | 0x7C00u | (m != 0u ? 0x200u | (m >> 13) : 0u);
    int exp = int(e) - 112;                       // the float16 biased exponent
    if (exp >= 31 || (exp == 30 && (m >> 13) == 0x3FFu && (m & 0x1FFFu) != 0u))       // past 65504
        return sign | (past_max_is_infinite ? 0x7C00u : 0x7BFFu);
    if (exp <= 0)                                 // a float16 subnormal, or zero
        return exp < -10 ? sign : sign | ((m | 0x800000u) >> uint(14 - exp));
    return sign | (uint(exp) << 10) | (m >> 13);
}
