"""PQIndex (4-bit fast scan, re-scored exactly) against faiss IndexPQFastScan wrapped in
IndexRefineFlat (the same technique: 4-bit PQ scanned with SIMD look-ups, then exact
re-ranking of k_factor * k candidates), side by side on the same data and queries.

    python bench/pq4.py [--n 50000] [--d 384] [--m 48,96] [--rescore 1,2,4,8,16]

Prints recall@10 against FlatIndex, QPS at batch 1 (one thread) and at batch 256 (all
threads), and the bytes scanned per vector, as a markdown table.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from ragcore import FlatIndex, PQIndex
from ragcore.cli.bench import data


def qps(fn, queries, batch, calls):
    times = []
    for c in range(calls):
        start = (c * batch) % max(1, len(queries) - batch + 1)
        block = queries[start : start + batch]
        t = time.perf_counter()
        fn(block)
        times.append(time.perf_counter() - t)
    return batch / float(np.median(times))


def recall(ids, truth):
    return float(np.mean([len(set(a) & set(b)) / truth.shape[1] for a, b in zip(ids.tolist(), truth.tolist())]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--m", default="48,96")
    parser.add_argument("--rescore", default="1,2,4,8,16")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--b1-calls", type=int, default=60)
    args = parser.parse_args()
    import faiss

    threads = os.cpu_count() or 1
    x, q = data.clustered(args.n, args.d, 0, args.queries)
    flat = FlatIndex(args.d)
    flat.add(x)
    truth = flat.search(q, 10).ids
    sample = x[np.random.default_rng(0).permutation(len(x))[:20_000]]
    print(f"n={args.n}, d={args.d}, clustered, {len(q)} queries, {threads} threads, "
          f"load {os.getloadavg()[0]:.1f}")
    print("| system | m | bytes scanned / vector | rescore | recall@10 | QPS b1 | QPS b256 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for m in (int(v) for v in args.m.split(",")):
        ours = PQIndex(args.d, m)
        t = time.perf_counter()
        ours.train(sample)
        ours.add(x)
        build_ours = time.perf_counter() - t
        faiss.omp_set_num_threads(threads)
        t = time.perf_counter()
        base = faiss.IndexPQFastScan(args.d, m, 4, faiss.METRIC_INNER_PRODUCT)
        theirs = faiss.IndexRefineFlat(base)
        theirs.train(sample)
        theirs.add(x)
        build_theirs = time.perf_counter() - t
        for r in (int(v) for v in args.rescore.split(",")):
            def ours_fn(block, threads_=1):
                return ours.search(block, 10, rescore=r, n_threads=threads_).ids

            params = faiss.IndexRefineSearchParameters(k_factor=r)

            def theirs_fn(block):
                return theirs.search(block, 10, params=params)[1]

            rec_o = recall(ours.search(q, 10, rescore=r).ids, truth)
            rec_t = recall(theirs_fn(q), truth)
            faiss.omp_set_num_threads(1)
            b1_o, b1_t = qps(ours_fn, q, 1, args.b1_calls), qps(theirs_fn, q, 1, args.b1_calls)
            faiss.omp_set_num_threads(threads)
            b256_o = qps(lambda b: ours_fn(b, 0), q, 256, 3)
            b256_t = qps(theirs_fn, q, 256, 3)
            print(f"| ragcore PQIndex | {m} | {(m + 1) // 2} | {r} | {rec_o:.3f} | {b1_o:,.0f} | {b256_o:,.0f} |")
            print(f"| faiss PQFastScan+RefineFlat | {m} | {(m + 1) // 2} | {r} | {rec_t:.3f} | {b1_t:,.0f} | {b256_t:,.0f} |", flush=True)
        print(f"build (train + add): ragcore {build_ours:.1f} s, faiss {build_theirs:.1f} s")
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
