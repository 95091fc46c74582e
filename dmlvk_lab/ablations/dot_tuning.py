"""dmlvk_lab/shader_ablation.py recipe: conv.dot's shape numbers on the ESPCN 5x5 1->64 layer (its
channels-last output 8 channels a store, the halo kernel's input), the shaders as they are: tiles a
workgroup (DOT_TILES_BLOCKS 4), outputs an invocation (DOT_OUTPUTS 8) and channels an invocation
(DOT_CHANNELS 8) one at a time. The outputs are the same."""
VARIANTS = {
    "as is": [],
    "2 tiles a workgroup": {"edits": [], "tuning": {"DOT_TILES_BLOCKS": 2}},
    "8 tiles a workgroup": {"edits": [], "tuning": {"DOT_TILES_BLOCKS": 8}},
    "4 outputs an invocation": {"edits": [], "tuning": {"DOT_OUTPUTS": 4}},
    "4 channels an invocation": {"edits": [], "tuning": {"DOT_CHANNELS": 4}},
    "16 channels an invocation": {"edits": [], "tuning": {"DOT_CHANNELS": 16}},
}
