#version 450
// The ONNX runner's 8-bit lookups and moves (ops/lookup.py): Y[out] = T[t][X[in]] element by element,
// where T holds 256-byte tables the host computed (identity for a plain move; a requantization, a
// LeakyRelu or a per-channel PRelu between a DequantizeLinear and a QuantizeLinear, as onnxruntime
// computes them) and t is the element's coordinate on the table axis (0 without one). Up to 8
// dimensions; the input read through any strides (0: broadcast, as Tile and nearest Resize read
// theirs), the output written through its own strides from an offset (a Concat input's slice). One
// dispatch per part (a Concat's inputs); parts writing one output run one after the other.
//
// WORDS 1 (the part's output elements contiguous and in row-major order): one invocation owns one
//         output word; bytes of the word outside the part are kept.
// WORDS 0 (any non-overlapping layout): one invocation per element, atomicAnd/atomicOr into its word.

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint WORDS = 1;

layout(std430, binding = 0) restrict readonly buffer X { uint x[]; };
// the tables (64 words each), then per part at word `geo`: the dimension count, the sizes [8], the
// input's element strides [8], the output's [8], the output's first element, the table axis
// (0xFFFFFFFF: none) and the word of the part's first table
layout(std430, binding = 1) restrict readonly buffer Params { uint params[]; };
layout(std430, binding = 2) buffer Y { uint y[]; };

layout(push_constant) uniform Push {
    uint count;      // the part's elements
    uint geo;        // the word of the part's geometry in Params
    uint items;      // invocations in this dispatch
    uint first;      // index of this dispatch's first invocation
} p;

// (input element offset, output element offset, table word) of the part's element i (row-major)
uvec3 place(uint i) {
    uint dims = params[p.geo], axis = params[p.geo + 26];
    uvec3 at = uvec3(0, params[p.geo + 25], params[p.geo + 27]);
    for (uint d = dims; d-- > 0;) {
        uint size = params[p.geo + 1 + d];
        uint k = i % size;
        i /= size;
        at.xy += k * uvec2(params[p.geo + 9 + d], params[p.geo + 17 + d]);
        if (d == axis) at.z += 64 * k;
    }
    return at;
}

uint looked_up(uvec3 at) {
    uint v = (x[at.x >> 2] >> (8 * (at.x & 3))) & 0xFFu;
    return (params[at.z + v / 4] >> (8 * (v % 4))) & 0xFFu;
}

void main() {
    uint item = p.first + (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x
              + gl_LocalInvocationID.x;
    if (WORDS != 0) {
        uint start = params[p.geo + 25];                 // the part's elements: [start, start + count)
        uint word = start / 4 + item;
        if (word * 4 >= start + p.count) return;
        uint lo = max(word * 4, start), hi = min(word * 4 + 4, start + p.count);
        uint v = lo == word * 4 && hi == word * 4 + 4 ? 0u : y[word];    // a partial word: keep the rest
        for (uint e = lo; e < hi; ++e)
            v = bitfieldInsert(v, looked_up(place(e - start)), int(8 * (e & 3)), 8);
        y[word] = v;
    } else {
        if (item >= p.count) return;
        uvec3 at = place(item);
        uint bit = 8 * (at.y & 3);
        atomicAnd(y[at.y >> 2], ~(0xFFu << bit));
        atomicOr(y[at.y >> 2], looked_up(at) << bit);
    }
}
