"""tools/shader_ablation.py recipe: conv.dot with DOT_FEW_OUTPUTS (4) outputs an invocation where
DOT_OUTPUTS (8) would leave fewer than DOT_FEW_INVOCATIONS, as committed, against 8 always
(DOT_FEW_INVOCATIONS 0), the shaders as they are; each dispatch timed in the frame (at 540x960 the
first and last layers take 4 as committed, at 1080x1920 the last layer only)."""
VARIANTS = {
    "as committed": {"edits": [], "tuning": {}},
    "8 outputs always": {"edits": [], "tuning": {"DOT_FEW_INVOCATIONS": 0}},
}
