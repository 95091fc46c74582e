"""python -m dmlvk report on the test device at a small case count, and its HTML page rendered by
headless Chromium: the tables are in the rendered page and the screenshot is not blank."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    proc = subprocess.run([sys.executable, "-m", "dmlvk", "report", "--cases", "8", "--seed", "3", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (js,) = out.glob("report-*.json")
    return out, json.loads(js.read_text())


def test_report_contents(report):
    out, rep = report
    s = rep["summary"]
    assert s["examples"] == "19/19"
    assert s["node_cases"] == "9/9"
    assert s["onnxruntime_bit_exact"] == "100.0 %"
    assert s["validation_rules_agreeing"] == f"{len(rep['validation'])}/{len(rep['validation'])}"
    ops = {(r["operator"], r["oracle"]) for r in rep["differential"] if r["elements"]}
    for op in ("DEPTH_TO_SPACE1", "SPACE_TO_DEPTH1", "QUANTIZED_LINEAR_CONVOLUTION"):
        assert (op, "onnxruntime") in ops and (op, "onnx.reference") in ops
    levels = {c["level"] for v in rep["validation"] for c in v["cells"]}
    assert {"DML_FEATURE_LEVEL_1_0", "DML_FEATURE_LEVEL_2_1", "DML_FEATURE_LEVEL_4_0", "DML_FEATURE_LEVEL_5_2"} <= levels
    md = next(out.glob("report-*.md")).read_text()
    for n in range(1, 7):
        assert f"## {n}. " in md
    assert list(out.glob("report-*-agreement.png"))


def test_report_renders_in_headless_chromium(report, tmp_path):
    out, rep = report
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "chromium is not installed (ci/setup.sh installs Debian's chromium)"
    page = next(out.glob("report-*.html")).resolve().as_uri()
    flags = CHROMIUM_FLAGS + [f"--user-data-dir={tmp_path / 'profile'}"]
    env = {**os.environ, "HOME": str(tmp_path)}
    dom = subprocess.run([exe, *flags, "--dump-dom", page], capture_output=True, text=True, timeout=120, env=env)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count("<table") >= 5 and "id=\"summary\"" in dom.stdout
    assert "data:image/png;base64," in dom.stdout           # the chart travels inside the page
    shot = tmp_path / "shot.png"
    r = subprocess.run([exe, *flags, f"--screenshot={shot}", "--window-size=1280,2000", page],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    import matplotlib.image
    img = matplotlib.image.imread(str(shot))[..., :3]
    not_white = (img < 0.95).any(axis=2).mean()
    green = ((img[..., 1] > 0.9) & (img[..., 0] < 0.93) & (img[..., 2] < 0.93)).mean()   # the 'ok' cells
    assert not_white > 0.02, f"the screenshot is nearly blank ({not_white:.3%} non-white)"
    assert green > 0.001, "no table cells marked in agreement are visible"
