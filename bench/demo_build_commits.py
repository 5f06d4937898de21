"""The demo's index build of several builds of ragcore, side by side on one machine: each
runs ``python -m ragcore demo`` in a fresh process with an empty embedding cache until it
prints "N chunks indexed in S s", then is stopped. The builds take turns (order rotated
every round), so a slower machine or a busier minute hits each of them alike.

    python bench/demo_build_commits.py --build old=/path/to/pkg --build now=/other/pkg [--rounds 2]

A build is a folder holding an importable ``ragcore`` package (a source tree's ``src/`` with
its compiled ``_core`` copied beside the Python files, or a virtual environment's
site-packages); it goes first on PYTHONPATH. Every run starts from an empty cache, so a build
that derives its model (main's fused fp32 graph) pays for the derivation each time.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

INDEXED = re.compile(r"(\d+) chunks indexed in ([\d.]+) s")


def one_build(pkg: Path, cache: Path) -> tuple[int, float, float]:
    """(chunks, the demo's own build seconds, wall seconds to that line) of one demo run."""
    env = dict(os.environ, PYTHONPATH=str(pkg), RAGCORE_CACHE=str(cache))
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "ragcore", "demo"], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        for line in proc.stdout:
            found = INDEXED.search(line)
            if found:
                return int(found.group(1)), float(found.group(2)), time.perf_counter() - t0
        raise RuntimeError(f"{pkg}: the demo ended (exit {proc.wait()}) without an index line")
    finally:
        proc.kill()
        proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", action="append", required=True, metavar="NAME=PKG_DIR")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    builds = dict(b.split("=", 1) for b in args.build)
    work = Path(tempfile.mkdtemp(prefix="demo_builds_"))
    results: dict[str, list[tuple[int, float]]] = {name: [] for name in builds}
    print(f"load {os.getloadavg()[0]:.2f}", flush=True)
    for rnd in range(args.rounds):
        names = list(builds)[rnd % len(builds):] + list(builds)[:rnd % len(builds)]
        for name in names:
            cache = work / f"{name}-{rnd}"
            cache.mkdir(parents=True)
            chunks, build_s, wall_s = one_build(Path(builds[name]), cache)
            results[name].append((chunks, build_s))
            print(f"round {rnd} {name:10s} {chunks} chunks in {build_s:6.1f} s "
                  f"({chunks / build_s:6.1f} chunks/s; process start to line {wall_s:6.1f} s) "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)
    for name, runs in results.items():
        chunks, best = min(runs, key=lambda run: run[1])
        print(f"{name}: best {best:.1f} s, {chunks / best:.1f} chunks/s over {len(runs)} runs")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
