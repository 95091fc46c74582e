#version 450
// DEPTH_TO_SPACE(1) / SPACE_TO_DEPTH(1), bandwidth path: both tensors have unit W stride and
// rows aligned to whole pieces (see dmlvk/ops/depth_space.py, _rows_kernel).
//
// A "chunk" is CB = K*BLOCK*ELEM_BYTES contiguous bytes of one row of the space-side tensor: 16
// or 32, or, for block sizes that cannot make those (3, 5, 6, 7), CW < 8 words moved as 8- or
// 4-byte vectors. Its elements come from BLOCK "pieces" of K contiguous elements (4 or 8 bytes
// each), one per column offset bw, in BLOCK rows of the depth-side tensor. Each invocation moves
// CHUNKS chunks (32-byte chunks: halves of chunks, or with PAIRED whole ones; STAGED: see
// store_staged): whole vectors on the space side, whole 4/8-byte words on the depth side, so
// every memory access is a full, aligned vector and no byte is shared between invocations.

#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#ifdef PAIRED
// 32-byte chunks, one per invocation (see move_chunk): needs the subgroup shuffle operations and
// workgroups of whole subgroups of at least 2 invocations.
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ELEM_BYTES = 4;
layout(constant_id = 2) const uint BLOCK = 2;
layout(constant_id = 3) const uint D2S = 1;      // 1: depth-to-space, 0: space-to-depth
layout(constant_id = 4) const uint ORDER = 0;    // 0: DEPTH_COLUMN_ROW (DCR), 1: COLUMN_ROW_DEPTH (CRD)
layout(constant_id = 5) const uint K = 2;        // elements per piece
layout(constant_id = 6) const uint CHUNKS = 1;   // chunks per invocation
layout(constant_id = 7) const uint STAGED = 0;   // 1: the chunks go through shared memory (see store_staged)
layout(constant_id = 8) const uint SUBGROUP_STAGED = 0;   // 1: each subgroup its own chunks (subgroup barrier)
layout(constant_id = 9) const uint FLAT = 0;     // STAGED: 1 where consecutive chunks abut (see store_staged)
// 1: a space-side channel's rows in the order of their block row (every BLOCK-th row from 0, then
// from 1, ...), so that the depth-side rows in flight at once lie in BLOCK planes, not BLOCK^2.
// Not with STAGED (FLAT takes consecutive chunks to abut across rows).
layout(constant_id = 10) const uint BLOCK_ROW_MAJOR = 0;

// Binding 0 is the input, binding 1 the output; each is declared at the vector widths it is used at.
layout(std430, binding = 0) restrict readonly buffer Src1 { uint src1[]; };
layout(std430, binding = 0) restrict readonly buffer Src2 { uvec2 src2[]; };
layout(std430, binding = 0) restrict readonly buffer Src4 { uvec4 src4[]; };
layout(std430, binding = 1) restrict writeonly buffer Dst1 { uint dst1[]; };
layout(std430, binding = 1) restrict writeonly buffer Dst2 { uvec2 dst2[]; };
layout(std430, binding = 1) restrict writeonly buffer Dst4 { uvec4 dst4[]; };

layout(push_constant) uniform Push {
    uvec4 space_strides;   // element strides N, C, H of the space-side tensor (W stride is 1)
    uvec4 depth_strides;   // element strides N, C, H of the depth-side tensor (W stride is 1)
    uint chunks_per_row;   // chunks of a space-side row
    uint space_height;
    uint space_channels;
    uint total_chunks;
    uint items;            // invocations in this dispatch
    uint first;            // index of this dispatch's first invocation
} p;

const uint PB = K * ELEM_BYTES;           // piece bytes: 4 or 8
const uint PW = PB / 4;                   // piece words
const uint CW = PW * BLOCK;               // chunk words: 4 or 8; 1-7 for other block sizes
const uint CV = CW % 4 == 0 ? 4 : (CW % 2 == 0 ? 2 : 1);   // words per chunk vector
const uint EPW = ELEM_BYTES >= 4 ? 1 : 4 / ELEM_BYTES;
const uint EW = ELEM_BYTES >= 4 ? ELEM_BYTES / 4 : 1;   // words per element
const uint EBITS = 8 * ELEM_BYTES;

uint word_of(uint elem) { return ELEM_BYTES >= 4 ? elem * EW : elem / EPW; }

// Element i of a word array: for sub-word types the zero-extended bits, else word w of it.
uint get_elem(uint w0, uint w1, uint i, uint w) {   // w0/w1: the piece's two words
    if (ELEM_BYTES >= 4) { uint idx = i * EW + w; return idx == 0 ? w0 : w1; }
    uint word = (i / EPW) == 0 ? w0 : w1;
    return bitfieldExtract(word, int((i % EPW) * EBITS), int(EBITS));
}

// Chunk coordinates: the chunk's first word on the space side, and the depth-side element where
// the chunk's piece bw starts.
void locate(uint chunk, out uint cword, out uint depth_elem[BLOCK]) {
    uint cpr = p.chunks_per_row, hs_size = p.space_height, cs_size = p.space_channels;
    uint row = chunk / cpr, j = chunk - row * cpr;
    uint hs = row % hs_size; row /= hs_size;
    if (BLOCK_ROW_MAJOR != 0) {
        uint hd = hs_size / BLOCK;
        hs = (hs % hd) * BLOCK + hs / hd;
    }
    uint cs = row % cs_size;
    uint n = row / cs_size;
    uint bh = hs % BLOCK, h = hs / BLOCK;
    cword = word_of(n * p.space_strides.x + cs * p.space_strides.y + hs * p.space_strides.z + j * K * BLOCK);
    uint depth_base = n * p.depth_strides.x + h * p.depth_strides.z + j * K;
    for (uint bw = 0; bw < BLOCK; ++bw) {
        uint c = ORDER == 0 ? (bh * BLOCK + bw) * cs_size + cs : (cs * BLOCK + bh) * BLOCK + bw;
        depth_elem[bw] = depth_base + c * p.depth_strides.y;
    }
}

// STAGED (chunks that are not whole 16-byte vectors): in depth-to-space each invocation builds its
// chunk in shared memory; then the workgroup stores the chunks' vectors with neighbouring
// invocations on neighbouring vectors (a 24-byte chunk per invocation would leave each store
// instruction a third of every 24 bytes). Space-to-depth (FLAT) loads the chunks into shared
// memory the same way, then each invocation takes its own.
// With SUBGROUP_STAGED each subgroup stages and moves its own invocations' chunks, after a
// subgroup barrier, so that a workgroup's subgroups do not wait for each other.
shared uint staged[STAGED == 1 ? gl_WorkGroupSize.x * CW : 1];
shared uint staged_cword[STAGED == 1 ? gl_WorkGroupSize.x : 1];
uint slot;                 // STAGED: the invocation's chunk's place in staged and staged_cword
#ifdef PAIRED
bool live;                 // whether the invocation's chunk exists (every invocation shuffles)
#endif

// The barrier between staging and moving the chunks: a subgroup's (SUBGROUP_STAGED) or the
// workgroup's.
void staging_barrier() {
    if (SUBGROUP_STAGED != 0) {
        subgroupMemoryBarrierShared();
        subgroupBarrier();
    } else {
        barrier();
    }
}

// Stores the `count` staged chunks from first_chunk (at slots from first_slot), invocation `me`
// of the `count` that store them.
void store_staged(uint first_chunk, uint first_slot, uint count, uint me) {
    const uint VPC = CW / CV;                          // vectors per chunk
    if (first_chunk >= p.total_chunks) return;
    uint c0 = staged_cword[first_slot];
    if (FLAT != 0 && c0 % 4 == 0) {
        // the chunks are one run of words from c0: 16-byte vectors, then the last words
        uint words = min(count, p.total_chunks - first_chunk) * CW, from = first_slot * CW;
        for (uint v = me; v < words / 4; v += count)
            dst4[c0 / 4 + v] = uvec4(staged[from + 4 * v], staged[from + 4 * v + 1],
                                     staged[from + 4 * v + 2], staged[from + 4 * v + 3]);
        for (uint w = words / 4 * 4 + me; w < words; w += count) dst1[c0 + w] = staged[from + w];
        return;
    }
    for (uint q = me; q < count * VPC; q += count) {
        uint ch = q / VPC, part = q - ch * VPC;
        if (first_chunk + ch >= p.total_chunks) break;
        uint from = (first_slot + ch) * CW + part * CV, at = staged_cword[first_slot + ch] + part * CV;
        if (CV == 2) dst2[at / 2] = uvec2(staged[from], staged[from + 1]);
        else dst1[at] = staged[from];
    }
}

// Space-to-depth (FLAT only: its input is packed): the mirror of store_staged, every load issued
// before any is written.
void load_staged(uint first_chunk, uint first_slot, uint count, uint me) {
    if (first_chunk >= p.total_chunks) return;
    uint c0 = staged_cword[first_slot];
    uint words = min(count, p.total_chunks - first_chunk) * CW, from = first_slot * CW;
    uint vecs = c0 % 4 == 0 ? words / 4 : 0;           // 16-byte vectors, then the last words
    const uint NV = (CW + 3) / 4;                      // vectors an invocation, at most
    uvec4 v[NV];
    [[unroll]] for (uint j = 0; j < NV; ++j) {
        uint i = me + j * count;
        v[j] = i < vecs ? src4[c0 / 4 + i] : uvec4(0);
    }
    [[unroll]] for (uint j = 0; j < NV; ++j) {
        uint i = me + j * count;
        if (i < vecs) {
            staged[from + 4 * i] = v[j].x; staged[from + 4 * i + 1] = v[j].y;
            staged[from + 4 * i + 2] = v[j].z; staged[from + 4 * i + 3] = v[j].w;
        }
    }
    for (uint w = vecs * 4 + me; w < words; w += count) staged[from + w] = src1[c0 + w];
}

void move_chunk(uint chunk) {
    uint cword, depth_elem[BLOCK], piece_word[BLOCK];
    locate(chunk, cword, depth_elem);
    for (uint bw = 0; bw < BLOCK; ++bw) piece_word[bw] = word_of(depth_elem[bw]);

    uint pw[BLOCK][2];   // pieces
    uint cw[8];          // chunk
#ifdef PAIRED
    // Invocations t and t ^ h (h: half the subgroup) form a pair; the low one moves the first
    // 16-byte halves of both chunks, the high one the second halves (see below).
    uint h = gl_SubgroupSize / 2;
    bool low = gl_SubgroupInvocationID < h;
    uint half_index = low ? 0 : 1;
    uint other = subgroupShuffleXor(cword, h);
    bool other_live = subgroupShuffleXor(live, h);
#endif
    if (D2S == 1) {
        for (uint bw = 0; bw < BLOCK; ++bw) {
#ifdef PAIRED
            if (!live) { pw[bw][0] = 0; pw[bw][1] = 0; continue; }
#endif
            if (PW == 1) { pw[bw][0] = src1[piece_word[bw]]; pw[bw][1] = 0; }
            else { uvec2 v = src2[piece_word[bw] / 2]; pw[bw][0] = v.x; pw[bw][1] = v.y; }
        }
        // chunk element i comes from piece i % BLOCK, element i / BLOCK
        if (ELEM_BYTES >= 4) {
            for (uint i = 0; i < K * BLOCK; ++i)
                for (uint w = 0; w < EW; ++w)
                    cw[i * EW + w] = get_elem(pw[i % BLOCK][0], pw[i % BLOCK][1], i / BLOCK, w);
        } else {
            [[unroll]] for (uint m = 0; m < CW; ++m) {
                uint word = 0;
                [[unroll]] for (uint e = 0; e < EPW; ++e) {
                    uint i = m * EPW + e, j = i / BLOCK;    // element j of piece i % BLOCK
                    uint src = pw[i % BLOCK][j / EPW], from = (j % EPW) * EBITS, to = e * EBITS;
                    // the element's bits moved in place with one shift and a mask
                    uint moved = from >= to ? src >> (from - to) : src << (to - from);
                    word |= moved & (((1u << EBITS) - 1u) << to);
                }
                cw[m] = word;
            }
        }
        if (STAGED == 1) {
            for (uint m = 0; m < CW; ++m) staged[slot * CW + m] = cw[m];
            staged_cword[slot] = cword;
            return;
        }
#ifdef PAIRED
        // The low invocation stores the first halves of its own chunk and of its partner's, the
        // high one the second halves of its partner's and of its own, so that each store
        // instruction of the subgroup covers the abutting halves of h chunks.
        uvec4 h0 = uvec4(cw[0], cw[1], cw[2], cw[3]), h1 = uvec4(cw[4], cw[5], cw[6], cw[7]);
        uvec4 x = subgroupShuffleXor(low ? h1 : h0, h);
        if (low ? live : other_live) dst4[(low ? cword : other) / 4 + half_index] = low ? h0 : x;
        if (low ? other_live : live) dst4[(low ? other : cword) / 4 + half_index] = low ? x : h1;
        return;
#endif
        for (uint v = 0; v < CW / CV; ++v) {
            if (CV == 4) dst4[cword / 4 + v] = uvec4(cw[4 * v], cw[4 * v + 1], cw[4 * v + 2], cw[4 * v + 3]);
            else if (CV == 2) dst2[cword / 2 + v] = uvec2(cw[2 * v], cw[2 * v + 1]);
            else dst1[cword + v] = cw[v];
        }
    } else {
#ifdef PAIRED
        // the mirror of the stores above: the pair loads those halves, then swaps the two that
        // belong to the other's chunk
        uvec4 a = (low ? live : other_live) ? src4[(low ? cword : other) / 4 + half_index] : uvec4(0);
        uvec4 b = (low ? other_live : live) ? src4[(low ? other : cword) / 4 + half_index] : uvec4(0);
        uvec4 x = subgroupShuffleXor(low ? b : a, h);
        uvec4 h0 = low ? a : x, h1 = low ? x : b;
        cw = uint[8](h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w);
        if (!live) return;
#else
        for (uint v = 0; v < CW / CV; ++v) {
            if (STAGED == 1) {
                for (uint w = 0; w < CV; ++w) cw[CV * v + w] = staged[slot * CW + CV * v + w];
            } else if (CV == 4) {
                uvec4 x = src4[cword / 4 + v];
                cw[4 * v] = x.x; cw[4 * v + 1] = x.y; cw[4 * v + 2] = x.z; cw[4 * v + 3] = x.w;
            } else if (CV == 2) {
                uvec2 x = src2[cword / 2 + v];
                cw[2 * v] = x.x; cw[2 * v + 1] = x.y;
            } else {
                cw[v] = src1[cword + v];
            }
        }
#endif
        // piece bw element k is chunk element k * BLOCK + bw
        for (uint bw = 0; bw < BLOCK; ++bw) {
            uint out_w[2] = uint[2](0, 0);
            if (ELEM_BYTES >= 4) {
                for (uint k = 0; k < K; ++k)
                    for (uint w = 0; w < EW; ++w)
                        out_w[k * EW + w] = cw[(k * BLOCK + bw) * EW + w];
            } else {
                for (uint k = 0; k < K; ++k) {
                    uint i = k * BLOCK + bw;
                    uint v = bitfieldExtract(cw[i / EPW], int((i % EPW) * EBITS), int(EBITS));
                    out_w[k / EPW] = bitfieldInsert(out_w[k / EPW], v, int((k % EPW) * EBITS), int(EBITS));
                }
            }
            if (PW == 1) dst1[piece_word[bw]] = out_w[0];
            else dst2[piece_word[bw] / 2] = uvec2(out_w[0], out_w[1]);
        }
    }
}

// 32-byte chunks (8-byte elements with BLOCK 4, 4-byte elements with BLOCK 8: whole elements, one
// per piece): each invocation moves one 16-byte half of a chunk, so that neighbouring invocations
// touch neighbouring 16-byte vectors of the space-side rows.
void move_half_chunk(uint item) {
    uint chunk = item / 2, half_index = item % 2;
    uint cword, depth_elem[BLOCK];
    locate(chunk, cword, depth_elem);
    const uint HALF = 16 / ELEM_BYTES;       // elements in half a chunk
    uint vec = cword / 4 + half_index;
    uvec4 data = D2S == 1 ? uvec4(0) : src4[vec];
    uint words[4] = uint[4](data.x, data.y, data.z, data.w);
    for (uint e = 0; e < HALF; ++e) {
        uint i = half_index * HALF + e;      // chunk element: piece i % BLOCK, element i / BLOCK
        uint at = (depth_elem[i % BLOCK] + i / BLOCK) * EW;
        if (EW == 2) {                       // 8-byte elements move whole
            if (D2S == 1) {
                uvec2 v = src2[at / 2];
                words[2 * e] = v.x; words[2 * e + 1] = v.y;
            } else {
                dst2[at / 2] = uvec2(words[2 * e], words[2 * e + 1]);
            }
            continue;
        }
        for (uint w = 0; w < EW; ++w) {
            if (D2S == 1) words[e * EW + w] = src1[at + w];
            else dst1[at + w] = words[e * EW + w];
        }
    }
    if (D2S == 1) dst4[vec] = uvec4(words[0], words[1], words[2], words[3]);
}

void main() {
    uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    uint base = (p.first + group * gl_WorkGroupSize.x) * CHUNKS + gl_LocalInvocationID.x;
#ifdef PAIRED
    // one chunk per invocation, a subgroup's chunks consecutive; CHUNKS is 1
    uint item = p.first + group * gl_WorkGroupSize.x + gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
    live = item < p.total_chunks;
    move_chunk(item);
    return;
#endif
    for (uint c = 0; c < CHUNKS; ++c) {
        uint item = base + c * gl_WorkGroupSize.x;
        if (STAGED == 1) {                      // CHUNKS is 1: one chunk per invocation
            bool sub = SUBGROUP_STAGED != 0;
            uint me = sub ? gl_SubgroupInvocationID : gl_LocalInvocationID.x;
            uint first_slot = sub ? gl_SubgroupID * gl_SubgroupSize : 0u;
            slot = first_slot + me;
            item = p.first + group * gl_WorkGroupSize.x + slot;
            if (D2S == 0) {
                if (item < p.total_chunks) {
                    uint cword, depth_elem[BLOCK];
                    locate(item, cword, depth_elem);
                    staged_cword[slot] = cword;
                }
                staging_barrier();
                load_staged(item - me, first_slot, sub ? gl_SubgroupSize : gl_WorkGroupSize.x, me);
                staging_barrier();
                if (item < p.total_chunks) move_chunk(item);
                continue;
            }
            if (item < p.total_chunks) move_chunk(item);
            staging_barrier();
            store_staged(item - me, first_slot, sub ? gl_SubgroupSize : gl_WorkGroupSize.x, me);
        } else if (CW == 8) {
            if (item < 2 * p.total_chunks) move_half_chunk(item);
        } else if (item < p.total_chunks) {
            move_chunk(item);
        }
    }
}
