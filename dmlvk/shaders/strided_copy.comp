#version 450
// JOIN and TILE (ops/join_tile.py): elements of 1, 2, 4 or 8 bytes copied through DirectML strides,
// one dispatch per part (a JOIN input into its slice of the output; TILE's input over the whole
// output). Per part, from word `geo` of Params: the dimension count, the sizes walked [8], the input's
// element strides [8], the input's sizes where its coordinate wraps (TILE: c mod size; 0: none) [8],
// the output's element strides [8] and its first element. Elements travel inside 32-bit words: an
// element narrower than a word is written with atomicAnd/atomicOr (DirectML outputs never overlap, so
// only neighbours in one word meet), wider ones whole.

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ELEM_BYTES = 4;

layout(std430, binding = 0) restrict readonly buffer X { uint x[]; };
layout(std430, binding = 1) restrict readonly buffer Params { uint params[]; };
layout(std430, binding = 2) buffer Y { uint y[]; };

layout(push_constant) uniform Push {
    uint count;      // the part's elements
    uint geo;        // the word of the part's geometry in Params
    uint items;      // invocations in this dispatch
    uint first;      // index of this dispatch's first invocation
} p;

const uint EPW = ELEM_BYTES >= 4 ? 1 : 4 / ELEM_BYTES;        // elements per word (narrow types)
const uint MASK = ELEM_BYTES >= 4 ? 0xFFFFFFFFu : (1u << (8 * ELEM_BYTES)) - 1u;

void main() {
    uint item = p.first + (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x
              + gl_LocalInvocationID.x;
    if (item >= p.count) return;
    uint dims = params[p.geo], i = item, src = 0, dst = params[p.geo + 33];
    for (uint d = dims; d-- > 0;) {
        uint size = params[p.geo + 1 + d], wrap = params[p.geo + 17 + d];
        uint k = i % size;
        i /= size;
        src += (wrap != 0 ? k % wrap : k) * params[p.geo + 9 + d];
        dst += k * params[p.geo + 25 + d];
    }
    if (ELEM_BYTES == 8) {
        y[2 * dst] = x[2 * src];
        y[2 * dst + 1] = x[2 * src + 1];
    } else if (ELEM_BYTES == 4) {
        y[dst] = x[src];
    } else {
        uint v = (x[src / EPW] >> (8 * ELEM_BYTES * (src % EPW))) & MASK;
        uint bit = 8 * ELEM_BYTES * (dst % EPW);
        atomicAnd(y[dst / EPW], ~(MASK << bit));
        atomicOr(y[dst / EPW], v << bit);
    }
}
