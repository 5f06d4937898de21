"""IVFIndex(dtype="rabitq") against faiss IndexIVFRaBitQ and IndexIVFRaBitQFastScan, both
wrapped in IndexRefineFlat (exact re-ranking of k_factor * k candidates, as ragcore returns
exact scores), at equal nlist and nprobe, on the same data and queries, interleaved.

    python bench/rabitq.py [--n 50000] [--d 384] [--nlist 256] [--nprobe 8,16,32]
                           [--bits 1,2,3,4] [--k-factor 2,4,8] [--data clustered|stdlib]
                           [--cache clustered.npy]

Prints recall@10 against FlatIndex, QPS at batch 1 (one thread) and at batch 256 (all
threads), and bytes scanned per vector (codes + per-vector factors) and kept (that, the
exact float32 row, the id: ragcore's bytes_per_vector, faiss's code_size + its
IndexRefineFlat copy + id), as a markdown table.
ragcore re-scores with its error bound (rescore="bound", epsilon 1.9); faiss with
k_factor. At 1 bit ragcore runs twice, interleaved: its fast scan (4-bit table look-ups,
the default) and its bit-plane kernel (``fast_scan = False``, what bits > 1 use). --data stdlib uses the cached stdlib paragraph embeddings (held-out texts as
queries; computed with the bundled encoder on the first run and cached, never downloaded).
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np

from ragcore import FlatIndex, IVFIndex

from _clustered_cache import clustered
from _faiss_refine import refine_flat_on, shared_rows


def qps(fn, queries, batch, calls):
    """Queries per second of fn on consecutive blocks (median of calls); CPU s too."""
    walls, cpus = [], []
    for c in range(calls):
        start = (c * batch) % max(1, len(queries) - batch + 1)
        block = queries[start : start + batch]
        t, p = time.perf_counter(), time.process_time()
        fn(block)
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - p)
    return batch / float(np.median(walls)), batch / float(np.median(cpus))


def recall(ids, truth):
    return float(np.mean([len(set(a) & set(b)) / truth.shape[1] for a, b in zip(ids.tolist(), truth.tolist())]))


def load_data(kind: str, n: int, d: int, nq: int, cache: str | None):
    if kind == "clustered":
        return clustered(n, d, nq, cache)
    from ragcore.cli.bench.stdlib_vectors import stdlib_embeddings
    return stdlib_embeddings(n, nq, 0)


def faiss_index(faiss, kind, nlist, bits, exact, sample, x):
    d = x.shape[1]
    quantizer = faiss.IndexFlatL2(d)
    if kind == "IVFRaBitQ":
        base = faiss.IndexIVFRaBitQ(quantizer, d, nlist, faiss.METRIC_INNER_PRODUCT, True, bits)
    else:
        base = faiss.IndexIVFRaBitQFastScan(quantizer, d, nlist, faiss.METRIC_INNER_PRODUCT, 32,
                                            True, bits)
    # the caller keeps all three alive; rows: one exact copy shared by every faiss peer
    return refine_flat_on(faiss, base, exact, sample, x), base, quantizer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--nlist", type=int, default=256)
    parser.add_argument("--nprobe", default="8,16,32")
    parser.add_argument("--bits", default="1,2,3,4")
    parser.add_argument("--k-factor", default="2,4,8")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--cache", help="clustered data: read from this .npy (written on the first run)")
    parser.add_argument("--b1-calls", type=int, default=60)
    parser.add_argument("--data", choices=("clustered", "stdlib"), default="clustered")
    parser.add_argument("--peers", default="IVFRaBitQ,IVFRaBitQFastScan")
    args = parser.parse_args()
    import faiss

    threads = os.cpu_count() or 1
    x, q = load_data(args.data, args.n, args.d, args.queries, args.cache)
    n, d = x.shape
    flat = FlatIndex(d)
    flat.add(x)
    truth = flat.search(q, 10).ids
    del flat  # 4 * d bytes a row: at 1M, 1.5 GB not needed once the truth is known
    sample = x[np.random.default_rng(0).permutation(n)[:min(n, 40 * args.nlist)]]
    print(f"n={n}, d={d}, {args.data}, {len(q)} queries, nlist={args.nlist}, {threads} threads, "
          f"load {os.getloadavg()[0]:.1f}; float32 row = {4 * d} bytes")
    print("| system | bits | bytes scanned / vector | kept | nprobe | rescore | recall@10 | QPS b1 | "
          "QPS b1 (CPU s) | QPS b256 |")
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|---:|")
    t = time.perf_counter()
    exact = shared_rows(faiss, x, faiss.METRIC_INNER_PRODUCT)
    builds = [f"faiss's exact rows (one IndexFlat shared by all its peers) {time.perf_counter() - t:.1f} s"]
    print(f"build: {builds[-1]}", flush=True)  # each build as it ends: a run cut short keeps them
    for bits in (int(v) for v in args.bits.split(",")):
        rows = refine = base = quantizer = None  # the previous bits' faiss codes, freed first
        t = time.perf_counter()
        ours = IVFIndex(d, args.nlist, "ip", "rabitq", bits=bits)
        ours.train(sample)
        ours.add(x)
        builds.append(f"ragcore {bits} bits {time.perf_counter() - t:.1f} s")
        print(f"build: {builds[-1]}", flush=True)
        peers = {}
        faiss.omp_set_num_threads(threads)
        for kind in args.peers.split(","):
            t = time.perf_counter()
            refine, base, quantizer = faiss_index(faiss, kind, args.nlist, bits, exact, sample, x)
            builds.append(f"faiss {kind} {bits} bits {time.perf_counter() - t:.1f} s")
            print(f"build: {builds[-1]}", flush=True)
            peers[kind] = (refine, base, quantizer)
        kernels = [True, False] if ours.fast_scan else [False]  # 1 bit: both scan kernels
        sizes = {}
        for fast in kernels:
            ours.fast_scan = fast
            sizes[fast] = (ours.bytes_per_vector()["scanned"], ours.bytes_per_vector()["kept"])
        for nprobe in (int(v) for v in args.nprobe.split(",")):
            def ours_fn(block, n_threads=1, fast=kernels[0]):
                ours.fast_scan = fast
                return ours.search(block, 10, nprobe=nprobe, n_threads=n_threads).ids

            rows = []
            for fast in kernels:
                name = "ragcore IVF rabitq" + (" (bit-plane kernel)" if len(kernels) > 1 and not fast else "")
                rows.append((name, sizes[fast], "bound", lambda b, f=fast: ours_fn(b, 1, f),
                             lambda b, f=fast: ours_fn(b, 0, f)))
            for kind, (refine, base, _) in peers.items():
                for kf in (int(v) for v in args.k_factor.split(",")):
                    params = faiss.IndexRefineSearchParameters(
                        k_factor=kf, base_index_params=faiss.SearchParametersIVF(nprobe=nprobe))

                    def theirs_fn(block, refine=refine, params=params):
                        return refine.search(block, 10, params=params)[1]

                    kept_theirs = base.code_size + 4 * d + 8
                    rows.append((f"faiss {kind}+RefineFlat", (base.code_size, kept_theirs),
                                 f"k_factor {kf}", theirs_fn, theirs_fn))
            results = {name + r: [recall(fn(q), truth)] for name, _, r, fn, _ in rows}
            faiss.omp_set_num_threads(1)
            for rep in range(3):  # interleaved repeats, median of the medians
                for name, _, r, fn, _ in rows:
                    results[name + r].append(qps(fn, q, 1, args.b1_calls // 3))
            faiss.omp_set_num_threads(threads)
            for name, _, r, _, fn_all in rows:
                results[name + r].append(qps(fn_all, q, 256, 3)[0])
            for name, size, r, _, _ in rows:
                res = results[name + r]
                b1 = float(np.median([w for w, _ in res[1:4]]))
                b1_cpu = float(np.median([c for _, c in res[1:4]]))
                print(f"| {name} | {bits} | {size[0]} | {size[1]} | {nprobe} | {r} | {res[0]:.3f} | {b1:,.0f} | "
                      f"{b1_cpu:,.0f} | {res[4]:,.0f} |", flush=True)
    print("build (train + add): " + "; ".join(builds))
    print(f"load after: {os.getloadavg()[0]:.1f}; peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")


if __name__ == "__main__":
    main()
