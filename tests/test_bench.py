"""python -m dmlvk bench --only depth-space on the test device at small sizes: its files, its
summary by size class, and the union of two runs of different sizes (--rerender)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from dmlvk.bench import merge_results, nominal_mib

ROOT = Path(__file__).resolve().parent.parent


def _bench(out: Path, *args) -> Path:
    proc = subprocess.run([sys.executable, "-m", "dmlvk", "bench", "--out", str(out), "--no-peers", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return next(out.glob("depth-space-*.json"))


def test_depth_space_runs_and_their_union(tmp_path):
    a = _bench(tmp_path / "a", "--only", "depth-space", "--sizes", "1", "--repeats", "1")
    b = _bench(tmp_path / "b", "--only", "depth-space", "--sizes", "4", "--repeats", "1")
    ra, rb = json.loads(a.read_text()), json.loads(b.read_text())
    assert "conv" in ra and not ra["conv"] and "runtime" not in ra
    assert len(ra["depth_space"]) == 48 and all(r["shader"] for r in ra["depth_space"])
    assert all(0 < r["pct_of_copy"] < 1000 for r in ra["depth_space"])
    merged = _bench(tmp_path / "m", "--rerender", str(a), str(b))
    rm = json.loads(merged.read_text())
    assert len(rm["depth_space"]) == 96 and rm["merged_dates"] == [ra["date"], rb["date"]]
    md = merged.with_suffix(".md").read_text()
    assert "## Summary" in md and "| 1-8 MiB | 96 |" in md and "| all | 96 |" in md
    with pytest.raises(ValueError, match="share tensor sizes"):
        merge_results([ra, ra])
    with pytest.raises(ValueError, match="different devices"):
        merge_results([ra, {**rb, "device": {**rb["device"], "name": "another"}}])


def test_size_class_comes_from_the_label():
    assert nominal_mib({"case": "NHWC with gaps 64 MiB", "bytes": 60 << 20}) == 64
    assert nominal_mib({"case": "1x64x540x960", "bytes": 33177600}) == pytest.approx(31.64, abs=0.01)
