"""The benchmark harness from a checkout: the same as `python -m dmlvk_lab bench` (see dmlvk_lab/bench.py)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from dmlvk_lab.bench import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
