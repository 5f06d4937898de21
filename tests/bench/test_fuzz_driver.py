"""bench/fuzz.py's driver: counts are handed on after every worker, so that a run stopped
early keeps what its finished workers counted."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import _bench_path  # noqa: F401  (bench/ on sys.path)
import ragcore

import fuzz

# The workers are subprocesses: they import the ragcore this test imported (installed in CI,
# src/ with a dev build), not src/ by name, where CI has no built module.
PACKAGE_DIR = str(Path(ragcore.__file__).resolve().parents[1])


def test_counts_are_handed_on_after_every_worker(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([PACKAGE_DIR,
                                                       os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setattr(fuzz, "_BATCH", {"flat": 5})
    seen = []
    total = fuzz.drive("flat", 10, time.time() + 300, str(tmp_path), 7,
                       on_batch=lambda counts: seen.append(json.loads(json.dumps(counts))))
    assert [c["executions"] for c in seen] == [5, 10]
    assert [c["seeds"] for c in seen] == [[7, 7], [7, 8]]
    assert seen[0]["refused"] == seen[0]["executions"] - seen[0]["loaded"] - seen[0]["findings"]
    assert total["executions"] == 10

