#version 450
// Finishes a split-K cooperative-matrix convolution (qlinear_conv_coopmat.comp with SPLIT > 1):
// one invocation adds up the K slices' int32 partials (wrapping, as the int32 accumulator does)
// for 4 neighbouring pixels of one output channel, applies the correction of
// qconv_pack_filter.comp, requantizes and stores (one word where PACKED_OUT).

#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
#include "qconv_common.glsl"
#include "qconv_packed.glsl"

void main() {
    uint local = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x
               + gl_LocalInvocationID.x;
    if (local >= p.items) return;
    uint item = p.first + local;
    uint ohw = p.out_sizes.z * p.out_sizes.w, P = p.out_sizes.x * ohw;
    uint quads = (P + 3) / 4;
    uint px0 = (item % quads) * 4; item /= quads;
    uint ml = item % p.mg, g = item / p.mg;
    uint M = p.out_sizes.y, m = g * p.mg + ml;
    int corr = int(w_words[m]), cw = int(w_words[M + m]);
    bool wsum = window_sums_needed() != 0;
    int v[4];
    for (uint e = 0; e < 4; ++e) {
        uint px = min(px0 + e, P - 1);
        int acc = 0, xsum = 0;
        for (uint s = 0; s < SPLIT; ++s) {
            acc += int(x_words[partial_index(s, g, ml, px)]);
            if (wsum) xsum += int(x_words[partial_sum_index(s, g, px)]);
        }
        v[e] = acc + corr + cw * xsum;
    }
    if (PACKED_OUT != 0) {
        uint word = 0;
        for (uint e = 0; e < 4; ++e) word |= requantize(m, v[e]) << (8 * e);
        y_words[output_offset(px0 / ohw, m, (px0 % ohw) / p.out_sizes.w, px0 % p.out_sizes.w) >> 2] = word;
    } else {
        for (uint e = 0; e < 4 && px0 + e < P; ++e) {
            uint px = px0 + e;
            store_output(px / ohw, m, (px % ohw) / p.out_sizes.w, px % p.out_sizes.w, v[e]);
        }
    }
}
