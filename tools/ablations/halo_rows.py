"""tools/shader_ablation.py recipe: the halo kernel with one and with two rows of its tile a subgroup
(HALO_SUBGROUP_ROWS, conv.coopmat.halo's tuning number), the shaders as they are; both outputs equal
onnxruntime's."""
VARIANTS = {
    "one row a subgroup": {"edits": [], "tuning": {"HALO_SUBGROUP_ROWS": 1}},
    "two rows a subgroup": {"edits": [], "tuning": {"HALO_SUBGROUP_ROWS": 2}},
}
