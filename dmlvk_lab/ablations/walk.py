"""dmlvk_lab/shader_ablation.py recipe: conv.dot.nhwc's WALK (the ESPCN's last layer, conv.dot.float:
each subgroup walks DOT_WALK output rows, a lane an output column, its input rows loaded once with
a subgroup's 16-byte loads together) at 4 to 32 rows a subgroup, against the kernel without it
(DOT_WALK 0: each invocation OPT outputs of a row, its window loaded for them). The outputs are the
same."""
VARIANTS = {
    "walk 8 rows (as is)": [],
    "no walk": {"edits": [], "tuning": {"DOT_WALK": 0}},
    "walk 4 rows": {"edits": [], "tuning": {"DOT_WALK": 4}},
    "walk 16 rows": {"edits": [], "tuning": {"DOT_WALK": 16}},
    "walk 32 rows": {"edits": [], "tuning": {"DOT_WALK": 32}},
}
