// depth_space_nhwc.comp's tiled kernels, move_staged and move_tiled: a workgroup stages a tile of
// whole source rows in shared memory (its TILE_WORDS, LOADS and UNIT_LOADS), then writes the other
// side's vectors from it. Included by depth_space_nhwc.comp after its direct kernels.
// move_staged's or move_tiled's tile, in words (1 for the other kernels).
layout(constant_id = 8) const uint TILE_WORDS = 1;
shared uint tile[TILE_WORDS];
// move_staged's and move_tiled's source vectors per invocation (at most), and move_staged's units
layout(constant_id = 10) const uint LOADS = 1;
layout(constant_id = 11) const uint UNIT_LOADS = 1;
layout(constant_id = 12) const uint DEPTH_TILE = 0;     // move_staged: 1, the depth side through the tile too

// Element e of a row of pixels, from the row's first element: `channels` elements a pixel, pixels
// `pixel_stride` apart (whole vectors never span pixels unless the pixels abut).
uint pixel_offset(uint e, uint pixel_stride, uint channels) {
    return pixel_stride == channels ? e : (e / channels) * pixel_stride + e % channels;
}

// The tile's vectors move to and from it as words, 4 to a bank where each invocation takes its
// vector's words in order. With ROTATE (16-byte vectors) each group of 8 neighbouring invocations
// starts at another word of its vector, so that the 32 invocations of a word access fall into 32
// banks, at the cost of selects and an address a word.
layout(constant_id = 13) const uint ROTATE = 0;
// move_tiled with one source row of pixels of 2^SWIZZLE words (SWIZZLE >= 5; 0: off): pixel p's
// 16-byte vectors trade places within their 128-byte blocks (an XOR with p % 8), so that gathers at
// the same place of 8 neighbouring pixels fall into different banks
layout(constant_id = 14) const uint SWIZZLE = 0;

uint swizzle(uint w) {
    return w ^ (((w >> SWIZZLE) & 7u) << 2);
}

uint bank_rotation() {
    return ROTATE != 0 && VEC_WORDS == 4 ? (gl_LocalInvocationID.x >> 3) & 3u : 0u;
}

// q with its words rotated: word w of the result is word (w + r) % 4 of q.
uvec4 rotate_words(uvec4 q, uint r) {
    return r == 0 ? q : r == 1 ? q.yzwx : r == 2 ? q.zwxy : q.wxyz;
}

// `rows` rows of pixels in memory (the first element of row r at first + r * row_stride), row_vecs
// whole vectors each, into the tile from word `at`, rows `pitch` words apart and without the gaps
// between pixels: neighbouring invocations on neighbouring vectors, every load of an invocation in
// flight before the first reaches the tile (at most LOADS an invocation).
void stage_rows(uint first, uint rows, uint row_stride, uint pixel_stride, uint channels, uint row_vecs,
                uint at, uint pitch, bool swizzled) {
    uint L = gl_WorkGroupSize.x, lid = gl_LocalInvocationID.x, rot = bank_rotation();
    uvec4 vecs[LOADS];
    [[unroll]] for (uint k = 0; k < LOADS; ++k) {
        uint i = lid + k * L;
        uint e = (i % row_vecs) * VEC_ELEMS;
        if (i < rows * row_vecs) vecs[k] = load_vec(first + (i / row_vecs) * row_stride + pixel_offset(e, pixel_stride, channels));
    }
    [[unroll]] for (uint k = 0; k < LOADS; ++k) {
        uint i = lid + k * L, w0 = at + (i / row_vecs) * pitch + (i % row_vecs) * VEC_WORDS;
        if (swizzled) w0 = swizzle(w0);
        if (i < rows * row_vecs) {
            uvec4 q = rotate_words(vecs[k], rot);
            [[unroll]] for (uint w = 0; w < VEC_WORDS; ++w) tile[w0 + ((w + rot) & 3u)] = q[w];
        }
    }
}

// stage_rows the other way round: the tile's rows to memory, whole vectors. With `all_at_once`
// (at most LOADS vectors an invocation) every tile read of an invocation comes before its first
// store: on an H200 faster for move_staged's depth-side tile (uint8 B = 3 space-to-depth 70 % of
// copy against 66 %), slower for its space-side rows (uint8 B = 2 depth-to-space 90 % against 97 %).
void unstage_rows(uint first, uint rows, uint row_stride, uint pixel_stride, uint channels, uint row_vecs,
                  uint at, uint pitch, bool all_at_once) {
    uint L = gl_WorkGroupSize.x, lid = gl_LocalInvocationID.x, rot = bank_rotation();
    if (all_at_once) {
        uvec4 vecs[LOADS];
        [[unroll]] for (uint k = 0; k < LOADS; ++k) {
            uint i = lid + k * L, f = at + (i / row_vecs) * pitch + (i % row_vecs) * VEC_WORDS;
            vecs[k] = uvec4(0);
            if (i < rows * row_vecs) {
                [[unroll]] for (uint w = 0; w < VEC_WORDS; ++w) vecs[k][w] = tile[f + ((w + rot) & 3u)];
            }
        }
        [[unroll]] for (uint k = 0; k < LOADS; ++k) {
            uint i = lid + k * L;
            uvec4 q = rotate_words(vecs[k], (4u - rot) & 3u);
            if (i < rows * row_vecs)
                store_vec(first + (i / row_vecs) * row_stride + pixel_offset((i % row_vecs) * VEC_ELEMS, pixel_stride, channels),
                          uint[4](q.x, q.y, q.z, q.w));
        }
        return;
    }
    for (uint i = lid; i < rows * row_vecs; i += L) {
        uint r = i / row_vecs, j = i % row_vecs, f = at + r * pitch + j * VEC_WORDS;
        uvec4 q = uvec4(0);
        [[unroll]] for (uint w = 0; w < VEC_WORDS; ++w) q[w] = tile[f + ((w + rot) & 3u)];
        q = rotate_words(q, (4u - rot) & 3u);
        store_vec(first + r * row_stride + pixel_offset(j * VEC_ELEMS, pixel_stride, channels),
                  uint[4](q.x, q.y, q.z, q.w));
    }
}

// A unit of move_staged: the EPW channels of one space-side word at every block position. In the
// depth side's order (channel-major, BB contiguous words) `a`, to the space side's (word t: the
// channels of block position t) `b`, or back: 4 x 4 byte blocks where they fill words, else
// element by element (shifts fixed at compile time).
void unit_to_space(uint a[BB], out uint b[BB]) {
    if (ELEM_BYTES == 1 && BB % 4 == 0) {
        [[unroll]] for (uint I = 0; I < BB / 4; ++I) {
            uvec4 t = transpose4x4(uvec4(a[I], a[BB / 4 + I], a[2 * BB / 4 + I], a[3 * BB / 4 + I]));
            [[unroll]] for (uint i = 0; i < 4; ++i) b[I * 4 + i] = t[i];
        }
        return;
    }
    [[unroll]] for (uint t = 0; t < BB; ++t) b[t] = 0;
    [[unroll]] for (uint j = 0; j < EPW * BB; ++j)        // element j of a: channel j / BB, position j % BB
        b[j % BB] |= move_element(a[j / EPW], j % EPW, j / BB);
}

void unit_to_depth(uint a[BB], out uint b[BB]) {
    if (ELEM_BYTES == 1 && BB % 4 == 0) {
        [[unroll]] for (uint I = 0; I < BB / 4; ++I) {
            uvec4 t = transpose4x4(uvec4(a[I * 4], a[I * 4 + 1], a[I * 4 + 2], a[I * 4 + 3]));
            [[unroll]] for (uint i = 0; i < 4; ++i) b[i * BB / 4 + I] = t[i];
        }
        return;
    }
    [[unroll]] for (uint t = 0; t < BB; ++t) b[t] = 0;
    [[unroll]] for (uint j = 0; j < EPW * BB; ++j)
        b[j / EPW] |= move_element(a[j % BB], j / BB, j % EPW);
}

// COLUMN_ROW_DEPTH of 1- or 2-byte elements, BLOCKS = 2, through shared memory: workgroup `wg`
// moves XT depth-side pixels (n, Y, X0..) of one row and the BLOCK space-side row segments of
// BLOCK*XT abutting pixels they correspond to, which live in the tile (rows PITCH words apart: an
// odd count, or whole vectors with ROTATE) and move to or from memory as whole vectors,
// neighbouring invocations on neighbouring vectors, every load of an invocation in flight at once.
// Between tile and depth side each invocation moves units (unit_to_space), whose BLOCK^2
// depth-side words are contiguous: straight to or from memory, or with DEPTH_TILE (odd BLOCK,
// whose units are not whole vectors) through a second part of the tile, the depth side's XT
// pixels, which moves as whole vectors too.
void move_staged(uint wg) {
    uint XT = p.tile_pixels, PITCH = p.tile_pitch;
    uvec4 dd = D2S != 0 ? p.in_dims : p.out_dims;                  // depth side N, H, W, C
    uvec3 ds = D2S != 0 ? p.in_strides.xyz : p.out_strides.xyz;
    uvec3 ss = D2S != 0 ? p.out_strides.xyz : p.in_strides.xyz;
    uint cs = dd.w / BB;                                           // space-side channels
    uint cw = cs / EPW;                                            // their words: units of a depth-side pixel
    uint tiles = (dd.z + XT - 1) / XT;
    uint X0 = (wg % tiles) * XT, Y = (wg / tiles) % dd.y, n = wg / (tiles * dd.y);
    uint xt = min(XT, dd.z - X0);
    uint row_vecs = xt * BLOCK * cw / VEC_WORDS;                   // of a space-side row segment
    uint L = gl_WorkGroupSize.x, lid = gl_LocalInvocationID.x;
    uint space0 = n * ss.x + Y * BLOCK * ss.y + X0 * BLOCK * cs;
    uint depth0 = n * ds.x + Y * ds.y + X0 * ds.z, cd = dd.w;
    uint DT0 = BLOCK * PITCH, dvecs = xt * cd / VEC_ELEMS;        // the depth side's part of the tile
    if (D2S != 0 && DEPTH_TILE != 0) {
        stage_rows(depth0, 1, 0, ds.z, cd, dvecs, DT0, 0, false);
        barrier();
    }
    if (D2S == 0) {
        stage_rows(space0, BLOCK, ss.y, cs, cs, row_vecs, 0, PITCH, false);
        barrier();
    }
    uint a[UNIT_LOADS][BB];
    if (D2S != 0) {
        [[unroll]] for (uint k = 0; k < UNIT_LOADS; ++k) {
            uint u = lid + k * L, depth = n * ds.x + Y * ds.y + (X0 + u / cw) * ds.z + (u % cw) * EPW * BB;
            if (u < xt * cw && DEPTH_TILE != 0) {
                [[unroll]] for (uint t = 0; t < BB; ++t) a[k][t] = tile[DT0 + u * BB + t];
            } else if (u < xt * cw) {
                [[unroll]] for (uint v = 0; v < BB / VEC_WORDS; ++v) {
                    uvec4 q = load_vec(depth + v * VEC_ELEMS);
                    [[unroll]] for (uint w = 0; w < VEC_WORDS; ++w) a[k][v * VEC_WORDS + w] = q[w];
                }
            }
        }
    }
    [[unroll]] for (uint k = 0; k < UNIT_LOADS; ++k) {
        uint u = lid + k * L;
        if (u >= xt * cw) break;
        uint xl = u / cw, g = u % cw;
        uint b[BB];
        if (D2S != 0) {
            unit_to_space(a[k], b);
            [[unroll]] for (uint t = 0; t < BB; ++t)
                tile[(t / BLOCK) * PITCH + (xl * BLOCK + t % BLOCK) * cw + g] = b[t];
        } else {
            [[unroll]] for (uint t = 0; t < BB; ++t)
                a[k][t] = tile[(t / BLOCK) * PITCH + (xl * BLOCK + t % BLOCK) * cw + g];
            unit_to_depth(a[k], b);
            uint depth = n * ds.x + Y * ds.y + (X0 + xl) * ds.z + g * EPW * BB;
            if (DEPTH_TILE != 0) {
                [[unroll]] for (uint t = 0; t < BB; ++t) tile[DT0 + u * BB + t] = b[t];
                continue;
            }
            [[unroll]] for (uint v = 0; v < BB / VEC_WORDS; ++v) {
                uint f = v * VEC_WORDS;
                store_vec(depth + v * VEC_ELEMS, uint[4](b[f], VEC_WORDS > 1 ? b[f + 1] : 0,
                          VEC_WORDS > 2 ? b[f + 2] : 0, VEC_WORDS > 3 ? b[f + 3] : 0));
            }
        }
    }
    if (D2S == 0 && DEPTH_TILE != 0) {
        barrier();
        unstage_rows(depth0, 1, 0, ds.z, cd, dvecs, DT0, 0, true);
    }
    if (D2S != 0) {
        barrier();
        unstage_rows(space0, BLOCK, ss.y, cs, cs, row_vecs, 0, PITCH, false);
    }
}

// move_tiled's runs that are contiguous on both sides, in bytes: one element in COLUMN_ROW_DEPTH
// order; in DEPTH_COLUMN_ROW a space-side pixel's channels, or the largest power of two dividing
// them, up to a vector.
layout(constant_id = 9) const uint UNIT_BYTES = 4;
const uint UNIT_ELEMS = UNIT_BYTES / ELEM_BYTES;
const uint UNITS = VEC_BYTES / UNIT_BYTES;              // runs per vector
const uint UNIT_BITS = UNIT_BYTES < 4 ? 8 * UNIT_BYTES : 32;

// Any element size, block size and order, BLOCKS = 3: workgroup `wg` moves XT depth-side pixels
// (n, Y, X0..) of one row and the BLOCK space-side row segments of BLOCK*XT pixels they
// correspond to. The source side comes into the tile as it lies in memory, whole vectors,
// neighbouring invocations on neighbouring vectors (rows of pixels' channels without the gaps
// between pixels, PITCH words apart); each destination vector is then gathered from the tile a
// contiguous run (UNIT_BYTES) at a time and stored whole, neighbouring invocations again on
// neighbouring vectors.
void move_tiled(uint wg) {
    uint XT = p.tile_pixels, PITCH = p.tile_pitch;
    uvec4 dd = D2S != 0 ? p.in_dims : p.out_dims;                  // depth side N, H, W, C
    uvec3 ds = D2S != 0 ? p.in_strides.xyz : p.out_strides.xyz;
    uvec3 ss = D2S != 0 ? p.out_strides.xyz : p.in_strides.xyz;
    uint cd = dd.w, cs = cd / BB;
    uint tiles = (dd.z + XT - 1) / XT;
    uint X0 = (wg % tiles) * XT, Y = (wg / tiles) % dd.y, n = wg / (tiles * dd.y);
    uint xt = min(XT, dd.z - X0);
    uint depth0 = n * ds.x + Y * ds.y + X0 * ds.z;
    uint space0 = n * ss.x + Y * BLOCK * ss.y + X0 * BLOCK * ss.z;
    // each side as rows of pixels: first element, row stride, pixel stride, channels, vectors a row
    uint s0 = D2S != 0 ? depth0 : space0, s_rs = D2S != 0 ? 0 : ss.y;
    uint s_ps = D2S != 0 ? ds.z : ss.z, s_c = D2S != 0 ? cd : cs;
    uint d0 = D2S != 0 ? space0 : depth0, d_rs = D2S != 0 ? ss.y : 0;
    uint d_ps = D2S != 0 ? ss.z : ds.z, d_c = D2S != 0 ? cs : cd;
    uint s_rows = D2S != 0 ? 1 : BLOCK, d_rows = BLOCK + 1 - s_rows;
    uint s_vecs = xt * cd / s_rows / VEC_ELEMS, d_vecs = xt * cd / d_rows / VEC_ELEMS;
    uint L = gl_WorkGroupSize.x, lid = gl_LocalInvocationID.x;

    stage_rows(s0, s_rows, s_rs, s_ps, s_c, s_vecs, 0, PITCH, SWIZZLE != 0);
    barrier();
    for (uint i = lid; i < d_rows * d_vecs; i += L) {
        uint r = i / d_vecs, e = (i % d_vecs) * VEC_ELEMS;
        uint q = e / d_c, ch = e % d_c;          // the destination pixel in the tile, its channel
        uint dst_at = d0 + r * d_rs + pixel_offset(e, d_ps, d_c);
        uint words[4] = uint[4](0, 0, 0, 0);
        [[unroll]] for (uint u = 0; u < UNITS; ++u) {
            uint sr, se;                         // the run's source: tile row, element in the row
            if (D2S != 0) {                      // r: block row, q: xl * BLOCK + block column
                uint xl = q / BLOCK, bx = q % BLOCK;
                sr = 0;
                se = xl * cd + (ORDER == 0 ? (r * BLOCK + bx) * cs + ch : ch * BB + r * BLOCK + bx);
            } else {                             // q: xl, ch: the depth-side channel
                uint pos = ORDER == 0 ? ch / cs : ch % BB, c = ORDER == 0 ? ch % cs : ch / BB;
                sr = pos / BLOCK;
                se = (q * BLOCK + pos % BLOCK) * cs + c;
            }
            uint byte = se * ELEM_BYTES, at = sr * PITCH + byte / 4;
            if (UNIT_BYTES >= 4) {
                [[unroll]] for (uint k = 0; k < UNIT_BYTES / 4; ++k)
                    words[u * UNIT_BYTES / 4 + k] = tile[SWIZZLE != 0 ? swizzle(at + k) : at + k];
            } else {
                uint bits = bitfieldExtract(tile[SWIZZLE != 0 ? swizzle(at) : at], int(8 * (byte % 4)), int(UNIT_BITS));
                uint w = u * UNIT_BYTES / 4;
                words[w] = bitfieldInsert(words[w], bits, int(8 * (u * UNIT_BYTES % 4)), int(UNIT_BITS));
            }
            ch += UNIT_ELEMS;
            if (ch == d_c) { ch = 0; ++q; }
        }
        store_vec(dst_at, words);
    }
}
