#version 450
// ELEMENT_WISE_QUANTIZED_LINEAR_ADD (and the ONNX runner's QLinearAdd): Output = T[A][B], where T is
// the 256 x 256 table of every pair of 8-bit inputs' sum, requantized, which the host computes from
// the scales and zero points with the arithmetic the operator follows (DirectML's documented
// formula, or onnxruntime's; ops/quantized_add.py). The kernel only moves bytes: no rounding happens
// here, so every device gives the host's answer bit for bit. Up to 8 dimensions, any strides of A and
// B (0: broadcast), elements travel inside 32-bit words (no 8-bit storage needed).
//
// WORDS 1 (a packed output): one invocation owns one output word: its 4 elements (the last word's
//         bytes past the tensor's elements kept).
// WORDS 0 (any non-overlapping output layout): one invocation per element, written with
//         atomicAnd/atomicOr so neighbours in the same word are never clobbered.

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint WORDS = 1;

layout(std430, binding = 0) restrict readonly buffer A { uint a[]; };
layout(std430, binding = 1) restrict readonly buffer B { uint b[]; };
// the table (16384 words: entry 256 a + b in byte (b % 4) of word 64 a + b / 4), then the geometry
// at word 16384: the dimension count, the output's sizes [8], A's, B's and the output's element
// strides [8 each], dimensions from outermost to innermost
layout(std430, binding = 2) restrict readonly buffer Params { uint params[]; };
layout(std430, binding = 3) buffer Y { uint y[]; };

layout(push_constant) uniform Push {
    uint count;      // output elements
    uint items;      // invocations in this dispatch
    uint first;      // index of this dispatch's first invocation
} p;

const uint GEO = 16384;

uint byte_at_a(uint off) { return (a[off >> 2] >> (8 * (off & 3))) & 0xFFu; }
uint byte_at_b(uint off) { return (b[off >> 2] >> (8 * (off & 3))) & 0xFFu; }

// The element offsets in A, B and the output of the output's element i (row-major index).
uvec3 offsets(uint i) {
    uint dims = params[GEO];
    uvec3 off = uvec3(0);
    for (uint d = dims; d-- > 0;) {
        uint size = params[GEO + 1 + d];
        uint k = i % size;
        i /= size;
        off += k * uvec3(params[GEO + 9 + d], params[GEO + 17 + d], params[GEO + 25 + d]);
    }
    return off;
}

uint sum_of(uvec3 off) {
    uint x = byte_at_a(off.x), z = byte_at_b(off.y);
    return (params[x * 64 + z / 4] >> (8 * (z % 4))) & 0xFFu;
}

void main() {
    uint item = p.first + (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x
              + gl_LocalInvocationID.x;
    if (WORDS != 0) {
        if (item >= (p.count + 3) / 4) return;
        uint word = item * 4 + 4 <= p.count ? 0u : y[item];    // the last word: keep the bytes past the end
        for (uint e = 0; e < 4; ++e) {
            uint i = item * 4 + e;
            if (i >= p.count) break;
            word = bitfieldInsert(word, sum_of(offsets(i)), int(8 * e), 8);
        }
        y[item] = word;
    } else {
        if (item >= p.count) return;
        uvec3 off = offsets(item);
        uint bit = 8 * (off.z & 3);
        atomicAnd(y[off.z >> 2], ~(0xFFu << bit));
        atomicOr(y[off.z >> 2], sum_of(off) << bit);
    }
}
