#version 450
// The int8 peak of a device's cooperative matrices, for the benchmarks' floors
// (dmlvk_lab/bench_layers.py): each subgroup multiplies register-resident 16 x 32 and 32 x 16 int8
// fragments STEPS times into eight independent int32 accumulators (no memory traffic in the loop),
// then stores their sum so the work is kept. 2 * 16 * 16 * 32 * 8 operations a subgroup and step.

#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint STEPS = 256;

layout(std430, binding = 0) readonly buffer Operands { uvec4 operands[]; };   // 1 KiB: A then B
layout(std430, binding = 1) writeonly buffer Result { int result[]; };

layout(push_constant) uniform Push { uint items; uint first; } p;

#define MAT_A coopmat<int8_t, gl_ScopeSubgroup, 16, 32, gl_MatrixUseA>
#define MAT_B coopmat<int8_t, gl_ScopeSubgroup, 32, 16, gl_MatrixUseB>
#define MAT_C coopmat<int32_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>

void main() {
    MAT_A a[4];
    MAT_B b[2];
    for (uint i = 0; i < 4; ++i) coopMatLoad(a[i], operands, i * 8, 2, gl_CooperativeMatrixLayoutRowMajor);
    for (uint j = 0; j < 2; ++j) coopMatLoad(b[j], operands, 32 + j * 8, 2, gl_CooperativeMatrixLayoutColumnMajor);
    MAT_C acc[4][2];
    for (uint i = 0; i < 4; ++i)
        for (uint j = 0; j < 2; ++j) acc[i][j] = MAT_C(0);
    for (uint s = 0; s < STEPS; ++s)
        for (uint i = 0; i < 4; ++i)
            for (uint j = 0; j < 2; ++j) acc[i][j] = coopMatMulAdd(a[i], b[j], acc[i][j]);
    MAT_C total = MAT_C(0);
    for (uint i = 0; i < 4; ++i)
        for (uint j = 0; j < 2; ++j) total = total + acc[i][j];
    uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    uint subgroup = group * (gl_WorkGroupSize.x / 32) + gl_LocalInvocationID.x / 32;
    coopMatStore(total, result, subgroup * 256, 16, gl_CooperativeMatrixLayoutRowMajor);
}
