#version 450
// DEPTH_TO_SPACE(1) / SPACE_TO_DEPTH(1) of 1- and 2-byte elements in channel-last tensors whose
// pixels and rows abut (see _lanes in dmlvk/ops/depth_space.py). Each invocation owns one
// depth-side pixel and its BLOCK x BLOCK space-side pixels:
// 1. it loads its source words itself, as 8-byte vectors: its depth-side pixel, or the BLOCK row
//    segments of its space-side pixels (BLOCK * CS elements each). Neighbouring invocations' loads
//    abut, so a subgroup's loads together cover whole lines;
// 2. it rearranges the elements in registers (every shift amount is known at compile time);
// 3. it writes its destination words to its subgroup's own slice of shared memory, and after a
//    subgroup barrier the subgroup stores the slice's row segments as consecutive 8-byte vectors.
//    (Each invocation storing its own words would leave every store instruction spread over
//    separate lines.) No workgroup barrier: a workgroup's subgroups do not wait for each other.
// A workgroup takes WG_SIZE depth-side pixels of one row, from x0; its subgroup s the
// gl_SubgroupSize of them from x0 + s * gl_SubgroupSize. In the slice, destination piece q (a
// space-side row segment, or the depth-side pixel) of invocation l of a subgroup of size g lies at
// 8-byte unit (q * g + l) * (piece units): a piece row of the subgroup is its row segment in memory.

#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint EB = 1;       // element bytes: 1 or 2
layout(constant_id = 2) const uint BLOCK = 2;
layout(constant_id = 3) const uint D2S = 1;      // 1: depth-to-space, 0: space-to-depth
layout(constant_id = 4) const uint ORDER = 0;    // 0: DEPTH_COLUMN_ROW (DCR), 1: COLUMN_ROW_DEPTH (CRD)
layout(constant_id = 5) const uint CS = 8;       // space-side channels; BLOCK * CS * EB is a multiple of 8
layout(constant_id = 6) const uint TILE_UNITS = 1;   // WG_SIZE * PIXEL_WORDS / 2

layout(std430, binding = 0) restrict readonly buffer Src2 { uvec2 src2[]; };
layout(std430, binding = 1) restrict writeonly buffer Dst2 { uvec2 dst2[]; };

layout(push_constant) uniform Push {
    uvec3 depth;           // N, H, W of the depth side
    uint segments;         // WG_SIZE-pixel segments of its rows
    uvec4 depth_strides;   // element strides N, H of the depth side (W: BLOCK * BLOCK * CS)
    uvec4 space_strides;   // element strides N, H of the space side (W: CS)
    uint items;
    uint first;
} p;

const uint ROW_WORDS = BLOCK * CS * EB / 4;           // a space-side row segment: BLOCK pixels
const uint PIXEL_WORDS = BLOCK * ROW_WORDS;           // a depth-side pixel
const uint SRC_PIECES = D2S != 0 ? 1 : BLOCK;
const uint DST_PIECES = D2S != 0 ? BLOCK : 1;
const uint SRC_UNITS = PIXEL_WORDS / SRC_PIECES / 2;  // 8-byte units of a source piece
const uint DST_UNITS = PIXEL_WORDS / DST_PIECES / 2;
const uint PER_WORD = 4 / EB;                         // elements a word
const uint ELEM_BITS = 8 * EB;

shared uvec2 tile[TILE_UNITS];

// The depth-side element index (within a pixel) of block row dy, block column dx, channel c.
uint depth_element(uint dy, uint dx, uint c) {
    return ORDER == 0 ? (dy * BLOCK + dx) * CS + c : (c * BLOCK + dy) * BLOCK + dx;
}

// The element of the invocation's source words (its space-side row segments one after another,
// BLOCK * CS elements each, or its depth-side pixel) that is element f of its destination words.
uint source_element(uint f) {
    if (D2S != 0) {                                    // destination: the row segments
        uint dy = f / (BLOCK * CS), e = f % (BLOCK * CS);
        return depth_element(dy, e / CS, e % CS);
    }
    uint c, dy, dx;                                    // destination: the depth-side pixel
    if (ORDER == 0) {
        c = f % CS; dx = (f / CS) % BLOCK; dy = f / (CS * BLOCK);
    } else {
        dx = f % BLOCK; dy = (f / BLOCK) % BLOCK; c = f / (BLOCK * BLOCK);
    }
    return dy * (BLOCK * CS) + dx * CS + c;
}

void main() {
    uint wg = p.first / gl_WorkGroupSize.x + gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (wg * gl_WorkGroupSize.x >= p.first + p.items) return;      // whole workgroups
    uint g = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
    uint segs = p.segments;
    uint row = wg / segs, x0 = (wg % segs) * gl_WorkGroupSize.x + gl_SubgroupID * g;
    uint y = row % p.depth.y, n = row / p.depth.y;
    if (n >= p.depth.x || x0 >= p.depth.z) return;                  // the whole subgroup
    uint pixels = min(g, p.depth.z - x0);                           // the subgroup's

    // 8-byte units: of the subgroup's first depth-side pixel and first space-side row segment
    // (the host checks that the strides are whole units; a pixel and a row segment are)
    uint dmem = ((n * p.depth_strides.x + y * p.depth_strides.y) * EB + x0 * PIXEL_WORDS * 4) / 8;
    uint smem = ((n * p.space_strides.x + y * BLOCK * p.space_strides.y) * EB + x0 * ROW_WORDS * 4) / 8;
    uint srow = p.space_strides.y * EB / 8;            // units from one space-side row to the next

    uint s[PIXEL_WORDS];
    [[unroll]] for (uint q = 0; q < SRC_PIECES; ++q)
        [[unroll]] for (uint u = 0; u < SRC_UNITS; ++u) {
            uvec2 v = uvec2(0u);
            if (lane < pixels) v = src2[(D2S != 0 ? dmem : smem + q * srow) + lane * SRC_UNITS + u];
            s[2 * (q * SRC_UNITS + u)] = v.x;
            s[2 * (q * SRC_UNITS + u) + 1] = v.y;
        }
    uint base = gl_SubgroupID * g * (PIXEL_WORDS / 2);
    [[unroll]] for (uint k = 0; k < PIXEL_WORDS; k += 2) {
        uvec2 v;
        [[unroll]] for (uint h = 0; h < 2; ++h) {
            uint word = 0u;
            [[unroll]] for (uint t = 0; t < PER_WORD; ++t) {
                uint e = source_element((k + h) * PER_WORD + t);
                word |= bitfieldExtract(s[e / PER_WORD], int((e % PER_WORD) * ELEM_BITS), int(ELEM_BITS))
                        << (t * ELEM_BITS);
            }
            v[h] = word;
        }
        uint q = k / (2 * DST_UNITS);
        tile[base + (q * g + lane) * DST_UNITS + (k / 2) % DST_UNITS] = v;
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    [[unroll]] for (uint q = 0; q < DST_PIECES; ++q) {
        uint mem = D2S != 0 ? smem + q * srow : dmem;
        for (uint v = lane; v < pixels * DST_UNITS; v += g)
            dst2[mem + v] = tile[base + q * g * DST_UNITS + v];
    }
}
