"""Sharded search on Ray: ShardedIndex with 1 and 2 FlatIndex shards against one FlatIndex.

On one small machine this measures what sharding costs (Ray task dispatch, moving queries
and results through the object store, the merge), not what it gains: the shards share the
same cores and memory bandwidth as the single index. Scale-out needs shards on separate
machines, which this script does not have.

Setup: seeded random unit-norm float32 vectors (inner product), a local Ray started here
with num_cpus = the machine's cores. Systems, all with the same total threads:
  - FlatIndex       in this process, n_threads = cores;
  - sharded x1      one actor searching with n_threads = cores;
  - sharded x2      two actors searching with n_threads = cores / 2 each.
The actors reserve num_cpus=0 (threads are passed to search instead), so that both
sharded indexes can live side by side and be timed interleaved.
For each batch size: one warm-up call, then timed calls until >= --seconds have passed
(at least 5); per-call latency p50 / p95 and QPS = queries / total time. The sharded
answers are checked to equal the single index's (ids and scores) before timing.
OPENBLAS_CORETYPE is left as the environment sets it.

Run:  .venv/bin/python bench/sharded.py                (the full run)
      .venv/bin/python bench/sharded.py --n 20000 --seconds 0.5   (smoke run)
Writes bench/results/sharded.json (a ragcore-bench/1 file: BENCHMARKS.md renders it).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

def unit_vectors(n: int, d: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, d), dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def timed(fn, queries: np.ndarray, k: int, seconds: float) -> dict:
    fn(queries, k)  # warm-up
    times = []
    start = time.perf_counter()
    while len(times) < 5 or time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        fn(queries, k)
        times.append(time.perf_counter() - t0)
    ms = np.array(times) * 1e3
    return {"calls": len(times), "p50_ms": float(np.percentile(ms, 50)),
            "p95_ms": float(np.percentile(ms, 95)),
            "qps": len(queries) * len(times) / (float(ms.sum()) / 1e3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000, help="corpus vectors")
    parser.add_argument("--d", type=int, default=128, help="dimensions")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 32, 256])
    parser.add_argument("--seconds", type=float, default=3.0, help="timed seconds per cell")
    args = parser.parse_args()

    import ray

    from ragcore import FlatIndex
    from ragcore.distributed import ShardedIndex

    cores = os.cpu_count() or 1
    x = unit_vectors(args.n, args.d, seed=0)
    queries = unit_vectors(max(args.batches), args.d, seed=1)
    ids = np.arange(args.n, dtype=np.int64)
    single = FlatIndex(args.d)
    single.add(x, ids)

    ray.init(num_cpus=cores, include_dashboard=False, logging_level="ERROR",
             log_to_driver=False)
    load_before = os.getloadavg()
    systems = {"FlatIndex": lambda q, k: single.search(q, k, n_threads=cores)}
    sharded = {}
    for n_shards in (1, 2):
        t0 = time.perf_counter()
        sharded[n_shards] = ShardedIndex.build(lambda: FlatIndex(args.d), x, ids, n_shards,
                                               num_cpus=0)
        build_s = time.perf_counter() - t0
        print(f"sharded x{n_shards}: built in {build_s:.1f} s, sizes "
              f"{sharded[n_shards].shard_sizes()}")
        got, want = sharded[n_shards].search(queries, args.k), single.search(queries, args.k)
        if not (np.array_equal(got.ids, want.ids) and np.array_equal(got.scores, want.scores)):
            raise SystemExit(f"sharded x{n_shards} does not answer as the single index")
        threads = max(1, cores // n_shards)
        systems[f"sharded x{n_shards}"] = (
            lambda q, k, index=sharded[n_shards], t=threads: index.search(q, k, n_threads=t))

    rows = []
    for batch in args.batches:
        q = queries[:batch]
        for name, fn in systems.items():  # interleaved per batch: drifts hit every system
            cell = {"system": name, "batch": batch, **timed(fn, q, args.k, args.seconds)}
            rows.append(cell)
            print(f"batch {batch:4d}  {name:12s} p50 {cell['p50_ms']:8.3f} ms  "
                  f"p95 {cell['p95_ms']:8.3f} ms  {cell['qps']:10.0f} QPS")
    load_after = os.getloadavg()
    for index in sharded.values():
        index.close()
    ray.shutdown()

    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from results_file import table, write_section

    base = {r["batch"]: r["qps"] for r in rows if r["system"] == "FlatIndex"}
    for r in rows:
        r["ratio"] = r["qps"] / base[r["batch"]]
    columns = [{"key": "batch", "label": "batch"}, {"key": "system", "label": "system"},
               {"key": "p50_ms", "label": "p50 ms", "format": ".3f"},
               {"key": "p95_ms", "label": "p95 ms", "format": ".3f"},
               {"key": "qps", "label": "QPS", "format": ",.0f"},
               {"key": "ratio", "label": "QPS / FlatIndex", "format": ".2f"}]
    path = write_section(
        "sharded", "Sharded search on Ray (one machine)",
        "python bench/sharded.py " + " ".join(sys.argv[1:]), threads=cores, order=80,
        intro=(f"N = {args.n:,}, d = {args.d}, k = {args.k}, inner product, local Ray "
               f"{ray.__version__}. The overhead of sharding, not scale-out: all shards share "
               "these cores. ShardedIndex with 1 and 2 FlatIndex shards against one FlatIndex, "
               "the same total threads."),
        tables=[table("", columns, rows, [f"1-minute load average before / after: "
                                          f"{load_before[0]:.2f} / {load_after[0]:.2f}."])],
        peers=("ray",))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
