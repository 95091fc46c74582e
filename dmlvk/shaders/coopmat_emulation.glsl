// Cooperative matrices emulated with shared memory and plain arithmetic, for devices without
// VK_KHR_cooperative_matrix (lavapipe in CI), so that the cooperative-matrix kernels' own tiling,
// packing, split-K and requantization run and are tested there. Included by their qconv_coopmat_head.glsl (with
// COOPMAT_EMULATED) after its shared arrays; only what it uses is emulated:
// - subgroup-scope int8 A (16 x 32, row-major) times int8 B (32 x 16, column-major) plus int32 C
//   (16 x 16), wrapping like the hardware's int32 accumulation;
// - A and B loaded from the shared uvec4 arrays COOPMAT_EMU_A and COOPMAT_EMU_B (offset and stride
//   in uvec4, as coopMatLoad counts them; a B from COOPMAT_EMU_A with coopMatLoadBFromA), or all ones
//   (MAT_A_ONES, MAT_B_ONES), C stored row-major
//   to any int array, or row- or column-major to a uvec4 array (coopMatStoreWords,
//   coopMatStoreWordsColumns);
// - "subgroups" of 32 consecutive invocations whatever the device's subgroup size, whose barriers
//   are workgroup barriers (the kernel reaches them in uniform control flow).
// Loads are lazy: an A or B matrix records where it was loaded from, and the multiply-add reads
// the shared array then (the kernel does not write it between the two). An invocation holds 8
// elements of each C matrix where NVIDIA's hold them (coopmat_lanes.glsl), so that a kernel's
// requantization in the accumulators' own lanes (LANES) runs here as it does there. The multiply-add's
// loops are unrolled (Mesa 22.3's lavapipe ends an invocation's loops after 65,535 iterations in
// all, Capabilities.loop_iteration_limit, which a loop per product reached from 2,048 taps on), or
// with COOPMAT_EMU_ROLLED, for devices without that limit, kept as loops (SwiftShader compiled the
// unrolled kernel in about 20 s, the rolled one in 1-2 s).
#ifdef COOPMAT_EMU_ROLLED
#define EMU_UNROLL [[dont_unroll]]
#else
#define EMU_UNROLL [[unroll]]
#endif

#include "coopmat_lanes.glsl"

struct EmuAB { uint off; uint stride; int fill; bool filled; bool from_a; };
struct EmuC { int v[8]; };

#define MAT_A EmuAB
#define MAT_B EmuAB
#define MAT_C EmuC
#define MAT_C_ZERO EmuC(int[8](0, 0, 0, 0, 0, 0, 0, 0))
#define MAT_A_ONES EmuAB(0u, 0u, 1, true, false)
#define MAT_B_ONES EmuAB(0u, 0u, 1, true, false)
#define SUBGROUP_ID (gl_LocalInvocationID.x / 32u)
#define SUBGROUP_LANE (gl_LocalInvocationID.x % 32u)
#define SUBGROUP_BARRIER() barrier()
#define SUBGROUP_MEMORY_BARRIER_SHARED() memoryBarrierShared()

#define coopMatLoad(m, arr, off, stride, layout) m = EmuAB(uint(off), uint(stride), 0, false, false)
// a column-major B read from COOPMAT_EMU_A's array
#define coopMatLoadBFromA(m, off, stride) m = EmuAB(uint(off), uint(stride), 0, false, true)
#define coopMatStore(m, arr, off, stride, layout) {                                            \
        [[unroll]] for (uint emu_e = 0u; emu_e < 8u; ++emu_e)                                   \
            arr[uint(off) + c_row(SUBGROUP_LANE, emu_e) * uint(stride) + c_col(SUBGROUP_LANE, emu_e)] = m.v[emu_e]; \
    }

// C stored row-major to a uvec4 array, off and stride counted in ints (4 a uvec4).
#define coopMatStoreWords(m, arr, off, stride) {                                               \
        [[unroll]] for (uint emu_e = 0u; emu_e < 8u; ++emu_e) {                                 \
            uint emu_i = uint(off) + c_row(SUBGROUP_LANE, emu_e) * uint(stride) + c_col(SUBGROUP_LANE, emu_e); \
            arr[emu_i >> 2][emu_i & 3u] = uint(m.v[emu_e]);                                     \
        }                                                                                       \
    }

// C stored column-major to a uvec4 array (element (row, col) at off + col * stride + row, in ints).
#define coopMatStoreWordsColumns(m, arr, off, stride) {                                        \
        [[unroll]] for (uint emu_e = 0u; emu_e < 8u; ++emu_e) {                                 \
            uint emu_i = uint(off) + c_col(SUBGROUP_LANE, emu_e) * uint(stride) + c_row(SUBGROUP_LANE, emu_e); \
            arr[emu_i >> 2][emu_i & 3u] = uint(m.v[emu_e]);                                     \
        }                                                                                       \
    }

// The signed byte k (0..15) of a uvec4.
int emu_int8(uvec4 v, uint k) {
    return bitfieldExtract(int(v[k / 4u]), int(k % 4u) * 8, 8);
}

EmuC coopMatMulAdd(EmuAB a, EmuAB b, EmuC c) {
    EMU_UNROLL for (uint e = 0u; e < 8u; ++e) {
        int s = c.v[e];
        uint row = c_row(SUBGROUP_LANE, e), col = c_col(SUBGROUP_LANE, e);
        EMU_UNROLL for (uint k = 0u; k < 32u; ++k) {
            int av = a.filled ? a.fill : emu_int8(COOPMAT_EMU_A[a.off + row * a.stride + k / 16u], k % 16u);
            int bv = b.filled ? b.fill
                   : emu_int8(b.from_a ? COOPMAT_EMU_A[b.off + col * b.stride + k / 16u]
                                       : COOPMAT_EMU_B[b.off + col * b.stride + k / 16u], k % 16u);
            s += av * bv;
        }
        c.v[e] = s;
    }
    return c;
}
