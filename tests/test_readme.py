"""Every Python block of the README runs as written (in a fresh interpreter, on the test device)."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.host      # the README's code

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_readme_block_runs(i, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.run([sys.executable, "-c", BLOCKS[i]], capture_output=True, text=True, cwd=tmp_path,
                       env=env, timeout=300)
    assert p.returncode == 0, f"README block {i} failed:\n{BLOCKS[i]}\n{p.stdout}\n{p.stderr[-3000:]}"
