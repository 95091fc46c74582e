#version 450
// ONNX DequantizeLinear of 8 bits to float32, as onnxruntime's CPU kernel computes it:
//     y = float32(x - zero_point) * scale
// (the difference is exact in float32; one correctly rounded multiply, never contracted). Per
// tensor or per axis. CLAMP: then a Clip, min(max(y, lo), hi), as onnxruntime's float Clip after it
// (the bounds' bits after the zero points). Each invocation reads one input word: 4 elements.

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint SIGNED = 0;      // int8 input, else uint8
layout(constant_id = 2) const uint PER_AXIS = 0;
layout(constant_id = 3) const uint CLAMP = 0;

layout(std430, binding = 0) restrict readonly buffer X { uint x[]; };
layout(std430, binding = 1) restrict readonly buffer Params { uint params[]; };   // scale bits [C], zero point [C], (lo, hi)
layout(std430, binding = 2) restrict writeonly buffer Y { float y[]; };

layout(push_constant) uniform Push {
    uint count;
    uint inner;
    uint channels;
    uint items;
    uint first;
} p;

void main() {
    uint word = p.first + (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x
              + gl_LocalInvocationID.x;
    if (word >= (p.count + 3) / 4) return;
    uint packed = x[word];
    for (uint e = 0; e < 4; ++e) {
        uint i = word * 4 + e;
        if (i >= p.count) break;
        uint ch = PER_AXIS != 0 ? (i / p.inner) % p.channels : 0;
        float scale = uintBitsToFloat(params[ch]);
        int zp = int(params[p.channels + ch]);
        int v = SIGNED != 0 ? bitfieldExtract(int(packed), int(8 * e), 8) : int(bitfieldExtract(packed, int(8 * e), 8));
        precise float r = float(v - zp) * scale;
        if (CLAMP != 0)
            r = min(max(r, uintBitsToFloat(params[2 * p.channels])), uintBitsToFloat(params[2 * p.channels + 1]));
        y[i] = r;
    }
}
