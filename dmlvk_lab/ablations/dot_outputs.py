"""dmlvk_lab/shader_ablation.py recipe: conv.dot with DOT_FEW_OUTPUTS (4) outputs an invocation where
DOT_OUTPUTS (8) would leave fewer than DOT_FEW_INVOCATIONS, as committed, against 8 always
(DOT_FEW_INVOCATIONS 0), the shaders as they are; each dispatch timed in the frame (the first layer
takes 4 as committed at 540x960 and, since its 16-channel blocks, at 1080x1920: 1,036,800 invocations
with 8)."""
VARIANTS = {
    "as committed": {"edits": [], "tuning": {}},
    "8 outputs always": {"edits": [], "tuning": {"DOT_FEW_INVOCATIONS": 0}},
}
