"""dmlvk_lab/shader_ablation.py recipe: conv.coopmat.halo (the ESPCN's 3x3 64->32 layer) with its input
channels in two slices (HALO_KSPLIT 2: 26 KiB of shared memory a workgroup instead of 46, no next
window in registers), so that an SM can hold two of its workgroups (tools/sm_probe.py: one of 32 KiB
or more), against the kernel as it is. The outputs are the same. On the H200 the slices lost
(benchmarks/README.md), so HALO_KSPLIT stays 1."""
VARIANTS = {
    "as is (one slice, 132 workgroups)": [],
    "2 slices, 132 workgroups": {"edits": [], "tuning": {"HALO_KSPLIT": 2}},
    "2 slices, 264 workgroups": {"edits": [], "tuning": {"HALO_KSPLIT": 2, "HALO_WORKGROUPS": 264}},
    "2 slices, 528 workgroups": {"edits": [], "tuning": {"HALO_KSPLIT": 2, "HALO_WORKGROUPS": 528}},
}
