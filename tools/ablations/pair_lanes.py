"""tools/shader_ablation.py recipe: conv.coopmat.halo.pair's first layer on the cooperative matrices
(PAIR_LANES: its taps gathered into each subgroup's B tile, requantized in the accumulators' lanes)
against its packed 4 x 8-bit dot products, where the pair runs by default and (PAIR_MAX_POSITIONS
raised) at every size. The outputs are the same."""
EVERYWHERE = 1 << 26
VARIANTS = {
    "as is": [],
    "pair on dot products": {"edits": [], "tuning": {"PAIR_LANES": False}},
    "pair everywhere": {"edits": [], "tuning": {"PAIR_MAX_POSITIONS": EVERYWHERE}},
    "pair everywhere, dot products": {"edits": [], "tuning": {"PAIR_MAX_POSITIONS": EVERYWHERE, "PAIR_LANES": False}},
}
