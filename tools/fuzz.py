"""The description fuzzer: python tools/fuzz.py --cases N --seed S (see dmlvk_lab/fuzz.py)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from dmlvk_lab.fuzz import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
