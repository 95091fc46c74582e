#version 450
// ONNX QuantizeLinear of float32 to 8 bits, as onnxruntime's CPU kernel computes it:
//     q = saturate(round_half_even(x / scale) + zero_point)
// with x / scale the correctly rounded float32 quotient, then clamped to the quantized range less
// the zero point before rounding. The quotient is taken in double and rounded to float32, which gives
// the correctly rounded one: a quotient of two float32 values is never a float32 midpoint and lies at
// least about 2^-49 of itself away from one, while double's error is far below that. Per tensor it is
// x times the scale's reciprocal in double (two roundings, each within 2^-53 of itself: still far
// below), which spares each element a division. NaN gives the type's lowest value, +-inf saturate.
// Per tensor or per axis (scale and zero point per channel of that axis). Each invocation writes one
// output word: 4 elements, their loads issued together (a rolled loop made each wait for the one
// before on NVIDIA's driver). Built only with FP64 (devices with shaderFloat64; dmlvk.onnx quantizes
// on the host elsewhere).

#extension GL_ARB_gpu_shader_fp64 : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint SIGNED = 0;      // int8 output, else uint8
layout(constant_id = 2) const uint PER_AXIS = 0;

layout(std430, binding = 0) restrict readonly buffer X { float x[]; };
layout(std430, binding = 1) restrict readonly buffer Params { uint params[]; };   // scale bits [C], zero point [C]
layout(std430, binding = 2) restrict writeonly buffer Y { uint y[]; };

layout(push_constant) uniform Push {
    uint count;      // elements
    uint inner;      // elements per channel step (the product of the sizes after the axis)
    uint channels;   // the axis' size (1 per tensor)
    uint items;      // invocations in this dispatch
    uint first;      // index of this dispatch's first invocation
} p;

void main() {
    uint word = p.first + (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x
              + gl_LocalInvocationID.x;
    if (word >= (p.count + 3) / 4) return;
    int lo = SIGNED != 0 ? -128 : 0, hi = SIGNED != 0 ? 127 : 255;
    uint out_word = 0;
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
            float quotient = PER_AXIS != 0 ? float(double(v) / double(scale)) : float(double(v) * rcp);
            quotient = clamp(quotient, float(lo - zp), float(hi - zp));
            q = int(roundEven(quotient)) + zp;
        }
        out_word |= (uint(q) & 0xFFu) << (8 * e);
    }
    y[word] = out_word;
}
