"""tools/shader_ablation.py recipe: the ESPCN's first two layers at 540x960 as one kernel
(conv.coopmat.halo.pair, PAIR_MAX_POSITIONS: the default there) against conv.dot (its channels-last
output 8 channels a store) then conv.coopmat.halo, with conv.dot's outputs (DOT_FEW_OUTPUTS 4 where
few invocations would run, or 8) and channels (8 or 16) an invocation. The outputs are the same."""
APART = {"PAIR_MAX_POSITIONS": 0}
VARIANTS = {
    "the pair (as is)": [],
    "apart": {"edits": [], "tuning": APART},
    "apart, 8 outputs": {"edits": [], "tuning": dict(APART, DOT_FEW_INVOCATIONS=0)},
    "apart, 16 channels": {"edits": [], "tuning": dict(APART, DOT_CHANNELS=16)},
    "apart, 8 outputs, 16 channels": {"edits": [], "tuning": dict(APART, DOT_FEW_INVOCATIONS=0, DOT_CHANNELS=16)},
}
