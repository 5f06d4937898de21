"""Executions per second of a fuzz kind's worker, for two (or more) source trees in turns.

    python bench/fuzz_rate.py --tree before=PATH --tree after=. [--kind collection]
                              [--runs 200] [--rounds 3] [--seed 1000]

A tree is a checkout holding src/ragcore (its _core built beside it), tests/fuzz and
bench/fuzz.py: each runs its own harness on its own ragcore. Each round runs every tree's
worker (bench/fuzz.py --worker) on one core (CPU 0), in a fresh process, the order of the
trees rotated every round, once with --runs 0 (imports and seed collections only) and once
with --runs N, with the same seed: the difference is the cost of N executions. Prints the
CPU seconds (the worker's user + system time, every thread) and wall seconds per execution,
the executions per CPU second (median round) and each tree's speedup over the first tree
(per round, where both ran the same seed's mutations, and their median).
The load of a shared machine shows in wall time far more than in CPU time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import builds  # bench/, this script's folder


def _tree(text: str) -> tuple[str, Path]:
    name, path = builds.parse(text, "--tree")
    if not (path / "bench" / "fuzz.py").is_file():
        raise argparse.ArgumentTypeError(f"--tree {name}: {path} is not a checkout (no "
                                         "bench/fuzz.py)")
    return name, path


def _worker(tree: str, kind: str, runs: int, seed: int) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one worker process."""
    env = builds.environment(os.path.join(tree, "src"))
    cmd = ["taskset", "-c", "0", sys.executable, os.path.join(tree, "bench", "fuzz.py"),
           "--worker", kind, "--seed", str(seed), "--runs", str(runs)]
    with tempfile.TemporaryDirectory(prefix="fuzz-rate-", dir="/dev/shm" if
                                     os.path.isdir("/dev/shm") else None) as directory:
        before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        subprocess.run([*cmd, "--dir", directory], env=env, check=True, cwd=tree)
        wall, after = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=_tree, action="append", required=True)
    parser.add_argument("--kind", default="collection")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1000)
    args = parser.parse_args()
    rounds = {name: [] for name, _ in args.tree}
    for r, name, tree in builds.in_turns(args.tree, args.rounds):
        cpu0, wall0 = _worker(tree, args.kind, 0, args.seed + r)
        cpu, wall = _worker(tree, args.kind, args.runs, args.seed + r)
        rounds[name].append({"cpu_ms": round((cpu - cpu0) / args.runs * 1e3, 2),
                             "wall_ms": round((wall - wall0) / args.runs * 1e3, 2)})
        print(name, r, rounds[name][-1], flush=True)
    out = {"kind": args.kind, "runs": args.runs, "load": os.getloadavg(), "trees": {}}
    first = rounds[args.tree[0][0]]
    for name, tree in args.tree:
        cpu = [x["cpu_ms"] for x in rounds[name]]
        ratios = [a["cpu_ms"] / b for a, b in zip(first, cpu)]  # the same round: the same seed
        out["trees"][name] = {"path": str(tree), "rounds": rounds[name],
                              "executions_per_cpu_second": round(1e3 / statistics.median(cpu), 1),
                              "speedup_per_round": [round(r, 2) for r in ratios],
                              "speedup": round(statistics.median(ratios), 2)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
