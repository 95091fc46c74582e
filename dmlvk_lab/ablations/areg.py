"""dmlvk_lab/shader_ablation.py recipe: conv.coopmat.halo (the ESPCN's 3x3 64->32 layer) with its filter's
fragments in registers (HALO_AREG: each subgroup two rows of the tile for 16 channels, 18 A fragments
held from the first tile on; shared memory the window's alone, 28 KiB a workgroup instead of 46, so
that an SM can hold two of its workgroups where an invocation needs 128 registers or fewer; no next
window in registers; the default), against the filter rows in shared memory (HALO_AREG off), with
264 workgroups, and with a subgroup barrier after each window row's or each tap column's multiplies,
meant to keep the compiler from loading every B fragment of the unrolled taps first (on the H200 it
did not lower the 255 registers an invocation). The outputs are the same."""
F = "qlinear_conv_coopmat_halo.comp"
_ROW_END = """                    }
                }
            }
        } else"""
_COLUMN_END = """                        }
                    }
                }
            }
        } else"""
ROW_BARRIER = [(F, _ROW_END, """                    }
                    SUBGROUP_BARRIER();
                }
            }
        } else""")]
COLUMN_BARRIER = [(F, _COLUMN_END, """                        }
                        SUBGROUP_BARRIER();
                    }
                }
            }
        } else""")]
VARIANTS = {
    "as is (filter in registers, 132 workgroups)": [],
    "filter rows in shared memory (HALO_AREG off)": {"edits": [], "tuning": {"HALO_AREG": False}},
    "filter in registers, 264 workgroups": {"edits": [], "tuning": {"HALO_WORKGROUPS": 264}},
    "filter in registers, a barrier each window row": ROW_BARRIER,
    "filter in registers, a barrier each tap column": COLUMN_BARRIER,
}
