"""dmlvk_lab/shader_ablation.py recipe: conv.coopmat.halo (the ESPCN's 3x3 64->32 layer) with the next
tile's window loaded into registers (HALO_PREFETCH, several tiles a workgroup) by every subgroup while
the filter's fragments are in registers too (AREG, where the kernel leaves the next window out), its
loads issued before this tile's taps (where the kernel without AREG issues them), after them, or
after the epilogue's first barrier (in flight through the epilogue, which with the lanes touches no
shared memory); without AREG, its loads moved likewise; and the epilogue's
first barrier kept at a workgroup's first tile only (unsafe in general: a subgroup whose lanes are not
as coopmat_lanes.glsl says uses the window's memory as its stage; on the H200 they are). The outputs
are the same."""
F = "qlinear_conv_coopmat_halo.comp"
E = "qconv_coopmat_epilogue.glsl"       # (shared with the packed kernel: HALO-only insertions under #ifdef HALO)
_CONDITION = "prefetched = HALO_PREFETCH != 0 && AREG == 0 && KSPLIT == 1"
_EVERY = "prefetched = HALO_PREFETCH != 0 && KSPLIT == 1"
_BLOCK = """        // the next tile's window into registers, its loads in flight while this tile's taps multiply
        // (not with AREG: its registers hold the filter's fragments)
        prefetched = HALO_PREFETCH != 0 && AREG == 0 && KSPLIT == 1 && TILES > 1 && k + 1 < TILES && next < ptiles * mtiles * G;
        if (prefetched) {
            uint npt = next % ptiles, ng = next / ptiles / mtiles, nn, noh0, now0;
            tile_origin(npt, nn, noh0, now0);
            [[unroll]] for (uint i = 0; i < PRE; ++i) {
                uint e = i * gl_WorkGroupSize.x + t;
                if (e < HH * HWD * CQW)
                    pre[i] = window_vector(e, 0u, nn, ng, int(noh0) - int(p.start_pad.x), int(now0) - int(p.start_pad.y));
            }
        }
"""
_TAPS_END = """    }

    if (SPLIT > 1) {"""
_EPILOGUE_BARRIER = "    barrier();                                        // every subgroup's last multiplies are done (STAGE)"
EVERY = [(F, _CONDITION, _EVERY)]
FIRST_ONLY = [(E, _EPILOGUE_BARRIER, "    if (k == 0) barrier();")]


def _moved(condition, after_epilogue_barrier=False):
    """The next window's loads (under `condition`) moved after the taps, or after the epilogue's first
    barrier."""
    block = "#ifdef HALO\n" + _BLOCK.replace(_CONDITION, condition) + "#endif\n"
    if after_epilogue_barrier:
        return [(F, _BLOCK, ""), (E, _EPILOGUE_BARRIER, _EPILOGUE_BARRIER + "\n" + block)]
    return [(F, _BLOCK, ""), (F, _TAPS_END, block + _TAPS_END)]


VARIANTS = {
    "as is (filter in registers, no next window in flight)": [],
    "filter in registers, the next window's loads before the taps": EVERY,
    "filter in registers, the next window's loads after the taps": _moved(_EVERY),
    "filter in registers, the next window's loads after the epilogue's first barrier": _moved(_EVERY, True),
    "filter rows in shared memory (HALO_AREG off), loads before the taps": {"edits": [], "tuning": {"HALO_AREG": False}},
    "filter rows in shared memory, the next window's loads after the taps": {"edits": _moved(_CONDITION),
                                                                             "tuning": {"HALO_AREG": False}},
    "filter rows in shared memory, the next window's loads after the epilogue's first barrier": {
        "edits": _moved(_CONDITION, True), "tuning": {"HALO_AREG": False}},
    "as is, the epilogue's barrier at the first tile only": FIRST_ONLY,
    "the next window's loads before the taps, the epilogue's barrier at the first tile only": EVERY + FIRST_ONLY,
}
