#version 450
#extension GL_GOOGLE_include_directive : require
// ACTIVATION_LEAKY_RELU and ACTIVATION_PARAMETERIZED_RELU (ops/activations.py), element by element
// through any strides (up to 8 dimensions): y = x >= 0 ? x : a * x, with a the Alpha (LEAKY) or the
// slope tensor's element (PRELU). FLOAT32 in float32; FLOAT16 read into float32 (exact), the product
// taken in float32 and rounded once to float16 toward zero, as DirectML does (by integer arithmetic:
// no reliance on the driver's conversion); INT32/INT16/INT8 (PRELU) as the two's-complement product's
// low bits. Elements narrower than a word are written with atomicAnd/atomicOr. Params: at word 0 the
// dimension count, the sizes [8], the input's, the slope's and the output's element strides [8 each],
// then Alpha's bits (word 33).

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint TYPE = 0;        // 0 FLOAT32, 1 FLOAT16, 2 INT32, 3 INT16, 4 INT8
layout(constant_id = 2) const uint PRELU = 0;

layout(std430, binding = 0) restrict readonly buffer X { uint x[]; };
layout(std430, binding = 1) restrict readonly buffer S { uint s[]; };          // PRELU's slope
layout(std430, binding = 2) restrict readonly buffer Params { uint params[]; };
layout(std430, binding = 3) buffer Y { uint y[]; };

layout(push_constant) uniform Push {
    uint count;
    uint items;
    uint first;
} p;

#include "float16_bits.glsl"

const uint BYTES = TYPE == 0 || TYPE == 2 ? 4 : (TYPE == 4 ? 1 : 2);
const uint EPW = 4 / BYTES;
const uint MASK = BYTES == 4 ? 0xFFFFFFFFu : (1u << (8 * BYTES)) - 1u;

uint bits_at_x(uint e) { return (x[e / EPW] >> (8 * BYTES * (e % EPW))) & MASK; }
uint bits_at_s(uint e) { return (s[e / EPW] >> (8 * BYTES * (e % EPW))) & MASK; }

float half_value(uint h) { return unpackHalf2x16(h).x; }

int signed_of(uint b) { return BYTES == 4 ? int(b) : bitfieldExtract(int(b), 0, int(8 * BYTES)); }

void main() {
    uint item = p.first + (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x
              + gl_LocalInvocationID.x;
    if (item >= p.count) return;
    uint dims = params[0], i = item, xi = 0, si = 0, yi = 0;
    for (uint d = dims; d-- > 0;) {
        uint size = params[1 + d], k = i % size;
        i /= size;
        xi += k * params[9 + d];
        si += k * params[17 + d];
        yi += k * params[25 + d];
    }
    uint xb = bits_at_x(xi), r;
    if (TYPE <= 1) {
        float v = TYPE == 0 ? uintBitsToFloat(xb) : half_value(xb);
        float a = PRELU != 0 ? (TYPE == 0 ? uintBitsToFloat(bits_at_s(si)) : half_value(bits_at_s(si)))
                             : uintBitsToFloat(params[33]);
        precise float res = v >= 0.0 ? v : a * v;
        r = TYPE == 0 ? floatBitsToUint(res) : half_bits_toward_zero(res, false);
    } else {
        int v = signed_of(xb);
        r = uint(v >= 0 ? v : signed_of(bits_at_s(si)) * v) & MASK;
    }
    if (BYTES == 4) {
        y[yi] = r;
    } else {
        uint bit = 8 * BYTES * (yi % EPW);
        atomicAnd(y[yi / EPW], ~(MASK << bit));
        atomicOr(y[yi / EPW], r << bit);
    }
}
