#version 450
// Whether the device's 16 x 16 int32 accumulator matrices keep their elements where
// coopmat_lanes.glsl says (qlinear_conv_coopmat_halo.comp's LANES relies on it where its subgroups find
// it so): one subgroup loads the index matrix r * 16 + c (binding 0, row-major) as an accumulator and
// stores, for each lane, whether each element is where the table says, then the elements themselves.

#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require

layout(local_size_x_id = 0) in;   // 32: one subgroup
#include "coopmat_lanes.glsl"

layout(std430, binding = 0) readonly buffer Index { int index[]; };
// [lane]: 1 where its elements are the table's; [32 + lane * 8 + e]: its element e
layout(std430, binding = 1) writeonly buffer Found { int found[]; };

layout(push_constant) uniform Push { uint items; uint first; } p;

void main() {
    coopmat<int32_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> m;
    coopMatLoad(m, index, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
    uint lane = gl_LocalInvocationID.x;
    bool ok;
    LANES_HOLD(ok, m, lane);
    for (int e = 0; e < m.length() && e < 8; ++e) found[32 + lane * 8 + e] = m[e];
    found[lane] = ok ? 1 : 0;
}
