"""tools/shader_ablation.py recipe: conv.coopmat.few (the ESPCN's last layer, 3x3 32->4, as
conv.coopmat.few.float, made the runner's choice by FEW_BY_DEFAULT) against conv.dot.float, its
workgroup shapes, and its parts cut out one at a time. Each cut changes the output."""
F = "qlinear_conv_coopmat_few.comp"
FEW = {"FEW_BY_DEFAULT": 1}
TAPS = "    UNROLL_REAL for (uint tap = 0; tap < KH * KW; ++tap) {"
LOAD = "        win[i] = inside ? xp[at] ^ flip4 : pad4;"
STORE = "                    y_vec2[FLOAT_AT(m, m / 4, m % 4) / 2] ="

VARIANTS = {
    "conv.dot.float": [],
    "as is": {"edits": [], "tuning": FEW},
    "8 subgroups of 1 run": {"edits": [], "tuning": dict(FEW, FEW_RUNS=1)},
    "2 subgroups of 4 runs": {"edits": [], "tuning": dict(FEW, FEW_SUBGROUPS=2)},
    "no taps": {"edits": [(F, TAPS, TAPS.replace("tap < KH * KW", f"tap < ({NEVER} ? KH * KW : 0u)"))], "tuning": FEW},
    "no window loads": {"edits": [(F, LOAD, "        win[i] = pad4;")], "tuning": FEW},
    "no final stores": {"edits": [(F, STORE, f"                    if ({NEVER}) " + STORE.lstrip())], "tuning": FEW},
}
