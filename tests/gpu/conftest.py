"""The GPU tests reuse the sparse and dense tests' corpora (tests/sparse, tests/dense)."""

import sys
from pathlib import Path

for _folder in ("sparse", "dense"):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / _folder))
