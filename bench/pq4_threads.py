"""What a second thread gives a batch: IVFIndex(dtype="pq4") against faiss
IndexIVFPQFastScan + IndexRefineFlat, batch 256 on 1 and on 2 threads, wall time, the four
calls interleaved, median of --reps rounds:

    python bench/pq4_threads.py [--data clustered|stdlib|FILE.npy] [--n 100000] [--m 96]
                                [--nlist 256] [--settings 64:8,32:4] [--reps 25]

Prints the build's CPU time on one thread (train on 20,000 rows, add all), then, per
nprobe:rescore setting, each system's QPS on 1 and 2 threads, its gain from the
second thread and ragcore's ratio to faiss on 2 threads. On a machine shared with other work
both systems lose their second core at times (their gains fall together, to ~1x): rerun and
keep the rounds where neither lost it. See BENCHMARKS.md ("IVF with 4-bit PQ").
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from pq4 import load_data
from ragcore import IVFIndex


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--data", default="clustered")
    parser.add_argument("--m", type=int, default=96)
    parser.add_argument("--nlist", type=int, default=256)
    parser.add_argument("--settings", default="64:8,32:4", help="nprobe:rescore pairs")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--reps", type=int, default=25)
    args = parser.parse_args()
    import faiss

    x, q = load_data(args)
    d = x.shape[1]
    sample = x[np.random.default_rng(0).permutation(len(x))[:20_000]]
    # Built on one thread, timed in CPU seconds (what other load on the machine disturbs least).
    faiss.omp_set_num_threads(1)
    ivf = IVFIndex(d, args.nlist, "ip", "pq4", m=args.m)
    theirs = faiss.IndexRefineFlat(faiss.IndexIVFPQFastScan(
        faiss.IndexFlatL2(d), d, args.nlist, args.m, 4, faiss.METRIC_INNER_PRODUCT))
    steps = {"ragcore train": lambda: ivf.train(sample, n_threads=1),
             "ragcore add": lambda: ivf.add(x, n_threads=1),
             "faiss train": lambda: theirs.train(sample), "faiss add": lambda: theirs.add(x)}
    cpu = {}
    for name, step in steps.items():
        t = time.process_time()
        step()
        cpu[name] = time.process_time() - t
    print("build on one thread, CPU s: " + ", ".join(f"{name} {s:.2f}" for name, s in cpu.items()))
    batch = np.ascontiguousarray(np.resize(q, (256, d)))
    print(f"data {args.data}: n={len(x)}, d={d}, batch 256, load {os.getloadavg()[0]:.1f}")
    for setting in args.settings.split(","):
        nprobe, rescore = (int(v) for v in setting.split(":"))
        params = faiss.IndexRefineSearchParameters(
            k_factor=rescore, base_index_params=faiss.SearchParametersIVF(nprobe=nprobe))

        def faiss_on(threads, params=params):
            faiss.omp_set_num_threads(threads)
            theirs.search(batch, 10, params=params)

        calls = {"ragcore 1": lambda: ivf.search(batch, 10, nprobe=nprobe, rescore=rescore, n_threads=1),
                 "ragcore 2": lambda: ivf.search(batch, 10, nprobe=nprobe, rescore=rescore, n_threads=2),
                 "faiss 1": lambda: faiss_on(1), "faiss 2": lambda: faiss_on(2)}
        times = {name: [] for name in calls}
        for _ in range(args.reps):
            for name, call in calls.items():
                t = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - t)
        med = {name: float(np.median(t)) for name, t in times.items()}
        print(f"nprobe {nprobe}, rescore {rescore}: " +
              ", ".join(f"{name} thread(s) {256 / t:,.0f} QPS" for name, t in med.items()) +
              f"; gain from the second thread: ragcore {med['ragcore 1'] / med['ragcore 2']:.2f}x, "
              f"faiss {med['faiss 1'] / med['faiss 2']:.2f}x; ragcore / faiss on 2 threads "
              f"{med['faiss 2'] / med['ragcore 2']:.2f}x", flush=True)
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
