// The operands of the cooperative-matrix convolution (qlinear_conv_coopmat.comp, _halo.comp), repacked on the
// device at every execution by qconv_pack_input.comp and qconv_pack_filter.comp. Their sizes come
// from the push constants and specialization constants alone; QuantizedLinearConvolutionDesc's
// _packed_geometry computes the same numbers on the host.
//
// Xp, [N][HP][WP][G][CP] int8: the input shifted to int8 (a uint8 x becomes x ^ 0x80 = x - 128),
//     the padding written out as the byte that stands for the input zero point, every input
//     position a tap can reach present (HP x WP), channels padded with zeros to CP.
// Wp, a header of 2 x M int32 words, corr[m] then cw[m] (see qconv_pack_filter.comp), rounded up to
//     16 bytes, then [G][MP][KP] int8: the filter shifted likewise, k = (kh * KW + kw) * CP + c,
//     zeros past Cg, past the group's channels and past the taps.

// Fragments of 16 output channels each warp multiplies: a workgroup's tile is BM = 32 * WM
// channels by BN = 128 pixels. The cooperative-matrix shader is compiled per WM (WM_FIXED), so
// that its arrays of matrices are indexed by constants; the packing shaders take the constant.
layout(constant_id = 7) const uint WM_SPEC = 4;
#ifdef WM_FIXED
const uint WM = WM_FIXED;
#else
const uint WM = WM_SPEC;
#endif
// 1 when the output is packed NCHW with OH * OW a multiple of 4: whole words are stored; 2 when
// OH * OW is a multiple of 16 as well: the cooperative-matrix kernel stores 16 bytes of a channel
// at a time (32 pixels of a channel from a subgroup's two fragments, each 32-byte sector whole);
// 3 (the 8 x 32-tile kernels) when the output is channels-last with whole-word strides and a multiple
// of 4 channels a group: four channels of a pixel a word.
layout(constant_id = 8) const uint PACKED_OUT = 0;

// K slices (split-K): above 1 the multiply writes int32 partial tiles, 16 x 16 fragments of 256
// consecutive ints (row-major), [split][g][MP / 16][PP / 16] (PP = the pixel count rounded up to
// 128), followed by the partial window sums, one fragment per [split][g][PP / 16] (row 0 used);
// qlinear_conv_splitk.comp adds them up.
layout(constant_id = 9) const uint SPLIT = 1;

const uint BK = 64;            // bytes of K per main-loop step (two 32-deep multiplies)
const uint BN = 128;
const uint BM = 32 * WM;

uint packed_groups() { return p.out_sizes.y / p.mg; }
uint packed_cp() { return (p.cg + 31u) & ~31u; }
uint packed_hp() { return (p.out_sizes.z - 1) * p.conv_stride.x + (KH - 1) * p.dilation.x + 1; }
uint packed_wp() { return (p.out_sizes.w - 1) * p.conv_stride.y + (KW - 1) * p.dilation.y + 1; }
uint packed_kp() { return (KH * KW * packed_cp() + BK - 1) / BK * BK; }
uint packed_mp() { return (p.mg + BM - 1) / BM * BM; }
uint packed_pp() { return (p.out_sizes.x * p.out_sizes.z * p.out_sizes.w + BN - 1) / BN * BN; }
uint partial_sums_base() { return SPLIT * packed_groups() * packed_mp() * packed_pp(); }
uint partial_index(uint s, uint g, uint m, uint px) {
    uint frag = ((s * packed_groups() + g) * (packed_mp() / 16) + m / 16) * (packed_pp() / 16) + px / 16;
    return frag * 256 + (m % 16) * 16 + px % 16;
}
uint partial_sum_index(uint s, uint g, uint px) {
    return partial_sums_base() + ((s * packed_groups() + g) * (packed_pp() / 16) + px / 16) * 256 + px % 16;
}
uint packed_header_words() { return (2 * p.out_sizes.y + 3) & ~3u; }
// 1 when some output channel has a nonzero cw (the window sums of Xp are needed); the host sets it.
uint window_sums_needed() { return params[2 + 3 * p.out_sizes.y]; }
