// Packed 4 x 8-bit dot products (SPV_KHR_integer_dot_product, shaderIntegerDotProduct) for the
// convolution shaders that multiply four taps at once: the input bytes (signed with X_SIGNED) by
// int8 filter bytes, and sums of input bytes under a mask of 0x01 bytes; and the 4 bytes of a window
// row a dot product takes.
#extension GL_EXT_spirv_intrinsics : require

spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot(int a, int b, spirv_literal int packed_4x8);
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4451)
uint udot(uint a, uint b, spirv_literal int packed_4x8);
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4452)
int sudot(int a, int b, spirv_literal int packed_4x8);     // a's bytes signed, b's unsigned

// sum over 4 bytes of x (signed with X_SIGNED) times the int8 bytes of w.
int dot_w(uint x, uint w) { return X_SIGNED != 0 ? sdot(int(x), int(w), 0) : sudot(int(w), int(x), 0); }
// sum of the bytes of x where mask has a 1 byte.
int dot_mask(uint x, uint mask) { return X_SIGNED != 0 ? sdot(int(x), int(mask), 0) : int(udot(x, mask, 0)); }

// A window row's bytes [o, o + 4), from its word holding byte o (lo) and the next one (hi); o is
// static after unrolling.
uint four_bytes(uint lo, uint hi, uint o) {
    uint s = 8u * (o % 4u);
    return s == 0u ? lo : (lo >> s) | (hi << (32u - s));
}
