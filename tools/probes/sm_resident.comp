#version 450
// tools/sm_probe.py: how many workgroups an SM holds at once for a given shared-memory size. Each
// invocation walks a dependent chain of STEPS shared-memory loads (latency-bound: workgroups that
// run at once take no longer than one), so the time against the workgroup count steps up where
// they stop fitting.
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint STEPS = 2048;
layout(constant_id = 2) const uint SH = 64;   // uvec4 of shared memory a workgroup
layout(std430, binding = 0) readonly buffer Operands { uvec4 operands[]; };   // 64 vectors
layout(std430, binding = 1) writeonly buffer Result { uint result[]; };
layout(push_constant) uniform Push { uint items; uint first; } p;
shared uvec4 chain[SH];

void main() {
    uint t = gl_LocalInvocationID.x;
    for (uint e = t; e < SH; e += gl_WorkGroupSize.x) chain[e] = uvec4(e * 2654435761u) ^ operands[e % 64];
    barrier();
    uint x = t;
    for (uint s = 0; s < STEPS; ++s) x = chain[x % SH].x + x * 3u + 1u;
    result[gl_WorkGroupID.x * gl_WorkGroupSize.x + t] = x;
}
