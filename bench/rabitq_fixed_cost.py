"""Per-query fixed cost of IVFIndex(dtype="rabitq"): a one-query search that probes one
short list, so the rotation of the query, the coarse step and the call dominate.

    python bench/rabitq_fixed_cost.py [--d 384] [--nlist 128] [--per-list 8] [--calls 3000]

Prints the median thread CPU time (time.thread_time) and wall time of one search call
(k = 10, nprobe = 1, one thread), and of the query rotation alone where this build has
the structured one. Run it under two builds (before / after) to compare.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from ragcore import IVFIndex, _core


def median_us(fn, calls):
    cpu, wall = [], []
    for _ in range(calls):
        t, p = time.perf_counter(), time.thread_time()
        fn()
        cpu.append(time.thread_time() - p)
        wall.append(time.perf_counter() - t)
    return 1e6 * float(np.median(cpu)), 1e6 * float(np.median(wall))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--nlist", type=int, default=128)
    parser.add_argument("--per-list", type=int, default=8)
    parser.add_argument("--bits", type=int, default=1)
    parser.add_argument("--calls", type=int, default=3000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.nlist * args.per_list, args.d)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    index = IVFIndex(args.d, args.nlist, "ip", "rabitq", bits=args.bits, max_iter=3)
    index.train(x)
    index.add(x)
    queries = [x[i : i + 1].copy() for i in range(64)]
    state = {"i": 0}

    def one():
        state["i"] = (state["i"] + 1) % len(queries)
        index.search(queries[state["i"]], 10, nprobe=1, n_threads=1)

    print(f"d={args.d}, nlist={args.nlist}, {args.per_list} rows per list, bits={args.bits}, "
          f"load {os.getloadavg()[0]:.1f}")
    for rep in range(3):
        cpu, wall = median_us(one, args.calls)
        print(f"search (k=10, nprobe=1): {cpu:.2f} us CPU, {wall:.2f} us wall")
    if hasattr(_core, "rabitq_fht_rotate") and index._storage.rotation.dtype == np.uint8:
        q = queries[0]
        cpu, wall = median_us(lambda: _core.rabitq_fht_rotate(q, index._storage.rotation, n_threads=1),
                              args.calls)
        print(f"FHT-Kac rotation of one query (Python call included): {cpu:.2f} us CPU")
    dense = index.rotation
    scores = np.empty(dense.shape[0], np.float32)
    cpu, _ = median_us(lambda: np.dot(dense, queries[0][0], out=scores), args.calls)
    print(f"dense {dense.shape[0]} x {args.d} mat-vec (numpy, for scale): {cpu:.2f} us CPU")
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
