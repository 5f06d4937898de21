"""Where HNSWIndex's filtered search should score the allowed set exactly instead of walking.

For each corpus size and allowed fraction: CPU seconds per query (one thread, process
time, so a shared machine's load does not enter) of the filtered walk and of the exact
scoring of the allowed set, and the walk's recall@10 against the filtered exact top-10.
Prints the allowed count where the exact path stops being faster, and the factor c of
the rule ``exact when allowed <= c * sqrt(ef * M * n)`` (ragcore.dense.hnsw) it implies.

    python bench/calibrate/hnsw_filter.py [--n 20000,60000] [--d 128] [--ef 64]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ragcore import FlatIndex, HNSWIndex
from ragcore.cli.bench import data
from ragcore.dense import hnsw

FRACTIONS = (0.002, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8)


def per_query_seconds(index, queries, ef, allowed, factor):
    hnsw.EXACT_FILTER_FACTOR = factor
    index.search(queries[:5], 10, ef=ef, allow=allowed, n_threads=1)  # warm
    start = time.process_time()
    hits = index.search(queries, 10, ef=ef, allow=allowed, n_threads=1)
    return (time.process_time() - start) / len(queries), hits, index.last_search["exact"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", default="20000,60000")
    parser.add_argument("--d", type=int, default=128)
    parser.add_argument("--ef", type=int, default=64)
    parser.add_argument("--M", type=int, default=16)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print("| n | allowed | fraction | walk us/query | exact us/query | walk recall@10 |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in (int(v) for v in args.n.split(",")):
        x, q = data.clustered(n, args.d, 0, args.queries)
        index = HNSWIndex(args.d, "ip", M=args.M, ef_construction=100)
        index.add(x)
        flat = FlatIndex(args.d)
        flat.add(x)
        crossover = None
        for fraction in FRACTIONS:
            allowed = np.flatnonzero(rng.random(n) < fraction)
            walk_s, walk_hits, walk_exact = per_query_seconds(index, q, args.ef, allowed, 0.0)
            exact_s, _, exact_exact = per_query_seconds(index, q, args.ef, allowed, 1e12)
            assert exact_exact and not walk_exact
            truth = flat.search(q, 10, allow=allowed).ids
            recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(walk_hits.ids.tolist(), truth.tolist())])
            print(f"| {n:,} | {len(allowed):,} | {fraction} | {walk_s * 1e6:,.0f} | {exact_s * 1e6:,.0f} | {recall:.3f} |", flush=True)
            if exact_s < walk_s:
                crossover = len(allowed)
        if crossover:
            c = crossover / np.sqrt(args.ef * args.M * n)
            print(f"n={n:,}: exact is faster up to {crossover:,} allowed vectors -> c = {c:.2f}")
    hnsw.EXACT_FILTER_FACTOR = 1.0


if __name__ == "__main__":
    main()
