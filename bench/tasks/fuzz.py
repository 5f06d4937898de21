"""Loader and collection fuzzing: mutated index files (tests/fuzz/mutator.py, checksums
recomputed) and collections changed behind their back (tests/fuzz/collection_mutator.py: valid
SQL on every table, stale, swapped or damaged index files, edited manifests), each loaded in
worker processes that survive crashes (bench/fuzz.py). A finding is an input that loaded but
broke a contract (a wrong answer, a non-ragcore exception); the counts add up every run
recorded, across sessions."""

from __future__ import annotations

import os
from pathlib import Path
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


def write(runs: list[dict], command: str, out_dir=None):
    """The section of every run so far: one row per kind, its counts summed over the runs."""
    import fuzz

    rows = [{"kind": kind, **{key: value for key, value in counts.items() if key != "outcomes"}}
            for kind, counts in fuzz.totals(runs).items()]
    notes = [f"{len(runs)} run(s) recorded; the last: {command}"]
    return write_section(
        "fuzz", "Loader and collection fuzzing", command, threads=1, order=70,
        intro=" ".join(__doc__.split()),
        tables=[{"title": "", "columns": COLUMNS, "rows": rows, "notes": notes}],
        extra={"runs": runs}, out_dir=None if out_dir is None else Path(out_dir))


def run(grid, out_dir, command, limits):
    import fuzz

    crashers = os.path.join(out_dir, "fuzz-crashers")
    os.makedirs(crashers, exist_ok=True)
    runs = fuzz.recorded(os.path.join(out_dir, "fuzz.json"))["runs"]
    run = {"command": command, "loaders": []}
    deadline = time.time() + grid["seconds_per_kind"]
    for i, kind in enumerate(grid["kinds"]):
        run["loaders"].append(fuzz.drive(kind, grid["runs"], deadline + i * grid["seconds_per_kind"],
                                         crashers, fuzz.first_seed(runs, kind)))
    return write(runs + [run], command, out_dir)
