"""Fixed cost of one query per call on small PQIndex / IVFIndex pq4 / rabitq indexes: the
one-query native path (a contiguous float32 row, plain int arguments) against the full
Python path of the same index and query (taken when n_threads is a numpy integer).

    python bench/codes_one_query.py [--d 384] [--n 2000] [--calls 2000] [--repeats 5]

Prints microseconds of CPU time (time.process_time) per call, median of interleaved
repeats, as a markdown table. Not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import ragcore


def per_call_us(search, queries, calls: int) -> float:
    start = time.process_time()
    for i in range(calls):
        search(queries[i % len(queries)])
    return (time.process_time() - start) / calls * 1e6


def indexes(d: int, n: int):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, d)).astype(np.float32)
    m = d // 8
    pq = ragcore.PQIndex(d, m)
    ivf_pq4 = ragcore.IVFIndex(d, 64, dtype="pq4", m=m)
    rabitq1 = ragcore.IVFIndex(d, 64, dtype="rabitq", bits=1)
    for index in (pq, ivf_pq4, rabitq1):
        index.train(x)
        index.add(x)
    return {f"PQIndex m={m}": (pq, {}), f"IVFIndex pq4 m={m}, nprobe=1": (ivf_pq4, {"nprobe": 1}),
            "IVFIndex rabitq bits=1, nprobe=1": (rabitq1, {"nprobe": 1})}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    queries = np.random.default_rng(1).standard_normal((256, args.d)).astype(np.float32)
    print("| index | one-query path (us) | full path (us) | saved (us) |")
    print("|---|---:|---:|---:|")
    for name, (index, kwargs) in indexes(args.d, args.n).items():
        paths = {"row": 1, "full": np.int64(1)}  # a numpy n_threads takes the full path
        times = {p: [] for p in paths}
        for _ in range(args.repeats):  # interleaved: both paths see the same machine load
            for p, threads in paths.items():
                times[p].append(per_call_us(
                    lambda q, t=threads: index.search(q, 10, n_threads=t, **kwargs),
                    queries, args.calls))
        row, full = float(np.median(times["row"])), float(np.median(times["full"]))
        print(f"| {name} | {row:.1f} | {full:.1f} | {full - row:.1f} |", flush=True)


if __name__ == "__main__":
    main()
