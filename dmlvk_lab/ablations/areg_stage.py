"""dmlvk_lab/shader_ablation.py recipe: the halo kernel's filter fragments (AREG) loaded into registers from
the filter rows staged in shared memory (AREG 1, as tuned) against straight from Wp (AREG 2,
HALO_AREG_STAGE off), the shaders as they are. NVIDIA's driver (580.159.04, the H200) makes each
coopMatLoad of an 8-bit matrix from a storage buffer one byte load an element (LDG.E.S8: 288 a lane
for the ESPCN 3x3 64->32 layer's 18 fragments, dmlvk_lab/sass.py), where from shared memory it uses
LDSM. AREG 2's shared memory is the window's alone (28 KiB against 46 KiB: one workgroup an SM either
way, at 255 or 168 registers an invocation). The outputs are the same."""
VARIANTS = {
    "as is": [],
    "fragments straight from Wp": {"edits": [], "tuning": {"HALO_AREG_STAGE": False}},
}
