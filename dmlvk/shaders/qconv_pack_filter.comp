#version 450
// Repacks QUANTIZED_LINEAR_CONVOLUTION's filter as Wp (qconv_packed.glsl) for the
// cooperative-matrix shader, with each output channel's integer correction. One workgroup per
// padded output channel row.
//
// With xs = x - 128 for a uint8 input (x for int8) and ws likewise, cx = (128 or 0) - xZP and
// cw[m] = (128 or 0) - wZP[m], every tap (padding taps included: they hold xs = -cx) gives
//     (x - xZP)(w - wZP) = xs * ws + cw[m] * xs + cx * ws + cx * cw[m],
// so the int32 accumulator (wrapping, spec 4.3) before the bias is
//     sum xs * ws  +  cw[m] * sum xs  +  corr[m],   corr[m] = cx * sum ws + K * cx * cw[m]
// over the K = KH * KW * Cg taps. corr and cw are written to the header of Wp.

#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(local_size_x_id = 0) in;   // 256
#include "qconv_common.glsl"
#include "qconv_packed.glsl"

// One partial sum per subgroup: as many as invocations at most, whatever the subgroup size (a
// device with subgroups of 4 has 64 of them in a workgroup of 256).
shared int partial[gl_WorkGroupSize.x];

void main() {
    uint t = gl_LocalInvocationID.x;
    uint row = p.first / gl_WorkGroupSize.x + gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    uint mp = packed_mp(), kp = packed_kp(), cp = packed_cp();
    uint g = row / mp, ml = row % mp;
    if (g >= packed_groups()) return;                 // uniform across the workgroup
    bool real = ml < p.mg;
    uint m = g * p.mg + min(ml, p.mg - 1);
    uint flip = W_SIGNED != 0 ? 0u : 0x80u;
    uint out_base = packed_header_words() + row * (kp / 4);
    int sum = 0;
    for (uint wd = t; wd < kp / 4; wd += gl_WorkGroupSize.x) {
        uint word = 0;
        for (uint j = 0; j < 4; ++j) {
            uint k = wd * 4 + j;
            uint tap = k / cp, c = k % cp;
            if (real && c < p.cg && tap < KH * KW) {
                uint off = m * p.w_strides.x + c * p.w_strides.y + (tap / KW) * p.w_strides.z + (tap % KW) * p.w_strides.w;
                uint b = bitfieldExtract(w_words[off >> 2], int((off & 3u) * 8u), 8) ^ flip;
                sum += bitfieldExtract(int(b), 0, 8);     // ws as a signed byte
                word |= b << (j * 8);
            }
        }
        y_words[out_base + wd] = word;
    }
    sum = subgroupAdd(sum);
    if (gl_SubgroupInvocationID == 0) partial[gl_SubgroupID] = sum;
    barrier();
    if (t == 0 && real) {
        int total = 0;
        for (uint s = 0; s < gl_NumSubgroups; ++s) total += partial[s];
        uint M = p.out_sizes.y;
        int cx = (X_SIGNED != 0 ? 0 : 128) - int(params[0]);
        int cw = (W_SIGNED != 0 ? 0 : 128) - int(params[2 + M + m]);
        int K = int(KH * KW * p.cg);
        y_words[m] = uint(cx * total + K * cx * cw);
        y_words[M + m] = uint(cw);
    }
}
