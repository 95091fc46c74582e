// Where a subgroup's 16 x 16 int32 accumulator matrix keeps its elements on NVIDIA's GPUs (measured on
// the H200): element e of lane l is row c_row(l, e), column c_col(l, e), the layout of the mma.m16n8
// instructions' accumulators in two 16 x 8 halves. Lane l holds rows l / 4 and l / 4 + 8 (c_half:
// elements 0-3, 4-7), columns 2 (l % 4), 2 (l % 4) + 1 and those + 8 (its column slots 0-3, c_slot).
// The cooperative-matrix extension leaves this to the implementation: a kernel that relies on it
// (qlinear_conv_coopmat_halo.comp's LANES) checks it first with LANES_HOLD, as coopmat_lanes_probe.comp
// does for the model benchmark, and the emulation (coopmat_emulation.glsl) keeps its elements so.
#ifndef COOPMAT_LANES_GLSL
#define COOPMAT_LANES_GLSL
uint c_half(uint e) { return e >> 2; }
uint c_slot(uint e) { return e & 3u; }
uint c_row(uint lane, uint e) { return lane / 4u + 8u * c_half(e); }
uint c_col(uint lane, uint e) { return 2u * (lane % 4u) + (c_slot(e) & 1u) + 8u * (c_slot(e) >> 1); }
// ok: whether accumulator idx, loaded from a row-major 16 x 16 matrix of its elements' numbers
// (row * 16 + column), holds in this lane the 8 elements the functions above say (a real matrix)
#define LANES_HOLD(ok, idx, lane) {                                                              \
        ok = idx.length() == 8;                                                                  \
        for (int lanes_e = 0; lanes_e < idx.length() && lanes_e < 8; ++lanes_e)                  \
            ok = ok && uint(idx[lanes_e]) == c_row(lane, lanes_e) * 16u + c_col(lane, lanes_e);  \
    }
#endif
