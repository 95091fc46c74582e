#version 450
#extension GL_GOOGLE_include_directive : require
// RESAMPLE, RESAMPLE1, RESAMPLE2 and RESAMPLE3 (ops/resample.py), an invocation per output element
// through any strides. The input coordinates were computed on the host, a table per dimension:
// nearest neighbour gathers the element its tables name (the bits copied, whatever the type); LINEAR
// weighs the 2^4 neighbours dimension by dimension, from the first: v = v0 + (v1 - v0) * w in float32
// (FLOAT16 read exactly, the result rounded once to float16 toward zero as DirectML's float16 results
// are; INT8/UINT8 truncated toward zero). That order, the lerp's form and the roundings are DirectML's,
// measured under Wine (ops/resample.py). Params: the dimension count (4: the host
// right-aligns fewer), the output's sizes [4], its element strides [4], the input's [4], the word
// where each dimension's table starts [4], the input's sizes [4]; then the tables (nearest: an input index per output
// coordinate; linear: the two input indices and the two weights' bits). Elements narrower than a word
// are written with atomicAnd/atomicOr.

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint TYPE = 0;        // 0 FLOAT32, 1 FLOAT16, 2 INT8, 3 UINT8
layout(constant_id = 2) const uint LINEAR = 0;

layout(std430, binding = 0) restrict readonly buffer X { uint x[]; };
layout(std430, binding = 1) restrict readonly buffer Params { uint params[]; };
layout(std430, binding = 2) buffer Y { uint y[]; };

layout(push_constant) uniform Push {
    uint count;
    uint items;
    uint first;
} p;

#include "float16_bits.glsl"

const uint BYTES = TYPE == 0 ? 4 : (TYPE == 1 ? 2 : 1);
const uint EPW = 4 / BYTES;
const uint MASK = BYTES == 4 ? 0xFFFFFFFFu : (1u << (8 * BYTES)) - 1u;

uint bits_at(uint e) { return (x[e / EPW] >> (8 * BYTES * (e % EPW))) & MASK; }

float value_at(uint e) {
    uint b = bits_at(e);
    if (TYPE == 0) return uintBitsToFloat(b);
    if (TYPE == 1) return unpackHalf2x16(b).x;
    if (TYPE == 2) return float(bitfieldExtract(int(b), 0, 8));
    return float(b);
}

uint result_bits(float v) {
    if (TYPE == 0) return floatBitsToUint(v);
    if (TYPE == 1) return half_bits_toward_zero(v, false);
    float lo = TYPE == 2 ? -128.0 : 0.0, hi = TYPE == 2 ? 127.0 : 255.0;
    return uint(int(clamp(v, lo, hi))) & 0xFFu;        // truncated toward zero, as DirectML (measured)
}

void main() {
    uint item = p.first + (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x
              + gl_LocalInvocationID.x;
    if (item >= p.count) return;
    uint i = item, yi = 0;
    uint c[4];
    for (uint d = 4; d-- > 0;) {
        uint size = params[1 + d];
        c[d] = i % size;
        i /= size;
        yi += c[d] * params[5 + d];
    }
    uint r;
    if (LINEAR == 0) {
        uint xi = 0;
        for (uint d = 0; d < 4; ++d) xi += params[params[13 + d] + c[d]] * params[9 + d];
        r = bits_at(xi);
    } else {
        // corner k takes index (k >> d) & 1 of dimension d; pairs along the first dimension are
        // weighed first, then along the next, and so on
        float v[16];
        uint at[4];
        for (uint d = 0; d < 4; ++d) at[d] = params[13 + d] + 4 * c[d];
        for (uint k = 0; k < 16; ++k) {
            uint xi = 0;
            for (uint d = 0; d < 4; ++d) xi += params[at[d] + ((k >> d) & 1u)] * params[9 + d];
            v[k] = value_at(xi);
        }
        for (uint d = 0; d < 4; ++d) {
            uint half_count = 1u << (3 - d);
            float w = uintBitsToFloat(params[at[d] + 3]);
            bool one = params[17 + d] == 1u;          // a dimension of one element is not blended (DirectML)
            for (uint k = 0; k < half_count; ++k) {
                if (one) {
                    v[k] = v[2 * k];
                    continue;
                }
                precise float step = (v[2 * k + 1] - v[2 * k]) * w;
                precise float s = v[2 * k] + step;
                v[k] = s;
            }
        }
        r = result_bits(v[0]);
    }
    if (BYTES == 4) {
        y[yi] = r;
    } else {
        uint bit = 8 * BYTES * (yi % EPW);
        atomicAnd(y[yi / EPW], ~(MASK << bit));
        atomicOr(y[yi / EPW], r << bit);
    }
}
