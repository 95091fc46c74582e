#version 450
// DEPTH_TO_SPACE(1) / SPACE_TO_DEPTH(1) for 1, 2, 4 and 8-byte elements, any DirectML strides.
// The operator only moves bits: elements travel inside 32-bit words (no 8/16-bit storage needed),
// except in the MODE 3 variant, compiled with SMALL_STORE_BITS = 8 or 16.
//
// MODE 0 (4/8-byte elements): one invocation copies one output element.
// MODE 1 (1/2-byte elements, nested output layout): one invocation owns one output word; it
//         fills every element whose bytes lie in that word and keeps the other bytes.
// MODE 2 (1/2-byte elements, any other non-overlapping layout): one invocation per element,
//         written with atomicAnd/atomicOr so neighbours in the same word are never clobbered.
// MODE 3 (the same, on devices with 8/16-bit storage): one invocation per element, written with
//         one 8/16-bit store (distinct elements are distinct memory locations: no atomics).
#if SMALL_STORE_BITS == 8
#extension GL_EXT_shader_8bit_storage : require
#elif SMALL_STORE_BITS == 16
#extension GL_EXT_shader_16bit_storage : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ELEM_BYTES = 4;
layout(constant_id = 2) const uint BLOCK = 2;
layout(constant_id = 3) const uint D2S = 1;      // 1: depth-to-space, 0: space-to-depth
layout(constant_id = 4) const uint ORDER = 0;    // 0: DEPTH_COLUMN_ROW (DCR), 1: COLUMN_ROW_DEPTH (CRD)
layout(constant_id = 5) const uint MODE = 0;

layout(std430, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, binding = 1) buffer Dst { uint dst[]; };
#if SMALL_STORE_BITS == 8
layout(std430, binding = 1) writeonly buffer DstSmall { uint8_t dst_small[]; };
#elif SMALL_STORE_BITS == 16
layout(std430, binding = 1) writeonly buffer DstSmall { uint16_t dst_small[]; };
#endif

layout(push_constant) uniform Push {
    uvec4 in_strides;    // input element strides, N C H W
    uvec4 out_sizes;     // output sizes, N C H W
    uvec4 out_strides;   // output element strides, N C H W
    uint out_dims;       // MODE 1: output dims from outermost to innermost in memory, 2 bits each
    uint space_c;        // channel count of the space-side tensor
    uint items;          // work items in this dispatch
    uint first;          // index of this dispatch's first work item
} p;

const uint EPW = ELEM_BYTES >= 4 ? 1 : 4 / ELEM_BYTES;       // elements per word (sub-word types)
const uint ELEM_MASK = ELEM_BYTES >= 4 ? 0xFFFFFFFFu : (1u << (8 * ELEM_BYTES)) - 1u;

// Element offset in the input of the value that lands at output coordinate o.
uint source_offset(uvec4 o) {
    uvec4 i;
    const uint BB = BLOCK * BLOCK;
    if (D2S == 1) {
        uint bh = o.z % BLOCK, bw = o.w % BLOCK;
        uint dc = ORDER == 0 ? (bh * BLOCK + bw) * p.space_c + o.y : o.y * BB + bh * BLOCK + bw;
        i = uvec4(o.x, dc, o.z / BLOCK, o.w / BLOCK);
    } else {
        uint blk = ORDER == 0 ? o.y / p.space_c : o.y % BB;
        uint c = ORDER == 0 ? o.y % p.space_c : o.y / BB;
        i = uvec4(o.x, c, o.z * BLOCK + blk / BLOCK, o.w * BLOCK + blk % BLOCK);
    }
    return i.x * p.in_strides.x + i.y * p.in_strides.y + i.z * p.in_strides.z + i.w * p.in_strides.w;
}

uvec4 logical_coord(uint idx) {
    uvec4 o;
    o.w = idx % p.out_sizes.w; idx /= p.out_sizes.w;
    o.z = idx % p.out_sizes.z; idx /= p.out_sizes.z;
    o.y = idx % p.out_sizes.y;
    o.x = idx / p.out_sizes.y;
    return o;
}

uint out_offset(uvec4 o) {
    return o.x * p.out_strides.x + o.y * p.out_strides.y + o.z * p.out_strides.z + o.w * p.out_strides.w;
}

uint read_small(uint e) {   // a 1 or 2-byte element, zero-extended
    uint bit = (e % EPW) * 8 * ELEM_BYTES;
    return bitfieldExtract(src[e / EPW], int(bit), int(8 * ELEM_BYTES));
}

void main() {
    uint local = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x
               + gl_LocalInvocationID.x;
    if (local >= p.items) return;
    uint item = p.first + local;

    if (MODE == 0) {
        uvec4 o = logical_coord(item);
        uint s = source_offset(o), d = out_offset(o);
        if (ELEM_BYTES == 8) {
            dst[2 * d] = src[2 * s];
            dst[2 * d + 1] = src[2 * s + 1];
        } else {
            dst[d] = src[s];
        }
#if SMALL_STORE_BITS == 8 || SMALL_STORE_BITS == 16
    } else if (MODE == 3) {
        uvec4 o = logical_coord(item);
#if SMALL_STORE_BITS == 8
        dst_small[out_offset(o)] = uint8_t(read_small(source_offset(o)));
#else
        dst_small[out_offset(o)] = uint16_t(read_small(source_offset(o)));
#endif
#endif
    } else if (MODE == 2) {
        uvec4 o = logical_coord(item);
        uint d = out_offset(o);
        uint bit = (d % EPW) * 8 * ELEM_BYTES;
        uint v = read_small(source_offset(o));
        atomicAnd(dst[d / EPW], ~(ELEM_MASK << bit));
        atomicOr(dst[d / EPW], v << bit);
    } else {
        uint word = dst[item];
        bool touched = false;
        for (uint k = 0; k < EPW; ++k) {
            uint m = item * EPW + k;              // element offset in the output's memory
            uvec4 o = uvec4(0);
            bool inside = true;
            for (uint j = 0; j < 4; ++j) {        // greedy decomposition, outermost dim first
                uint dim = (p.out_dims >> (2 * j)) & 3u;
                uint size = p.out_sizes[dim];
                if (size == 1) continue;
                uint q = m / p.out_strides[dim];
                if (q >= size) { inside = false; break; }
                o[dim] = q;
                m -= q * p.out_strides[dim];
            }
            if (!inside || m != 0) continue;      // a gap between elements: keep its bytes
            word = bitfieldInsert(word, read_small(source_offset(o)), int(k * 8 * ELEM_BYTES), int(8 * ELEM_BYTES));
            touched = true;
        }
        if (touched) dst[item] = word;
    }
}
