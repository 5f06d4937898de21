"""Loader fuzzing: mutated index files (tests/fuzz/mutator.py) loaded in worker processes
that survive crashes (bench/fuzz.py); a finding is a file that loaded but broke a contract."""

from __future__ import annotations

import os
import time

from results_file import write_section

COLUMNS = [{"key": "kind", "label": "loader"},
           {"key": "executions", "label": "executions", "format": ","},
           {"key": "loaded", "label": "loaded", "format": ","},
           {"key": "refused", "label": "refused", "format": ","},
           {"key": "findings", "label": "findings", "format": ","},
           {"key": "crashes", "label": "crashes", "format": ","},
           {"key": "harness_errors", "label": "harness errors", "format": ","},
           {"key": "seconds", "label": "seconds", "format": ",.0f"}]


def write(loaders: list[dict], command: str, out_dir=None):
    return write_section(
        "fuzz", "Loader fuzzing", command, threads=1, order=70,
        intro=" ".join(__doc__.split()),
        tables=[{"title": "", "columns": COLUMNS, "rows": loaders, "notes": []}],
        out_dir=out_dir)


def run(grid, out_dir, command, limits):
    import fuzz

    crashers = os.path.join(out_dir, "fuzz-crashers")
    os.makedirs(crashers, exist_ok=True)
    deadline = time.time() + grid["seconds_per_kind"]
    loaders = [fuzz.drive(kind, grid["runs"], deadline + i * grid["seconds_per_kind"], crashers)
               for i, kind in enumerate(grid["kinds"])]
    return write(loaders, command, out_dir)
