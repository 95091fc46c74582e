"""The kernels chosen for every recorded description under every capability record are the recorded
ones (dmlvk_lab/golden_kernels.py): a restructuring of the variant tables must not change a choice."""
import gzip
import json

import pytest

from dmlvk_lab.golden_kernels import CAPABILITIES, GOLDEN, description, kernels

pytestmark = pytest.mark.host      # kernel choice from recorded capabilities, no device

ROWS = json.loads(gzip.decompress(GOLDEN.read_bytes()))


def test_the_record_reaches_every_shader():
    shaders = {k["shader"] for r in ROWS for chosen in r["chosen"].values() for k in chosen["kernels"]}
    assert shaders >= {"depth_space", "depth_space_rows", "depth_space_nhwc", "depth_space_lanes", "qlinear_conv",
                       "qlinear_conv_gemm", "qlinear_conv_depthwise", "qlinear_conv_depthwise_rows",
                       "qlinear_conv_cpu", "qlinear_conv_coopmat", "qlinear_conv_coopmat_halo", "qlinear_conv_splitk",
                       "qlinear_conv_dot"}


@pytest.mark.parametrize("caps", sorted(CAPABILITIES))
def test_chosen_kernels_are_the_recorded_ones(caps):
    wrong = []
    for row in ROWS:
        got = kernels(description(row["case"]), CAPABILITIES[caps])
        if got != row["chosen"][caps]:
            wrong.append((row["case"], row["chosen"][caps], got))
    assert not wrong, (f"{len(wrong)} of {len(ROWS)} descriptions chose other kernels; the first:\n"
                       + "\n".join(map(str, wrong[0])))
