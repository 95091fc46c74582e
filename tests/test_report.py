"""python -m dmlvk_lab report on the test device at a small case count, and its HTML page rendered by
headless Chromium: the tables are in the rendered page and the screenshot is not blank."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.host      # the report's machinery

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    proc = subprocess.run([sys.executable, "-m", "dmlvk_lab", "report", "--cases", "8", "--seed", "3", "--out", str(out),
                           "--device", "all", "--directml-save", str(out / "answers.pkl")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    js = [p for p in out.glob("report-*.json") if p.name != "report-all.json"][0]
    return out, json.loads(js.read_text())


@pytest.fixture(scope="module")
def merged(report, tmp_path_factory):
    """The one-page form over two device reports (this device's, twice: CI has one device)."""
    out, _ = report
    js = [p for p in out.glob("report-*.json") if p.name != "report-all.json"][0]
    dest = tmp_path_factory.mktemp("merged")
    proc = subprocess.run([sys.executable, "-m", "dmlvk_lab", "report", "--merge", str(js), str(js), "--out", str(dest)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return dest, json.loads((dest / "report-all.json").read_text())


def test_report_contents(report):
    out, rep = report
    s = rep["summary"]
    assert s["examples"] == "19/19"
    assert s["node_cases"] == "9/9"
    assert s["onnxruntime_bit_exact"] == "100.0 %"
    documented = [v for v in rep["validation"] if v["basis"] in ("documented", "measured on DirectML")]
    assert s["validation_documented_agreeing"] == f"{len(documented)}/{len(documented)}"
    assert s["validation_choices"] == len(rep["validation"]) - len(documented) > 0
    ops = {(r["operator"], r["oracle"]) for r in rep["differential"] if r["elements"]}
    for op in ("DEPTH_TO_SPACE1", "SPACE_TO_DEPTH1", "QUANTIZED_LINEAR_CONVOLUTION"):
        assert (op, "onnxruntime") in ops and (op, "onnx.reference") in ops
    levels = {c["level"] for v in rep["validation"] for c in v["cells"]}
    assert {"DML_FEATURE_LEVEL_1_0", "DML_FEATURE_LEVEL_2_1", "DML_FEATURE_LEVEL_4_0", "DML_FEATURE_LEVEL_5_2"} <= levels
    md = next(p for p in out.glob("report-*.md") if p.name != "report-all.md").read_text()
    from dmlvk_lab.directml import oracle
    d = rep["directml"]
    if oracle.missing() is None:                 # set up (always in CI): sections 7 and 8 from its answers
        assert d["ran"] and "## 7. DirectML itself" in md and "## 8. DirectML itself" in md
        assert "DirectML.Debug.dll" in md and oracle.LABEL in md
        assert all(r["agrees"] is not False or r["divergence"] for r in d["rules"])
        # the rest: the divergences dmlvk keeps against DirectML, and the one rule its structures cannot carry
        from dmlvk_lab.conformance import DIVERGES
        assert all(r["agrees"] is True or r["basis"] == DIVERGES or r["agrees"] is None for r in d["rules"])
        assert sum(r["agrees"] is None for r in d["rules"]) == 1
        assert d["fuzzed"]["unexplained"] == 0
        assert sum(r["equal"] + r["named"] for r in d["executions"]) == sum(r["cases"] for r in d["executions"]) > 0
        assert s["directml"].startswith(f"{sum(r['agrees'] is True for r in d['rules'])}/")
    else:
        assert not d["ran"] and f"DirectML itself: not run ({oracle.missing()})" in md
    for n in range(1, 7):
        assert f"## {n}. " in md
    assert list(out.glob("report-*-agreement.png"))


def test_saved_directml_answers_give_the_same_comparison(report, device):
    """--directml-save / --directml-load: another machine (a GPU without Wine) compares its outputs
    with the same answers of DirectML's."""
    from dmlvk_lab import report as rpt
    out, rep = report
    if not rep["directml"]["ran"]:
        pytest.skip("the DirectML oracle is not set up (tests/test_directml.py says why)")
    section = rpt.directml_section(device, rpt.load_answers(out / "answers.pkl"))
    assert section["rules"] == rep["directml"]["rules"]
    assert section["executions"] == rep["directml"]["executions"]


def test_device_all_writes_the_portability_page(report):
    out, rep = report
    page = json.loads((out / "report-all.json").read_text())
    assert page["matrix"]["devices"] == [rep["device"]["name"]]
    assert (out / "report-all-matrix.png").exists()


def test_merged_page_has_the_matrix(merged):
    dest, page = merged
    m = page["matrix"]
    assert len(m["devices"]) == 2 and len(m["rows"]) > 100
    assert all(r["cells"][0] == r["cells"][1] for r in m["rows"])
    assert page["headline"].startswith("Every device gives the same outcome on every row")
    sections = {r["section"] for r in m["rows"]}
    assert {"DirectML's documented examples", "ONNX node conformance cases",
            "Validation rules (spec 5), every feature level"} <= sections
    rules = [r for r in m["rows"] if r["section"].startswith("Validation")]
    assert any(r["directml"].startswith("unconfirmed: dmlvk's choice") for r in rules)
    assert any(r["directml"].startswith("documented: accepted from FL") for r in rules)
    assert "Compared with: DirectML itself where its oracle is set up" in (dest / "report-all.md").read_text()
    if page["reports"][0]["summary"]["directml"].startswith("not run"):
        return
    assert any("; DirectML itself at FL 6.4: accepts" in r["directml"] for r in rules)
    assert any("; DirectML itself at FL 6.4: rejects" in r["directml"] for r in rules)
    runs = [r for r in m["rows"] if r["section"] == "Output buffers against DirectML itself"]
    assert runs and all(c == "agree" for r in runs for c in r["cells"] if c != "n/a")


def _render(exe, page_path, tmp_path):
    """(DOM, screenshot as an RGB array) of a page in headless Chromium."""
    page = page_path.resolve().as_uri()
    flags = CHROMIUM_FLAGS + [f"--user-data-dir={tmp_path / 'profile'}"]
    env = {**os.environ, "HOME": str(tmp_path)}
    dom = subprocess.run([exe, *flags, "--dump-dom", page], capture_output=True, text=True, timeout=120, env=env)
    assert dom.returncode == 0, dom.stderr[-2000:]
    shot = tmp_path / f"{page_path.stem}.png"
    r = subprocess.run([exe, *flags, f"--screenshot={shot}", "--window-size=1280,2000", page],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    import matplotlib.image
    return dom.stdout, matplotlib.image.imread(str(shot))[..., :3]


def chromium() -> str:
    """Debian's chromium: ci/setup.sh installs it, and CI (CI=true) requires it; elsewhere (a GPU
    machine that reaches no registry) its absence skips the rendering tests."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        why = "chromium is not installed (ci/setup.sh installs Debian's chromium)"
        pytest.fail(why) if os.environ.get("CI") == "true" else pytest.skip(why)
    return exe


def test_merged_page_renders_in_headless_chromium(merged, tmp_path):
    dest, page = merged
    exe = chromium()
    dom, img = _render(exe, dest / "report-all.html", tmp_path)
    assert "id=\"matrix\"" in dom and "id=\"headline\"" in dom
    assert dom.count("class=\"agree\"") >= 2 * len(page["matrix"]["rows"]) - 20
    assert "data:image/png;base64," in dom                  # the heat map travels inside the page
    not_white = (img < 0.95).any(axis=2).mean()
    green = ((img[..., 1] > 0.6) & (img[..., 0] < 0.5) & (img[..., 2] < 0.5)).mean()   # the heat map's green
    assert not_white > 0.02, f"the screenshot is nearly blank ({not_white:.3%} non-white)"
    assert green > 0.002, "the heat map is not visible"


def test_report_renders_in_headless_chromium(report, tmp_path):
    out, rep = report
    exe = chromium()
    page = next(p for p in out.glob("report-*.html") if p.name != "report-all.html").resolve().as_uri()
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
