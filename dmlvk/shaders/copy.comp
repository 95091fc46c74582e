#version 450
// The bandwidth yardstick of the benchmarks (dmlvk_lab/bench.py): copies `words` uvec4s, CHUNKS per invocation
// (strided by the workgroup size, the same launch shape as depth_space_rows.comp).

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint CHUNKS = 1;

layout(std430, binding = 0) restrict readonly buffer Src { uvec4 src[]; };
layout(std430, binding = 1) restrict writeonly buffer Dst { uvec4 dst[]; };

layout(push_constant) uniform Push {
    uint vectors;   // uvec4s to copy
    uint items;     // invocations in this dispatch
    uint first;     // index of this dispatch's first invocation
} p;

void main() {
    uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    uint base = (p.first + group * gl_WorkGroupSize.x) * CHUNKS + gl_LocalInvocationID.x;
    for (uint c = 0; c < CHUNKS; ++c) {
        uint i = base + c * gl_WorkGroupSize.x;
        if (i < p.vectors) dst[i] = src[i];
    }
}
