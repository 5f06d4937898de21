"""The long fuzz run of the index loaders and of Collection (tests/fuzz runs them briefly).

    python bench/fuzz.py --runs 1000000 [--kinds flat ivf bm25 hnsw collection] [--hours H]
                         [--seed S]

Index kinds (tests/fuzz/mutator.py): a valid index file mutated with its checksum
recomputed must be refused with IndexFileError or load into an index that keeps the
contracts. The collection kind (tests/fuzz/collection_mutator.py, collection_oracle.py):
a valid collection changed by valid SQL, by stale, swapped, deleted or mutated index
files, or by an edited indexes.json, must be refused with a ragcore error naming it, or
answer as its database says.

Each kind is fuzzed in its own worker process, one at a time (one core), so that a crash
(a signal) is caught: the input that caused it is copied to bench/results/fuzz-crashers/
and the worker is restarted with the next seed. Inputs that broke a contract without
crashing are kept there too. Each run is appended to the runs that bench/results/fuzz.json
records (a ragcore-bench/1 file: BENCHMARKS.md, "Loader and collection fuzzing"), whose table
adds up every run recorded there, so executions count across sessions; a run's seeds follow
the earlier runs' unless --seed says otherwise. The file is rewritten after every worker, so a
run that is stopped keeps the counts of its finished workers. bench/run.py's fuzz task runs
the same loop for its grid's time.
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
KINDS = ("flat", "ivf", "bm25", "hnsw", "collection")
_STATUS_EVERY = 100
_BATCH = {"collection": 2_000}  # executions per worker process (default 200,000)
_COUNTS = ("executions", "loaded", "refused", "findings", "crashes", "harness_errors", "seconds")


class _IndexFiles:
    """An index loader's harness: inputs are file contents."""

    def __init__(self, kind: str, directory: str):
        import mutator

        self.kind, self.directory, self.mutator = kind, directory, mutator
        self.seeds = mutator.seed_files(kind, directory)
        self.broken = mutator.ContractBroken

    def make(self, i: int, rng):
        return self.mutator.mutate(self.seeds[i % len(self.seeds)], rng)

    def run(self, data) -> str:
        loaded = self.mutator.run_one(self.kind, data, self.directory)
        return "kept" if loaded else "IndexFileError"

    def keep(self, data, name: str, why: str) -> None:
        with open(name + ".rc", "wb") as f:
            f.write(data)
        with open(name + ".txt", "w") as f:
            f.write(f"{why}\n{self.mutator.describe(data)}\n")


class _Collections:
    """Collection's harness: an input is a mutated copy of a seed collection's directory
    (kept as 'input' while it runs, so that a crash leaves it for the driver)."""

    def __init__(self, directory: str):
        import collection_mutator
        import collection_oracle

        self.mutator, self.oracle = collection_mutator, collection_oracle
        self.directory = directory
        self.seeds = collection_mutator.seed_collections(os.path.join(directory, "seeds"))
        self.broken = collection_oracle.ContractBroken
        self.current = os.path.join(directory, "current")
        self.input = os.path.join(directory, "input")

    def make(self, i: int, rng):
        self.mutator.copy_seed(self.seeds[i % len(self.seeds)], self.current)
        mutation = self.mutator.mutate(self.current, rng)
        self.mutator.copy_seed(self.current, self.input)
        with open(os.path.join(self.input, "mutation.txt"), "w") as f:
            f.write(f"{os.path.basename(self.seeds[i % len(self.seeds)])}: {mutation.what}\n")
        return mutation

    def run(self, mutation) -> str:
        return self.oracle.run_one(self.current, mutation.answers_checked)

    def keep(self, mutation, name: str, why: str) -> None:
        shutil.copytree(self.input, name)
        with open(name + ".txt", "w") as f:
            f.write(f"{why}\n{mutation.what}\n")


def worker(kind: str, seed: int, runs: int, directory: str) -> None:
    """Runs `runs` mutations of `kind`, writing counts to directory/status.json."""
    import numpy as np

    harness = _Collections(directory) if kind == "collection" else _IndexFiles(kind, directory)
    rng = np.random.default_rng(seed)
    counts = {"done": 0, "loaded": 0, "findings": 0, "harness_errors": 0, "outcomes": {}}
    status = os.path.join(directory, "status.json")
    for i in range(runs):
        try:
            data = harness.make(i, rng)
        except Exception as err:  # noqa: BLE001 - the mutator's fault, not ragcore's
            counts["harness_errors"] += 1
            print(f"mutator error: {type(err).__name__}: {err}", file=sys.stderr)
            continue
        try:
            outcome = harness.run(data)
            counts["loaded"] += outcome == "kept"
        except harness.broken as err:
            outcome = "finding"
            counts["findings"] += 1
            harness.keep(data, os.path.join(directory, f"finding-{seed}-{i}"), str(err))
        counts["outcomes"][outcome] = counts["outcomes"].get(outcome, 0) + 1
        counts["done"] += 1
        if counts["done"] % _STATUS_EVERY == 0 or counts["done"] == runs:
            with open(status + ".tmp", "w") as f:
                json.dump(counts, f)
            os.replace(status + ".tmp", status)


def _keep_crash(kind: str, directory: str, crashers: str, seed: int, returncode: int) -> None:
    name = os.path.join(crashers, f"{kind}-crash-{seed}-{returncode}")
    if os.path.isdir(os.path.join(directory, "input")):
        shutil.copytree(os.path.join(directory, "input"), name)
    elif os.path.exists(os.path.join(directory, "current.rc")):
        shutil.copy(os.path.join(directory, "current.rc"), name + ".rc")


def drive(kind: str, runs: int, deadline: float, crashers: str, first_seed: int,
          on_batch=None) -> dict:
    """Runs workers of kind until runs executions or the deadline; returns the counts.
    on_batch(counts so far) is called after each worker (main records them there, so that a
    run stopped early keeps what its finished workers counted)."""
    total = {"kind": kind, "executions": 0, "loaded": 0, "refused": 0, "findings": 0,
             "crashes": 0, "harness_errors": 0, "seconds": 0.0, "outcomes": {},
             "seeds": [first_seed, first_seed]}
    seed, t0 = first_seed, time.time()
    while total["executions"] < runs and time.time() < deadline:
        directory = tempfile.mkdtemp(prefix=f"fuzz-{kind}-", dir="/dev/shm" if
                                     os.path.isdir("/dev/shm") else None)
        batch = min(runs - total["executions"], _BATCH.get(kind, 200_000))
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", kind, "--seed", str(seed),
               "--runs", str(batch), "--dir", directory]
        try:
            proc = subprocess.run(cmd, timeout=max(1.0, deadline - time.time()))
            returncode = proc.returncode
        except subprocess.TimeoutExpired:
            returncode = 0
        counts = {"done": 0, "loaded": 0, "findings": 0, "harness_errors": 0, "outcomes": {}}
        if os.path.exists(os.path.join(directory, "status.json")):
            with open(os.path.join(directory, "status.json")) as f:
                counts = json.load(f)
        if returncode > 0:  # the worker raised: a fault of the harness (its stderr says)
            total["harness_errors"] += 1
            if not counts["done"]:  # it could not start: another worker would not either
                shutil.rmtree(directory, ignore_errors=True)
                break
        if returncode < 0:  # a signal: ragcore crashed; keep the input being loaded
            total["crashes"] += 1
            _keep_crash(kind, directory, crashers, seed, returncode)
        for name in os.listdir(directory):
            if name.startswith("finding-"):
                source, target = os.path.join(directory, name), os.path.join(crashers,
                                                                            f"{kind}-{name}")
                (shutil.copytree if os.path.isdir(source) else shutil.copy)(source, target)
        shutil.rmtree(directory, ignore_errors=True)
        for key in ("loaded", "findings", "harness_errors"):
            total[key] += counts.get(key, 0)
        total["executions"] += counts["done"]
        for outcome, n in counts.get("outcomes", {}).items():
            total["outcomes"][outcome] = total["outcomes"].get(outcome, 0) + n
        total["seeds"][1] = seed
        seed += 1
        print(f"{kind}: {total['executions']} executions, {total['crashes']} crashes, "
              f"{total['findings']} findings", flush=True)
        _summarise(total, t0)
        if on_batch is not None:
            on_batch(total)
    return _summarise(total, t0)


def _summarise(total: dict, t0: float) -> dict:
    total["refused"] = total["executions"] - total["loaded"] - total["findings"]
    total["seconds"] = round(time.time() - t0, 1)
    return total


def recorded(path: str) -> dict:
    """The runs recorded in path (a file of one run, as this script wrote before it kept
    every run, becomes the first)."""
    if not os.path.exists(path):
        return {"runs": []}
    with open(path) as f:
        data = json.load(f)
    if "runs" in data:
        return {"runs": data["runs"]}
    if data.get("tables"):  # a result file of one run, its table rows the loaders
        return {"runs": [{"loaders": data["tables"][0]["rows"]}]}
    return {"runs": [data]}


def totals(runs: list) -> dict:
    """kind -> every count summed over runs, outcomes by name."""
    out = {}
    for run in runs:
        for loader in run.get("loaders", []):
            kind = out.setdefault(loader["kind"], {key: 0 for key in _COUNTS} | {"outcomes": {}})
            for key in _COUNTS:
                kind[key] = round(kind[key] + loader.get(key, 0), 1)
            for outcome, n in loader.get("outcomes", {}).items():
                kind["outcomes"][outcome] = kind["outcomes"].get(outcome, 0) + n
    return out


def first_seed(runs: list, kind: str) -> int:
    """A seed after every seed an earlier run of kind used."""
    used = [loader.get("seeds", [0, 0])[1] for run in runs for loader in run.get("loaders", [])
            if loader["kind"] == kind]
    return max(used) + 1 if used else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1_000_000, help="executions per kind")
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--hours", type=float, default=24.0, help="time limit per kind")
    parser.add_argument("--seed", type=int, default=None,
                        help="first seed (default: after every seed fuzz.json records)")
    parser.add_argument("--results", default=RESULTS, help="the folder fuzz.json is written to")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.seed or 0, args.runs, args.dir)
        return
    crashers = os.path.join(RESULTS, "fuzz-crashers")
    os.makedirs(crashers, exist_ok=True)
    sys.path.insert(0, HERE)
    from tasks.fuzz import write

    command = " ".join(["python", "bench/fuzz.py", *sys.argv[1:]])
    history = recorded(os.path.join(args.results, "fuzz.json"))
    run = {"command": command, "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "loaders": []}
    history["runs"].append(run)
    for kind in args.kinds:
        seed = args.seed if args.seed is not None else first_seed(history["runs"][:-1], kind)

        def record(counts, kind_index=len(run["loaders"])):
            run["loaders"][kind_index:] = [dict(counts)]
            write(history["runs"], command, args.results)

        record(drive(kind, args.runs, time.time() + 3600 * args.hours, crashers, seed,
                     on_batch=record))
    print(json.dumps({"run": run["loaders"], "totals": totals(history["runs"])}, indent=1))


if __name__ == "__main__":
    main()
