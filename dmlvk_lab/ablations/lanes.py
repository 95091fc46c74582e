"""dmlvk_lab/shader_ablation.py recipe: conv.coopmat.halo's (and the pair's) channels-last epilogue in the
accumulators' own lanes (LANES 1, subgroup shuffles) against the stage in shared memory (LANES 0),
and the lanes' epilogue with HALO_WORKGROUPS 264 (132, one workgroup an SM on the H200, is the
default). The outputs are the same."""
VARIANTS = {
    "lanes (LANES 1)": [],
    "stage (LANES 0)": {"edits": [], "tuning": {"HALO_LANES": False}},
    "lanes, 264 workgroups": {"edits": [], "tuning": {"HALO_WORKGROUPS": 264}},
}
