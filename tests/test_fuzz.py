"""The description fuzzer (dmlvk_lab/fuzz.py): a few hundred cases in child processes, so a crash or
a hang fails the test and prints its case."""
import json

from dmlvk_lab.fuzz import fuzz


def test_fuzzed_descriptions_end_in_a_clear_error_or_the_reference_result():
    res = fuzz(400, seed=20261122, chunk=200, timeout=240)
    assert sum(res["tally"].values()) == 400
    assert res["tally"].get("ok", 0) >= 100          # the fuzzer reaches execution, not only rejections
    assert not res["failures"], "\n".join(json.dumps(f) for f in res["failures"][:5])
