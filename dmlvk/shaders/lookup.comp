#version 450
// The ONNX runner's 8-bit lookups and moves (ops/lookup.py): Y[out] = T[t][X[in]] element by element,
// where T holds tables of 256 entries the host computed (8-bit, or 16-bit with OUT16: float16 outputs) (identity for a plain move; a requantization, a
// LeakyRelu or a per-channel PRelu between a DequantizeLinear and a QuantizeLinear, as onnxruntime
// computes them) and t is the element's coordinate on the table axis (0 without one). Up to 8
// dimensions; the input read through any strides (0: broadcast, as Tile and nearest Resize read
// theirs), the output written through its own strides from an offset (a Concat input's slice). One
// dispatch per part (a Concat's inputs); parts writing one output run one after the other.
//
// WORDS 1 (the part's output elements contiguous and in row-major order): one invocation owns one
//         output word; bytes of the word outside the part are kept.
// WORDS 0 (any non-overlapping layout): one invocation per element, atomicAnd/atomicOr into its word.
// OUT16 1: 16-bit table entries and output elements (2 a word; a table is 128 words), else 8-bit (4, 64).

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint WORDS = 1;
layout(constant_id = 2) const uint OUT16 = 0;
const uint PER_WORD = OUT16 != 0 ? 2u : 4u;           // output elements a word
const uint BITS = 32u / PER_WORD;                     // an output element's bits
const uint TABLE_WORDS = 256u / PER_WORD;

layout(std430, binding = 0) restrict readonly buffer X { uint x[]; };
// the tables (TABLE_WORDS each), then per part at word `geo`: the dimension count, the sizes [8], the
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
        if (d == axis) at.z += TABLE_WORDS * k;
    }
    return at;
}

uint looked_up(uvec3 at) {
    uint v = (x[at.x >> 2] >> (8 * (at.x & 3))) & 0xFFu;
    return bitfieldExtract(params[at.z + v / PER_WORD], int(BITS * (v % PER_WORD)), int(BITS));
}

void main() {
    uint item = p.first + (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x
              + gl_LocalInvocationID.x;
    if (WORDS != 0) {
        uint start = params[p.geo + 25];                 // the part's elements: [start, start + count)
        uint word = start / PER_WORD + item;
        if (word * PER_WORD >= start + p.count) return;
        uint lo = max(word * PER_WORD, start), hi = min(word * PER_WORD + PER_WORD, start + p.count);
        uint v = lo == word * PER_WORD && hi == word * PER_WORD + PER_WORD ? 0u : y[word];   // partial: keep the rest
        for (uint e = lo; e < hi; ++e)
            v = bitfieldInsert(v, looked_up(place(e - start)), int(BITS * (e % PER_WORD)), int(BITS));
        y[word] = v;
    } else {
        if (item >= p.count) return;
        uvec3 at = place(item);
        uint bit = BITS * (at.y % PER_WORD), mask = (1u << BITS) - 1u;
        atomicAnd(y[at.y / PER_WORD], ~(mask << bit));
        atomicOr(y[at.y / PER_WORD], looked_up(at) << bit);
    }
}
