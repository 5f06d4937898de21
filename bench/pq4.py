"""4-bit PQ fast scan with exact re-scoring, side by side with faiss, in one run:

- PQIndex against faiss IndexPQFastScan wrapped in IndexRefineFlat;
- IVFIndex(dtype="pq4") against faiss IndexIVFPQFastScan wrapped in IndexRefineFlat;

the same technique on both sides (4-bit codes scanned with SIMD table look-ups, then the
rescore * k best re-ranked with the exact float32 vectors: faiss's k_factor), on the same
data and queries, the calls of the two systems interleaved.

    python bench/pq4.py [--n 100000] [--d 384] [--data clustered|stdlib|FILE.npy]
                        [--m 96] [--rescore 2,4,8] [--nlist 256] [--nprobe 8,16,32]
                        [--skip-flat-pq | --skip-ivf] [--b256-calls 5] [--cache clustered.npy]

Prints markdown tables: recall@10 against FlatIndex; QPS at batch 1 on one thread, from
the median CPU time of a call (time.thread_time, little disturbed by other load on the
machine) and from its median wall time; QPS at batch 256 on one thread (CPU time) and on
all threads (wall time);
bytes scanned and kept per vector. Then, per system, the best batch-1 and batch-256 (one
thread) QPS at recall@10 >= 0.95 and >= 0.99.
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np

from ragcore import FlatIndex, IVFIndex, PQIndex
from ragcore.cli.bench import data

from _clustered_cache import clustered
from _faiss_refine import refine_flat_on, shared_rows


def interleaved_qps(fns, queries, batch, calls, clock):
    """QPS of each function from the median of `calls` calls, the functions taking turns
    on each block of queries (so load changes hit them alike)."""
    times = [[] for _ in fns]
    for c in range(calls):
        start = (c * batch) % max(1, len(queries) - batch + 1)
        block = queries[start : start + batch]
        for j, fn in enumerate(fns):
            t = clock()
            fn(block)
            times[j].append(clock() - t)
    return [batch / float(np.median(t)) for t in times]


def recall(ids, truth):
    return float(np.mean([len(set(a) & set(b)) / truth.shape[1] for a, b in zip(ids.tolist(), truth.tolist())]))


def load_data(args):
    if args.data == "clustered":
        return clustered(args.n, args.d, args.queries, args.cache)
    if args.data == "stdlib":
        from ragcore.cli.bench.stdlib_vectors import stdlib_embeddings

        return stdlib_embeddings(args.n, args.queries, 0)
    return data.from_file(args.data, args.n, 0, args.queries)


def measure(rows, label, params, ours, theirs, q, truth, args, faiss, threads):
    """One table row per system: recall, batch-1 QPS (CPU and wall), batch-256 QPS."""
    rec = [recall(fn(q), truth) for fn in (ours, theirs)]
    faiss.omp_set_num_threads(1)
    one = [lambda b: ours(b, 1), theirs]
    cpu = interleaved_qps(one, q, 1, args.b1_calls, time.thread_time)
    wall = interleaved_qps(one, q, 1, args.b1_calls, time.perf_counter)
    b256_one = interleaved_qps(one, q, 256, args.b256_calls, time.thread_time)
    faiss.omp_set_num_threads(threads)
    b256 = interleaved_qps([lambda b: ours(b, 0), theirs], q, 256, args.b256_calls, time.perf_counter)
    for j, system in enumerate(label):
        rows.append((system, params, rec[j], cpu[j], wall[j], b256_one[j], b256[j]))
        print(f"| {system} | {params} | {rec[j]:.3f} | {cpu[j]:,.0f} | {wall[j]:,.0f} | "
              f"{b256_one[j]:,.0f} | {b256[j]:,.0f} |", flush=True)


def best_at(rows, target, column):
    """Per system, the highest QPS in column (3: batch 1, 5: batch 256 on one thread) of
    the rows at recall >= target, with their parameters."""
    best = {}
    for row in rows:
        system, params, rec, qps = row[0], row[1], row[2], row[column]
        if rec >= target and qps > best.get(system, (0, ""))[0]:
            best[system] = (qps, params)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--data", default="clustered")
    parser.add_argument("--m", default="96")
    parser.add_argument("--rescore", default="2,4,8")
    parser.add_argument("--nlist", type=int, default=256)
    parser.add_argument("--nprobe", default="8,16,32")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--cache", help="clustered data: read from this .npy (written on the first run)")
    parser.add_argument("--b1-calls", type=int, default=100)
    parser.add_argument("--b256-calls", type=int, default=5)
    parser.add_argument("--skip-flat-pq", action="store_true", help="IVF tables only")
    parser.add_argument("--skip-ivf", action="store_true", help="PQIndex tables only")
    args = parser.parse_args()
    import faiss

    threads = os.cpu_count() or 1
    x, q = load_data(args)
    print(f"data: peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB", flush=True)
    n, d = x.shape
    flat = FlatIndex(d)
    flat.add(x)
    truth = flat.search(q, 10).ids
    del flat  # 4 * d bytes a row: at 1M, 1.5 GB not needed once the truth is known
    # 20,000 rows, or 40 per list for the coarse k-means (faiss warns under 39)
    sample = x[np.random.default_rng(0).permutation(n)[:max(20_000, 40 * args.nlist)]]
    t = time.perf_counter()
    exact = shared_rows(faiss, x, faiss.METRIC_INNER_PRODUCT)  # one copy for both faiss peers
    print(f"faiss's exact rows (one IndexFlat shared by its IndexRefineFlat peers): "
          f"{time.perf_counter() - t:.1f} s, not in the faiss build times below")
    print(f"data {args.data}: n={n}, d={d}, {len(q)} queries, {threads} threads, "
          f"load {os.getloadavg()[0]:.1f}")
    header = ("| system | parameters | recall@10 | QPS b1 (CPU time) | QPS b1 (wall) | "
              "QPS b256, 1 thread (CPU time) | QPS b256, all threads (wall) |\n"
              "|---|---|---:|---:|---:|---:|---:|")
    rows = []
    for m in (int(v) for v in args.m.split(",")):
        print(f"\nm = {m}: {(m + 1) // 2} bytes scanned per vector (float32: {4 * d}); kept by "
              f"ragcore: packed codes + codes one per byte + float32 vector + id = "
              f"{(m + 1) // 2 + m + 4 * d + 8}; by faiss: packed codes + float32 vector (its "
              f"IndexRefineFlat copy) + id = {(m + 1) // 2 + 4 * d + 8}")
        faiss.omp_set_num_threads(threads)
        if not args.skip_flat_pq:
            t = time.perf_counter()
            pq = PQIndex(d, m)
            pq.train(sample)
            pq.add(x)
            build = [time.perf_counter() - t]
            t = time.perf_counter()
            fpq_base = faiss.IndexPQFastScan(d, m, 4, faiss.METRIC_INNER_PRODUCT)
            fpq = refine_flat_on(faiss, fpq_base, exact, sample, x)
            build.append(time.perf_counter() - t)
            print(f"build (train + add): PQIndex {build[0]:.1f} s, faiss {build[1]:.1f} s\n\n{header}")
            for r in (int(v) for v in args.rescore.split(",")):
                params = faiss.IndexRefineSearchParameters(k_factor=r)
                measure(rows, ("ragcore PQIndex", "faiss PQFastScan+RefineFlat"), f"m={m}, rescore={r}",
                        lambda b, th=0, r=r: pq.search(b, 10, rescore=r, n_threads=th).ids,
                        lambda b, p=params: fpq.search(b, 10, params=p)[1], q, truth, args, faiss,
                        threads)
        if args.skip_ivf:
            continue
        t = time.perf_counter()
        ivf = IVFIndex(d, args.nlist, "ip", "pq4", m=m)
        ivf.train(sample)
        ivf.add(x)
        build = [time.perf_counter() - t]
        t = time.perf_counter()
        coarse = faiss.IndexFlatL2(d)
        fivf_base = faiss.IndexIVFPQFastScan(coarse, d, args.nlist, m, 4, faiss.METRIC_INNER_PRODUCT)
        fivf = refine_flat_on(faiss, fivf_base, exact, sample, x)
        build.append(time.perf_counter() - t)
        print(f"\nbuild (train + add): IVFIndex pq4 {build[0]:.1f} s, faiss {build[1]:.1f} s\n\n{header}")
        for nprobe in (int(v) for v in args.nprobe.split(",")):
            for r in (int(v) for v in args.rescore.split(",")):
                params = faiss.IndexRefineSearchParameters(
                    k_factor=r, base_index_params=faiss.SearchParametersIVF(nprobe=nprobe))
                measure(rows, ("ragcore IVFIndex pq4", "faiss IVFPQFastScan+RefineFlat"),
                        f"nlist={args.nlist}, nprobe={nprobe}, m={m}, rescore={r}",
                        lambda b, th=0, r=r, p_=nprobe: ivf.search(b, 10, nprobe=p_, rescore=r,
                                                                   n_threads=th).ids,
                        lambda b, p=params: fivf.search(b, 10, params=p)[1], q, truth, args, faiss,
                        threads)
    for target in (0.95, 0.99):
        for column, what in ((3, "batch-1"), (5, "batch-256, 1 thread,")):
            print(f"\nbest {what} QPS (CPU time) at recall@10 >= {target}:")
            for system, (qps, params) in sorted(best_at(rows, target, column).items()):
                print(f"- {system}: {qps:,.0f} ({params})")
    print(f"load after: {os.getloadavg()[0]:.1f}; peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")


if __name__ == "__main__":
    main()
