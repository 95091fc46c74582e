// Shared by the QUANTIZED_LINEAR_CONVOLUTION shaders: bindings, push constants, 8-bit loads and
// the requantizing output store (spec 4.3).

layout(constant_id = 1) const uint KH = 1;
layout(constant_id = 2) const uint KW = 1;
layout(constant_id = 3) const uint X_SIGNED = 0;
layout(constant_id = 4) const uint W_SIGNED = 0;
layout(constant_id = 5) const uint Y_SIGNED = 0;
// 1 when an input position o * stride + k * dilation - start_pad, or the input height or width,
// can pass 2^31 (UINT members up to 2^32-1): taps are then placed with exact 64-bit arithmetic.
layout(constant_id = 6) const uint WIDE = 0;
// 1 for ONNX's ConvInteger (dmlvk.onnx): the output is the int32 accumulator itself, no bias and
// no requantization (store_output writes whole int32 elements). Constants 7-10 belong to the
// cooperative-matrix and depthwise shaders.
layout(constant_id = 11) const uint INT32_OUT = 0;

layout(std430, binding = 0) readonly buffer X { uint x_words[]; };
layout(std430, binding = 1) readonly buffer W { uint w_words[]; };
// params: [0] xZP, [1] yZP, then per output channel m: multiplier bits [2+m], wZP [2+M+m], bias [2+2M+m];
// then [2+3M], the window-sum flag of qconv_packed.glsl
layout(std430, binding = 2) readonly buffer Params { uint params[]; };
layout(std430, binding = 3) buffer Y { uint y_words[]; };

layout(push_constant) uniform Push {
    uvec4 in_sizes;     // N C H W
    uvec4 in_strides;
    uvec4 w_strides;    // M Cg KH KW
    uvec4 out_sizes;    // N M OH OW
    uvec4 out_strides;
    uvec2 conv_stride;  // H W
    uvec2 dilation;
    uvec2 start_pad;
    uint cg;            // input channels per group
    uint mg;            // output channels per group
    uint items;
    uint first;
} p;

// Whether tap k of output position o lands inside the input, 0 <= o * stride + k * dil - pad < size,
// and at which index i. base = int(o * stride) - int(pad), precomputed per output (narrow case).
bool input_tap(uint o, uint k, uint stride, uint dil, uint pad, uint size, int base, out uint i) {
    if (WIDE == 0) {
        int v = base + int(k * dil);
        i = uint(v);
        return v >= 0 && v < int(size);
    }
    uint hi1, lo1, hi2, lo2, carry, borrow;
    umulExtended(o, stride, hi1, lo1);
    umulExtended(k, dil, hi2, lo2);
    uint lo = uaddCarry(lo1, lo2, carry);
    uint hi = hi1 + hi2 + carry;            // the position's high word (< 2^32: both products < 2^64 / 2)
    i = usubBorrow(lo, pad, borrow);
    return hi == borrow && i < size;        // the position minus pad is in [0, 2^32) and below size
}

int load_x(uint byte_offset) {
    int bit = int((byte_offset & 3u) * 8u);
    uint word = x_words[byte_offset >> 2];
    return X_SIGNED != 0 ? bitfieldExtract(int(word), bit, 8) : int(bitfieldExtract(word, bit, 8));
}

int load_w(uint byte_offset) {
    int bit = int((byte_offset & 3u) * 8u);
    uint word = w_words[byte_offset >> 2];
    return W_SIGNED != 0 ? bitfieldExtract(int(word), bit, 8) : int(bitfieldExtract(word, bit, 8));
}

// The output byte for a biased accumulator a (int32, wrapped) and the channel's multiplier:
// requantized in float32 with round-half-even, the zero point added, saturated (spec 4.3).
uint requantize_biased(int a, float mult, float yzp) {
    float r = roundEven(float(a) * mult);
    float lo = Y_SIGNED != 0 ? -128.0 : 0.0;
    float hi = Y_SIGNED != 0 ? 127.0 : 255.0;
    // Clamp before adding the zero point: |r| > 512 saturates whatever the zero point is.
    float q = clamp(clamp(r, -512.0, 512.0) + yzp, lo, hi);
    return uint(int(q)) & 0xFFu;
}

// The requantization of whole-word stores (conv.dot, the cooperative-matrix kernels' packed
// outputs), as requantize_biased computes it, without conversions back from float: for a biased
// sum a, t = float(a) * mult + MAGIC (two roundings, as float32 does them one after the other) is
// MAGIC + roundEven(float(a) * mult) where that product is below 2^22 in magnitude (larger ones land
// beyond the saturation bounds either way). Clamped to MAGIC + [LO - yZP, LO + 255 - yZP] (LO = 0,
// or -128 for signed outputs), its bits less 0x4B400000, plus yZP - LO, are the output byte less
// LO. So four outputs' bits shifted to their bytes and summed (mod 2^32), plus that constant in
// every byte, are the output word (signed: its bytes' top bits flipped): requantized_word.
const float MAGIC = 12582912.0;                  // 1.5 * 2^23: bits 0x4B400000
struct Requant {
    float lo, hi;                                // the clamp bounds
    uint word_add, flip;                         // added to the summed bits, then flipped
};

// For an output of zero point yzp, signed where y_signed is not 0.
Requant requant_signed(int yzp, uint y_signed) {
    int LO = y_signed != 0 ? -128 : 0;
    float lo = MAGIC + float(LO - yzp);
    return Requant(lo, lo + 255.0, (uint(yzp - LO) - 0x4B400000u) * 0x01010101u,
                   y_signed != 0 ? 0x80808080u : 0u);
}

Requant requant_for(int yzp) { return requant_signed(yzp, Y_SIGNED); }

// An output's bits, f * mult + MAGIC clamped to the bounds, for f = float(a) (see above).
uint requantized_float_bits(float f, float mult, Requant rq) {
    precise float v = f * mult;
    precise float t = v + MAGIC;
    return floatBitsToUint(clamp(t, rq.lo, rq.hi));
}

uint requantized_bits(int a, float mult, Requant rq) { return requantized_float_bits(float(a), mult, rq); }

// The output word of four outputs' bits shifted to their bytes and summed.
uint requantized_word(uint summed, Requant rq) { return (summed + rq.word_add) ^ rq.flip; }

// The output byte for accumulator acc of output channel m: the bias added (wrapping, as int32
// does), then requantize_biased with the channel's parameters.
uint requantize(uint m, int acc) {
    uint M = p.out_sizes.y;
    return requantize_biased(acc + int(params[2 + 2 * M + m]), uintBitsToFloat(params[2 + m]),
                             float(int(params[1])));
}

uint output_offset(uint n, uint m, uint oh, uint ow) {
    return n * p.out_strides.x + m * p.out_strides.y + oh * p.out_strides.z + ow * p.out_strides.w;
}

// Stores output byte b at byte offset off with atomics, since outputs may share words with other
// invocations' outputs under any DirectML strides.
void store_byte(uint off, uint b) {
    uint bit = (off & 3u) * 8u;
    atomicAnd(y_words[off >> 2], ~(0xFFu << bit));
    atomicOr(y_words[off >> 2], b << bit);
}

// Stores one output: its byte (store_byte), or with INT32_OUT the int32 accumulator.
void store_output(uint n, uint m, uint oh, uint ow, int acc) {
    uint off = output_offset(n, m, oh, ow);
    if (INT32_OUT != 0) {          // off counts int32 elements
        y_words[off] = uint(acc);
        return;
    }
    store_byte(off, requantize(m, acc));
}
