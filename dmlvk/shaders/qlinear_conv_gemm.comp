#version 450
// QUANTIZED_LINEAR_CONVOLUTION as an implicit GEMM per group: C[m, pixel] = sum_k A[m, k] * B[k, pixel]
// with A[m, k] = W[m, k] - wZP[m], B[k, pixel] = X[im2col(k, pixel)] - xZP (0 on padding taps),
// k = (c, kh, kw). A workgroup of 256 invocations computes a BM x BN tile, 4 x 4 outputs each,
// staging BK-deep slices of A and B in shared memory.
//
// Exact integer arithmetic on the float32 units: every product |(x - xZP)(w - wZP)| <= 255 * 255,
// so a float32 sum of at most 256 of them stays below 2^24 and is exact. Partial sums are moved to
// the int32 accumulator (which wraps, as spec 4.3 says) every 256 products. The result is bit for
// bit the int32 accumulation of the direct shader; float32 multiply-add runs at twice the int32
// multiply rate on common GPUs.

#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;   // 256
#include "qconv_common.glsl"

const uint BM = 64, BN = 64, BK = 16, TM = 4, TN = 4;
const uint FLUSH_STEPS = 256 / BK;   // K slices between moves to the int32 accumulator

shared vec4 As[BK][BM / 4];   // As[k][m / 4][m % 4]
shared vec4 Bs[BK][BN / 4];

void main() {
    uint t = gl_LocalInvocationID.x;
    uint oh_n = p.out_sizes.z, ow_n = p.out_sizes.w;
    uint P = p.out_sizes.x * oh_n * ow_n;
    uint K = p.cg * KH * KW;
    uint ptiles = (P + BN - 1) / BN, mtiles = (p.mg + BM - 1) / BM;
    uint wg = p.first / gl_WorkGroupSize.x + gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    uint pt = wg % ptiles; wg /= ptiles;
    uint mt = wg % mtiles;
    uint g = wg / mtiles;
    if (g >= p.out_sizes.y / p.mg) return;          // uniform across the workgroup

    // Loader roles: column lcol of the tile, rows lrow + 4 i of each K slice.
    uint lcol = t % 64, lrow = t / 64;
    uint pl = pt * BN + lcol;
    bool p_ok = pl < P;
    uint lw = pl % ow_n, lh = (pl / ow_n) % oh_n, ln = pl / (ow_n * oh_n);
    int ih0 = int(lh * p.conv_stride.x) - int(p.start_pad.x);
    int iw0 = int(lw * p.conv_stride.y) - int(p.start_pad.y);
    uint xbase = ln * p.in_strides.x + g * p.cg * p.in_strides.y;
    uint ml = mt * BM + lcol;
    bool m_ok = ml < p.mg;
    uint mabs = g * p.mg + min(ml, p.mg - 1);
    float wzp = float(int(params[2 + p.out_sizes.y + mabs]));
    float xzp = float(int(params[0]));
    uint wbase = mabs * p.w_strides.x;

    // Compute roles: outputs m = ty * 4 + i, pixel = tx * 4 + j of the tile.
    uint tx = t % 16, ty = t / 16;
    vec4 facc[TM];
    ivec4 iacc[TM];
    for (uint i = 0; i < TM; ++i) { facc[i] = vec4(0); iacc[i] = ivec4(0); }

    uint steps = (K + BK - 1) / BK;
    for (uint s = 0; s < steps; ++s) {
        float a_val[4], b_val[4];
        for (uint i = 0; i < 4; ++i) {
            uint k = s * BK + lrow + 4 * i;
            uint c = k / (KH * KW), r = k % (KH * KW);
            uint kh = r / KW, kw = r % KW;
            a_val[i] = (m_ok && k < K)
                ? float(load_w(wbase + c * p.w_strides.y + kh * p.w_strides.z + kw * p.w_strides.w)) - wzp : 0.0;
            uint ih, iw;
            bool inside = p_ok && k < K
                && input_tap(lh, kh, p.conv_stride.x, p.dilation.x, p.start_pad.x, p.in_sizes.z, ih0, ih)
                && input_tap(lw, kw, p.conv_stride.y, p.dilation.y, p.start_pad.y, p.in_sizes.w, iw0, iw);
            b_val[i] = inside
                ? float(load_x(xbase + c * p.in_strides.y + ih * p.in_strides.z + iw * p.in_strides.w)) - xzp
                : 0.0;
        }
        barrier();
        for (uint i = 0; i < 4; ++i) {
            As[lrow + 4 * i][lcol / 4][lcol % 4] = a_val[i];
            Bs[lrow + 4 * i][lcol / 4][lcol % 4] = b_val[i];
        }
        barrier();
        for (uint k = 0; k < BK; ++k) {
            vec4 a = As[k][ty], b = Bs[k][tx];
            for (uint i = 0; i < TM; ++i) facc[i] += a[i] * b;
        }
        if ((s + 1) % FLUSH_STEPS == 0) {
            for (uint i = 0; i < TM; ++i) { iacc[i] += ivec4(facc[i]); facc[i] = vec4(0); }
        }
    }
    for (uint i = 0; i < TM; ++i) iacc[i] += ivec4(facc[i]);

    for (uint i = 0; i < TM; ++i) {
        uint m = mt * BM + ty * TM + i;
        if (m >= p.mg) break;
        for (uint j = 0; j < TN; ++j) {
            uint px = pt * BN + tx * TN + j;
            if (px >= P) break;
            store_output(px / (ow_n * oh_n), g * p.mg + m, (px / ow_n) % oh_n, px % ow_n, iacc[i][j]);
        }
    }
}
