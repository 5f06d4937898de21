"""The long fuzz run of the index loaders (tests/fuzz/mutator.py; tests/fuzz runs it briefly).

    python bench/fuzz.py --runs 1000000 [--kinds flat ivf bm25 hnsw] [--hours H]

Each loader is fuzzed in its own worker process, so that a crash (a signal) is caught:
the input that caused it is copied to bench/results/fuzz-crashers/ and the worker is
restarted with the next seed. Inputs that broke a contract without crashing are kept
there too. Counts go to bench/results/fuzz.json (a ragcore-bench/1 file: BENCHMARKS.md,
"Loader fuzzing"); bench/run.py's fuzz task runs the same loop for its grid's time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "fuzz"))
RESULTS = os.path.join(HERE, "results")
_STATUS_EVERY = 500


def worker(kind: str, seed: int, runs: int, directory: str) -> None:
    """Runs `runs` mutations of `kind`, writing counts to directory/status.json."""
    import numpy as np

    import mutator

    seeds = mutator.seed_files(kind, directory)
    rng = np.random.default_rng(seed)
    counts = {"done": 0, "loaded": 0, "findings": 0, "harness_errors": 0}
    status = os.path.join(directory, "status.json")
    for i in range(runs):
        try:
            data = mutator.mutate(seeds[i % len(seeds)], rng)
        except Exception as err:  # noqa: BLE001 - the mutator's fault, not ragcore's
            counts["harness_errors"] += 1
            print(f"mutator error: {type(err).__name__}: {err}", file=sys.stderr)
            continue
        try:
            counts["loaded"] += mutator.run_one(kind, data, directory)
        except mutator.ContractBroken as err:
            counts["findings"] += 1
            name = os.path.join(directory, f"finding-{seed}-{i}")
            with open(name + ".rc", "wb") as f:
                f.write(data)
            with open(name + ".txt", "w") as f:
                f.write(f"{err}\n{mutator.describe(data)}\n")
        counts["done"] += 1
        if counts["done"] % _STATUS_EVERY == 0 or counts["done"] == runs:
            with open(status + ".tmp", "w") as f:
                json.dump(counts, f)
            os.replace(status + ".tmp", status)


def drive(kind: str, runs: int, deadline: float, crashers: str) -> dict:
    total = {"kind": kind, "executions": 0, "loaded": 0, "refused": 0, "findings": 0,
             "crashes": 0, "harness_errors": 0, "seconds": 0.0}
    seed, t0 = 0, time.time()
    while total["executions"] < runs and time.time() < deadline:
        directory = tempfile.mkdtemp(prefix=f"fuzz-{kind}-", dir="/dev/shm" if
                                     os.path.isdir("/dev/shm") else None)
        batch = min(runs - total["executions"], 200_000)
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", kind, "--seed", str(seed),
               "--runs", str(batch), "--dir", directory]
        try:
            proc = subprocess.run(cmd, timeout=max(1.0, deadline - time.time()))
            returncode = proc.returncode
        except subprocess.TimeoutExpired:
            returncode = 0
        counts = {"done": 0, "loaded": 0, "findings": 0, "harness_errors": 0}
        if os.path.exists(os.path.join(directory, "status.json")):
            with open(os.path.join(directory, "status.json")) as f:
                counts = json.load(f)
        if returncode > 0:  # the worker raised: a fault of the harness (its stderr says)
            total["harness_errors"] += 1
        if returncode < 0:  # a signal: ragcore crashed; keep the input being loaded
            total["crashes"] += 1
            if os.path.exists(os.path.join(directory, "current.rc")):
                shutil.copy(os.path.join(directory, "current.rc"),
                            os.path.join(crashers, f"{kind}-crash-{seed}-{returncode}.rc"))
        for name in os.listdir(directory):
            if name.startswith("finding-"):
                shutil.copy(os.path.join(directory, name), os.path.join(crashers, f"{kind}-{name}"))
        shutil.rmtree(directory, ignore_errors=True)
        total["executions"] += counts["done"]
        total["loaded"] += counts["loaded"]
        total["findings"] += counts["findings"]
        total["harness_errors"] += counts.get("harness_errors", 0)
        seed += 1
        print(f"{kind}: {total['executions']} executions, {total['crashes']} crashes, "
              f"{total['findings']} findings", flush=True)
    total["refused"] = total["executions"] - total["loaded"] - total["findings"]
    total["seconds"] = round(time.time() - t0, 1)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1_000_000, help="executions per loader")
    parser.add_argument("--kinds", nargs="+", default=["flat", "ivf", "bm25", "hnsw"])
    parser.add_argument("--hours", type=float, default=24.0, help="time limit per loader")
    parser.add_argument("--results", default=RESULTS, help="the folder fuzz.json is written to")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.seed, args.runs, args.dir)
        return
    crashers = os.path.join(RESULTS, "fuzz-crashers")
    os.makedirs(crashers, exist_ok=True)
    sys.path.insert(0, HERE)
    from tasks.fuzz import write

    command = " ".join(["python", "bench/fuzz.py", *sys.argv[1:]])
    loaders = []
    for kind in args.kinds:
        loaders.append(drive(kind, args.runs, time.time() + 3600 * args.hours, crashers))
        write(loaders, command, args.results)
    print(json.dumps(loaders, indent=1))


if __name__ == "__main__":
    main()
