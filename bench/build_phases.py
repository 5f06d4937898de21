"""Where an IVF build's time goes: each phase of IVFIndex pq4 and IVFIndex rabitq next to
faiss's IndexIVFPQFastScan and IndexIVFRaBitQ, on the same data, in one run:

    python bench/build_phases.py [--data stdlib|clustered] [--n 100000] [--nlist 256]
                                 [--m 96] [--threads 1] [--cache clustered.npy]
                                 [--systems pq4,rabitq] [--reps 1]

Phases (ragcore through the calls IVFIndex.train / add make; faiss through its public
objects): coarse k-means on the training sample (each with its index's own iterations:
ragcore up to 25 with a tolerance, faiss's IndexIVF 10: cp.niter), PQ codebooks, assignment of the added rows
to their lists, encoding (PQ codes or rotation + RaBitQ codes), and the whole train and add
of the index. On one thread (--threads 1) the times are process CPU seconds
(time.process_time: little disturbed by other load on the machine), else wall seconds.
The clustered set is read from --cache (its first --n rows: a slice of the 1M file).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from ragcore import IVFIndex, _core
from ragcore.dense import _pq4_codes
from ragcore.dense._kmeans_sample import kmeans_sample
from ragcore.dense._rabitq import rotate, rotation_signs


def load(args):
    if args.data == "stdlib":
        from ragcore.cli.bench.stdlib_vectors import stdlib_embeddings

        return stdlib_embeddings(args.n, 300, 0)[0]
    rows = np.load(args.cache, mmap_mode="r")
    return np.array(rows[: args.n])


def timed(clock, fn):
    t = clock()
    out = fn()
    return clock() - t, out


def ragcore_phases(x, sample, args, clock, kind):
    th = args.threads
    out = {}
    out["coarse k-means"], (centroids, _, iterations, _) = timed(clock, lambda: _core.kmeans(
        kmeans_sample(sample, args.nlist, 0), args.nlist, max_iter=25, seed=0,
        init=_core.KMeansInit.KMeansPlusPlus, n_threads=th, spherical=True))
    out["coarse iterations"] = float(iterations)  # IVFIndex's default max_iter=25, tol 1e-4
    out["assign"], (labels, _) = timed(clock, lambda: _core.assign_nearest(x, centroids, n_threads=th))
    if kind == "pq4":
        out["PQ codebooks"], books = timed(clock, lambda: _pq4_codes.train_codebooks(
            sample, args.m, 0, th))
        out["encode"], _ = timed(clock, lambda: _pq4_codes.encode(x, books, th))
        index = IVFIndex(x.shape[1], args.nlist, "ip", "pq4", m=args.m)
    else:
        signs = rotation_signs(x.shape[1], 0)
        rot_c = rotate(centroids, signs)

        def encode():
            rotated = rotate(x - centroids[labels], signs, th)
            return _core.rabitq_encode(rotated, rot_c, np.ascontiguousarray(labels), bits=args.bits,
                                       n_threads=th)

        out["encode"], _ = timed(clock, encode)
        index = IVFIndex(x.shape[1], args.nlist, "ip", "rabitq", bits=args.bits)
    out["train (whole)"], _ = timed(clock, lambda: index.train(sample, n_threads=th))
    out["add (whole)"], _ = timed(clock, lambda: index.add(x, n_threads=th))
    return out


def faiss_phases(faiss, x, sample, args, clock, kind):
    d = x.shape[1]
    out = {}
    if kind == "pq4":
        index = faiss.IndexIVFPQFastScan(faiss.IndexFlatL2(d), d, args.nlist, args.m, 4,
                                         faiss.METRIC_INNER_PRODUCT)
    else:
        index = faiss.IndexIVFRaBitQ(faiss.IndexFlatL2(d), d, args.nlist,
                                     faiss.METRIC_INNER_PRODUCT)
    coarse = faiss.IndexFlatL2(d)
    clus = faiss.Clustering(d, args.nlist, index.cp)  # the index's own: 10 iterations, spherical
    out["coarse k-means"], _ = timed(clock, lambda: clus.train(sample, coarse))
    out["coarse iterations"] = float(index.cp.niter)
    out["assign"], _ = timed(clock, lambda: coarse.search(x, 1))
    out["train (whole)"], _ = timed(clock, lambda: index.train(sample))
    out["add (whole)"], _ = timed(clock, lambda: index.add(x))
    if kind == "pq4":  # faiss trains the codebooks on the residuals of the sample
        out["PQ codebooks"] = out["train (whole)"] - out["coarse k-means"]
    out["encode"] = out["add (whole)"] - out["assign"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="stdlib")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--nlist", type=int, default=256)
    parser.add_argument("--m", type=int, default=96)
    parser.add_argument("--bits", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--sample", type=int, default=0, help="rows to train on (default "
                        "max(20,000, 40 x nlist))")
    parser.add_argument("--cache", help="clustered data: the .npy file (bench/_clustered_cache.py)")
    parser.add_argument("--systems", default="pq4,rabitq")
    parser.add_argument("--reps", type=int, default=1)
    args = parser.parse_args()
    import faiss

    faiss.omp_set_num_threads(args.threads if args.threads > 0 else os.cpu_count())
    clock = time.process_time if args.threads == 1 else time.perf_counter
    x = np.ascontiguousarray(load(args), dtype=np.float32)
    size = args.sample or max(20_000, 40 * args.nlist)
    sample = np.ascontiguousarray(x[np.random.default_rng(0).permutation(len(x))[:size]])
    unit = "CPU s, 1 thread" if args.threads == 1 else f"wall s, {args.threads or 'all'} threads"
    print(f"data {args.data}: n={len(x)}, d={x.shape[1]}, sample {len(sample)}, nlist "
          f"{args.nlist}, m {args.m}, bits {args.bits}; {unit}; load {os.getloadavg()[0]:.1f}",
          flush=True)
    for kind in args.systems.split(","):
        runs = {"ragcore": [], "faiss": []}
        for _ in range(args.reps):  # the two systems take turns
            runs["ragcore"].append(ragcore_phases(x, sample, args, clock, kind))
            runs["faiss"].append(faiss_phases(faiss, x, sample, args, clock, kind))
        phases = list(runs["ragcore"][0])
        print(f"\n{kind}: median of {args.reps}\n\n| phase | ragcore | faiss | ragcore / faiss |\n"
              "|---|---:|---:|---:|")
        for phase in phases:
            ours = float(np.median([r[phase] for r in runs["ragcore"]]))
            theirs = float(np.median([r[phase] for r in runs["faiss"]]))
            print(f"| {phase} | {ours:.2f} | {theirs:.2f} | {ours / max(theirs, 1e-9):.2f}x |",
                  flush=True)
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
