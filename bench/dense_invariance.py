"""The cost of batch invariance: FlatIndex QPS of this build against another build.

    python bench/dense_invariance.py --baseline-python /path/to/main-venv/bin/python

This build (the interpreter running the script) and the baseline build (another
virtual environment with ragcore installed, e.g. main's tree) each run the same cells
in a child process, alternating, for --rounds rounds (a slow phase of a shared machine
then hits both); the median QPS per cell is reported with the ratio this / baseline.
Cells: seeded random unit vectors, d = 384, inner product, k = 10, corpus --n, batches
1 (scan path, unchanged) and 16, 256, 1024 (blocked path), 1 and 2 threads, float32
and float16 storage. Writes bench/results/dense_invariance.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")


def child(n: int, batches: list[int], threads: list[int], dtypes: list[str], seconds: float) -> None:
    import numpy as np

    import ragcore

    rng = np.random.default_rng(1234)
    corpus = rng.standard_normal((n, 384)).astype(np.float32)
    corpus /= np.linalg.norm(corpus, axis=1, keepdims=True)
    queries = rng.standard_normal((max(batches), 384)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    out = []
    for dtype in dtypes:
        index = ragcore.FlatIndex(384, "ip", dtype)
        index.add(corpus)
        for t in threads:
            for b in batches:
                q = queries[:b]
                index.search(q, 10, n_threads=t)  # warm-up
                calls, t0 = 0, time.perf_counter()
                while True:
                    index.search(q, 10, n_threads=t)
                    calls += 1
                    elapsed = time.perf_counter() - t0
                    if elapsed >= seconds and calls >= 3:
                        break
                out.append({"dtype": dtype, "threads": t, "batch": b, "qps": b * calls / elapsed})
    print(json.dumps(out))


def run_child(python: str, args) -> list[dict]:
    cmd = [python, os.path.abspath(__file__), "--child", "--n", str(args.n), "--seconds",
           str(args.seconds), "--batches", *map(str, args.batches), "--threads",
           *map(str, args.threads), "--dtypes", *args.dtypes]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OPENBLAS_CORETYPE")}
    done = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-python", help="interpreter of the baseline build")
    parser.add_argument("--python", default=sys.executable, help="interpreter of this build")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 16, 256, 1024])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float16"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=0.5, help="per cell and round")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.n, args.batches, args.threads, args.dtypes, args.seconds)
        return
    if not args.baseline_python:
        parser.error("--baseline-python is required")
    load_before = os.getloadavg()
    runs = {"this": [], "baseline": []}
    for _ in range(args.rounds):
        for name, python in (("this", args.python), ("baseline", args.baseline_python)):
            runs[name].append(run_child(python, args))
    rows = []
    for i, cell in enumerate(runs["this"][0]):
        this = statistics.median(r[i]["qps"] for r in runs["this"])
        base = statistics.median(r[i]["qps"] for r in runs["baseline"])
        rows.append({**{k: cell[k] for k in ("dtype", "threads", "batch")},
                     "qps_this": round(this, 1), "qps_baseline": round(base, 1),
                     "ratio": round(this / base, 3)})
    report = {"command": " ".join(["python", "bench/dense_invariance.py", *sys.argv[1:]]),
              "n": args.n, "rounds": args.rounds, "load_before": load_before,
              "load_after": os.getloadavg(), "cells": rows}
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "dense_invariance.json"), "w") as f:
        json.dump(report, f, indent=1)
    lines = ["| dtype | threads | batch | QPS this | QPS baseline | this / baseline |",
             "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['dtype']} | {r['threads']} | {r['batch']} | {r['qps_this']:,.0f} | "
              f"{r['qps_baseline']:,.0f} | {r['ratio']:.2f} |" for r in rows]
    with open(os.path.join(RESULTS, "dense_invariance.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"load average before {load_before}, after {os.getloadavg()}")


if __name__ == "__main__":
    main()
