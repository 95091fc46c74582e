#version 450
// tools/sm_probe.py: conv.coopmat.halo's taps alone (qlinear_conv_coopmat.comp, a 3x3 layer of 64
// input channels, 32 output channels): per tap and 32-channel chunk, each of 8 subgroups loads two
// B fragments (16 positions of its window row) and two A fragments (16 filter rows) from shared memory,
// odd strides as the kernel's (MODE 0), or keeps A (MODE 1) or both (MODE 2) in registers, and
// multiplies them into four accumulators, STEPS times; then stores their sum.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x_id = 0) in;   // 256
layout(constant_id = 1) const uint STEPS = 64;
layout(constant_id = 2) const uint MODE = 0;
layout(std430, binding = 0) readonly buffer Operands { uvec4 operands[]; };   // 64 vectors
layout(std430, binding = 1) writeonly buffer Result { int result[]; };
layout(push_constant) uniform Push { uint items; uint first; } p;
#define MAT_A coopmat<int8_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA>
#define MAT_B coopmat<int8_t, gl_ScopeSubgroup, 32, 16, gl_MatrixUseB>
#define MAT_C coopmat<int32_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
const uint HH = 10, HWD = 34, CQ = 4, PS = CQ + 1, AQ = 9 * CQ + 1;   // the kernel's window and rows
shared uvec4 Xs[HH * HWD * PS];
shared uvec4 As[32 * AQ];

void main() {
    uint t = gl_LocalInvocationID.x, warp = t / 32;
    for (uint e = t; e < HH * HWD * PS; e += gl_WorkGroupSize.x) Xs[e] = operands[e % 64];
    for (uint e = t; e < 32 * AQ; e += gl_WorkGroupSize.x) As[e] = operands[(e + 7) % 64];
    barrier();
    MAT_C acc[2][2];
    [[unroll]] for (uint i = 0; i < 2; ++i) [[unroll]] for (uint j = 0; j < 2; ++j) acc[i][j] = MAT_C(0);
    MAT_A ar[2];
    MAT_B br[2];
    [[unroll]] for (uint i = 0; i < 2; ++i) coopMatLoad(ar[i], As, i * 16 * AQ, AQ, gl_CooperativeMatrixLayoutRowMajor);
    [[unroll]] for (uint j = 0; j < 2; ++j)
        coopMatLoad(br[j], Xs, (warp * HWD + j * 16) * PS, PS, gl_CooperativeMatrixLayoutColumnMajor);
    for (uint s = 0; s < STEPS; ++s) {
        [[unroll]] for (uint tap = 0; tap < 9; ++tap) {
            uint kh = tap / 3, kw = tap % 3;
            [[unroll]] for (uint c = 0; c < CQ; c += 2) {
                MAT_B b[2];
                [[unroll]] for (uint j = 0; j < 2; ++j) {
                    if (MODE == 2) b[j] = br[j];
                    else coopMatLoad(b[j], Xs, ((warp + kh) * HWD + j * 16 + kw) * PS + c, PS,
                                     gl_CooperativeMatrixLayoutColumnMajor);
                }
                [[unroll]] for (uint i = 0; i < 2; ++i) {
                    MAT_A a;
                    if (MODE >= 1) a = ar[i];
                    else coopMatLoad(a, As, i * 16 * AQ + tap * CQ + c, AQ, gl_CooperativeMatrixLayoutRowMajor);
                    [[unroll]] for (uint j = 0; j < 2; ++j) acc[i][j] = coopMatMulAdd(a, b[j], acc[i][j]);
                }
            }
        }
    }
    MAT_C total = acc[0][0] + acc[0][1] + acc[1][0] + acc[1][1];
    uint subgroup = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * (gl_WorkGroupSize.x / 32) + warp;
    coopMatStore(total, result, subgroup * 256, 16, gl_CooperativeMatrixLayoutRowMajor);
}
