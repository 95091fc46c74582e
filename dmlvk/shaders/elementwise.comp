#version 450
#extension GL_GOOGLE_include_directive : require
// ELEMENT_WISE_ADD, ELEMENT_WISE_MULTIPLY and ELEMENT_WISE_CLIP (ops/elementwise.py), element by
// element through any strides (up to 8 dimensions; a stride of 0 broadcasts). FLOAT32 in float32;
// FLOAT16 read exactly into float32, computed there and rounded once to float16 toward zero, a
// magnitude past the largest finite float16 an infinity (as DirectML's ADD, MULTIPLY and CLIP give,
// measured); integers wrap (the two's-complement result's low bits), 64-bit ones as pairs of words.
// CLIP: x * Scale + Bias where a ScaleBias is given (two roundings; integers through float32 then, the
// result truncated toward zero and saturated), then min(Max, .) and max(Min, .), a NaN becoming Max.
// Params: the dimension count, the sizes [8], A's, B's and the output's element strides [8 each];
// then CLIP's ScaleBias flag, Scale's and Bias's bits, Min's and Max's two words each (the element
// type's values; float16 ones as float32 bits of their float16 value; with a ScaleBias on integers,
// float32 bits). Elements narrower than a word are written with atomicAnd/atomicOr.

layout(local_size_x_id = 0) in;
// 0 FLOAT32, 1 FLOAT16, 2 INT32, 3 UINT32, 4 INT16, 5 UINT16, 6 INT8, 7 UINT8, 8 INT64, 9 UINT64
layout(constant_id = 1) const uint TYPE = 0;
layout(constant_id = 2) const uint OP = 0;          // 0 ADD, 1 MULTIPLY, 2 CLIP

layout(std430, binding = 0) restrict readonly buffer A { uint a[]; };
layout(std430, binding = 1) restrict readonly buffer B { uint b[]; };
layout(std430, binding = 2) restrict readonly buffer Params { uint params[]; };
layout(std430, binding = 3) buffer Y { uint y[]; };

layout(push_constant) uniform Push {
    uint count;
    uint items;
    uint first;
} p;

#include "float16_bits.glsl"

const uint BYTES = TYPE >= 8 ? 8 : (TYPE <= 3 && TYPE != 1 ? 4 : (TYPE <= 5 ? 2 : 1));
const uint EPW = BYTES >= 4 ? 1 : 4 / BYTES;
const uint MASK = BYTES >= 4 ? 0xFFFFFFFFu : (1u << (8 * BYTES)) - 1u;
const bool SIGNED = TYPE == 2 || TYPE == 4 || TYPE == 6 || TYPE == 8;

uint bits_a(uint e) { return (a[e / EPW] >> (8 * BYTES * (e % EPW))) & MASK; }
uint bits_b(uint e) { return (b[e / EPW] >> (8 * BYTES * (e % EPW))) & MASK; }

float float_of(uint bits) { return TYPE == 0 ? uintBitsToFloat(bits) : unpackHalf2x16(bits).x; }

// min(hi, x), then max(lo, .): a NaN becomes hi, and lo wins where lo > hi (DirectML, measured)
float clip(float x, float lo, float hi) {
    float r = x < hi ? x : hi;
    return r > lo ? r : lo;
}

int signed_of(uint v) { return BYTES == 4 ? int(v) : bitfieldExtract(int(v), 0, int(8 * BYTES)); }

// (low, high) words compared as 64-bit integers: x < y
bool less64(uvec2 x, uvec2 y) {
    if (x.y != y.y) return SIGNED ? int(x.y) < int(y.y) : x.y < y.y;
    return x.x < y.x;
}

void main() {
    uint item = p.first + (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x
              + gl_LocalInvocationID.x;
    if (item >= p.count) return;
    uint dims = params[0], i = item, ai = 0, bi = 0, yi = 0;
    for (uint d = dims; d-- > 0;) {
        uint size = params[1 + d], k = i % size;
        i /= size;
        ai += k * params[9 + d];
        bi += k * params[17 + d];
        yi += k * params[25 + d];
    }
    if (BYTES == 8) {
        uvec2 x = uvec2(a[2 * ai], a[2 * ai + 1]), r;
        if (OP == 2) {
            uvec2 lo = uvec2(params[36], params[37]), hi = uvec2(params[38], params[39]);
            r = less64(x, lo) ? lo : x;
            r = less64(hi, r) ? hi : r;
        } else {
            uvec2 z = uvec2(b[2 * bi], b[2 * bi + 1]);
            if (OP == 0) {
                uint carry;
                r.x = uaddCarry(x.x, z.x, carry);
                r.y = x.y + z.y + carry;
            } else {
                uint hi;
                umulExtended(x.x, z.x, hi, r.x);
                r.y = hi + x.x * z.y + x.y * z.x;
            }
        }
        y[2 * yi] = r.x;
        y[2 * yi + 1] = r.y;
        return;
    }
    uint xb = bits_a(ai), r;
    if (TYPE <= 1) {
        float x = float_of(xb);
        precise float v;
        if (OP == 2) {
            precise float scaled = x * uintBitsToFloat(params[34]);
            precise float biased = scaled + uintBitsToFloat(params[35]);
            v = clip(params[33] != 0u ? biased : x, uintBitsToFloat(params[36]), uintBitsToFloat(params[38]));
        } else {
            float z = float_of(bits_b(bi));
            v = OP == 0 ? x + z : x * z;
        }
        r = TYPE == 0 ? floatBitsToUint(v) : half_bits_toward_zero(v, true);
    } else if (OP == 2 && params[33] != 0u) {        // integers through float32
        float x = SIGNED ? float(signed_of(xb)) : float(xb);
        precise float scaled = x * uintBitsToFloat(params[34]);
        precise float biased = scaled + uintBitsToFloat(params[35]);
        float v = trunc(clip(biased, uintBitsToFloat(params[36]), uintBitsToFloat(params[38])));
        if (SIGNED) {
            float top = exp2(float(8 * BYTES - 1));
            r = v >= top ? MASK >> 1 : (v < -top ? (MASK >> 1) + 1u : uint(int(v)));
        } else {
            r = v >= exp2(float(8 * BYTES)) ? MASK : (v < 0.0 ? 0u : uint(v));
        }
        r &= MASK;
    } else if (OP == 2) {
        if (SIGNED) {
            int x = signed_of(xb), lo = int(params[36]), hi = int(params[38]);
            r = uint(min(hi, max(lo, x))) & MASK;
        } else {
            r = min(params[38], max(params[36], xb)) & MASK;
        }
    } else {
        uint z = bits_b(bi);
        r = (OP == 0 ? xb + z : xb * z) & MASK;
    }
    if (BYTES == 4) {
        y[yi] = r;
    } else {
        uint bit = 8 * BYTES * (yi % EPW);
        atomicAnd(y[yi / EPW], ~(MASK << bit));
        atomicOr(y[yi / EPW], r << bit);
    }
}
