"""Per-call latency: one query per call, as a RAG service sends them, against peers.

Dense (d = 384, random normal float32 rows and queries, inner product, k = 10):
  ragcore FlatIndex vs faiss IndexFlatIP; ragcore IVFIndex vs faiss IndexIVFFlat (same nlist =
  sqrt(N), nprobe = 8); hnswlib (M = 16, ef_construction = 100, ef = 64) for scale.
BM25 (the Zipfian corpus of bench/bm25.py, k1 = 1.2, b = 0.75, k = 10 and 100):
  ragcore BM25Index(variant="lucene_legacy", lucene_norms=True, no stopwords) vs tantivy
  (in RAM, default tokenizer, one searcher; parse_query + search per call), whose BM25 is the
  same formula: top-k overlap is reported; and PISA (pyterrier-pisa, stemmer and stopwords
  "none", block_max_wand, Transformer.search per call). And ragcore's one-query-per-call QPS against its own
  batched QPS (one call for all queries) at 20,000 documents.
Everything runs on 1 thread (ragcore n_threads=1, faiss omp 1, hnswlib 1, tantivy's searcher
is single-threaded per query). Calls are interleaved in blocks of 25 queries per system. p50 / p99 over the calls, in
microseconds of this thread's CPU time (time.thread_time_ns around the call: every peer runs
its 1-thread search in the calling thread; on a shared machine wall-clock percentiles mostly
measure the other processes).

Run:  .venv/bin/python bench/latency.py              (N = 1k, 20k, 100k)
      .venv/bin/python bench/latency.py --sizes 1000 --queries 200   (a quick look)
      .venv/bin/python bench/latency.py --sizes        (batched against one per call only)
Writes bench/results/latency.json and bench/results/latency.md.
"""

from __future__ import annotations

import _common  # first: re-executes without OPENBLAS_CORETYPE  # noqa: F401
from _common import LoadMeter, environment, markdown_table

import argparse
import math
import tempfile
import time

import numpy as np
from _peers import finish, tantivy_ids, tantivy_index
from _zipf import zipf_corpus

DIM, K_DENSE = 384, 10


def percentiles(samples_ns: list[int]) -> tuple[float, float]:
    a = np.asarray(samples_ns, dtype=np.float64) / 1e3
    return float(np.percentile(a, 50)), float(np.percentile(a, 99))


def interleaved(calls: dict, n: int, block: int = 25, warmup: int = 20) -> dict:
    """{name: [ns per call]}: calls [0, block) of every system in turn, then [block, 2 block)
    ...: load elsewhere hits all alike, and each system's data is warm in the caches as in
    a service that answers a stream of queries."""
    for i in range(min(warmup, n)):
        for fn in calls.values():
            fn(i)
    out = {name: [] for name in calls}
    clock = time.thread_time_ns  # CPU time of this thread: what a descheduling does not add
    for start in range(0, n, block):
        for name, fn in calls.items():
            for i in range(start, min(n, start + block)):
                t0 = clock()
                fn(i)
                out[name].append(clock() - t0)
    return out


# ---- dense ---------------------------------------------------------------------


def dense_systems(x: np.ndarray):
    import faiss
    import hnswlib

    import ragcore

    faiss.omp_set_num_threads(1)
    n = len(x)
    nlist = max(1, int(math.sqrt(n)))
    flat = ragcore.FlatIndex(DIM)
    flat.add(x)
    faiss_flat = faiss.IndexFlatIP(DIM)
    faiss_flat.add(x)
    ivf = ragcore.IVFIndex(DIM, nlist=nlist)
    ivf.train(x)
    ivf.add(x)
    quantizer = faiss.IndexFlatIP(DIM)
    faiss_ivf = faiss.IndexIVFFlat(quantizer, DIM, nlist, faiss.METRIC_INNER_PRODUCT)
    faiss_ivf.train(x)
    faiss_ivf.add(x)
    faiss_ivf.nprobe = 8
    graph = hnswlib.Index(space="ip", dim=DIM)
    graph.init_index(max_elements=n, M=16, ef_construction=100, random_seed=0)
    graph.set_num_threads(2)
    graph.add_items(x)
    graph.set_num_threads(1)
    graph.set_ef(64)
    ivfs = {"ivf": ivf, "faiss_ivf": faiss_ivf, "quantizer": quantizer, "flat": flat}
    return ivfs, {"FlatIndex": lambda q: flat.search(q, K_DENSE, n_threads=1),
            "faiss IndexFlatIP": lambda q: faiss_flat.search(q, K_DENSE),
            "IVFIndex": lambda q: ivf.search(q, K_DENSE, nprobe=8, n_threads=1),
            "faiss IndexIVFFlat": lambda q: faiss_ivf.search(q, K_DENSE),
            "hnswlib": lambda q: graph.knn_query(q, k=K_DENSE, num_threads=1)}


def run_dense(n: int, n_queries: int) -> dict:
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, DIM), dtype=np.float32)
    queries = rng.standard_normal((n_queries, DIM), dtype=np.float32)
    rows = [queries[i : i + 1] for i in range(n_queries)]  # what a service holds: one row
    ivfs, systems = dense_systems(x)
    times = interleaved({name: (lambda i, f=fn: f(rows[i])) for name, fn in systems.items()},
                        n_queries)
    out = {name: percentiles(t) for name, t in times.items()}
    out["ivf_lists"] = ivf_lists(ivfs, queries)
    return out


def ivf_lists(ivfs: dict, queries: np.ndarray) -> dict:
    """Rows scanned per query at nprobe = 8 (sum of the probed lists' sizes), largest list
    and recall@10 against FlatIndex, for ragcore's IVF and faiss's."""
    exact = ivfs["flat"].search(queries, K_DENSE, n_threads=1).ids
    ivf, faiss_ivf = ivfs["ivf"], ivfs["faiss_ivf"]
    centroids = ivf.centroids
    dist = (centroids * centroids).sum(1)[None, :] - 2.0 * queries @ centroids.T  # + |q|^2
    probes = np.argsort(dist, axis=1, kind="stable")[:, :8]  # ragcore probes by squared L2
    sizes = ivf.list_sizes()
    faiss_sizes = np.array([faiss_ivf.invlists.list_size(i) for i in range(faiss_ivf.nlist)])
    faiss_probes = ivfs["quantizer"].search(queries, 8)[1]

    def recall(ids) -> float:
        return float(np.mean([len(set(a) & set(b)) / K_DENSE for a, b in zip(ids, exact)]))

    return {"IVFIndex": {"scanned": float(sizes[probes].sum(1).mean()), "largest": int(sizes.max()),
                         "recall": recall(ivf.search(queries, K_DENSE, nprobe=8, n_threads=1).ids)},
            "faiss IndexIVFFlat": {"scanned": float(faiss_sizes[faiss_probes].sum(1).mean()),
                                   "largest": int(faiss_sizes.max()),
                                   "recall": recall(faiss_ivf.search(queries, K_DENSE)[1])}}


# ---- BM25 ----------------------------------------------------------------------


def run_bm25(n: int, n_queries: int, ks) -> dict:
    import ragcore

    texts, queries = zipf_corpus(n, 200_000, n_queries, seed=1)
    ours = ragcore.BM25Index(k1=1.2, b=0.75, variant="lucene_legacy", lucene_norms=True,
                             stopwords=None)
    ours.index(texts, n_threads=2, show_progress=False)
    index, searcher = tantivy_index(texts)
    with tempfile.TemporaryDirectory() as directory:
        pisa = pisa_index(texts, directory)
        del texts
        return bm25_calls(ours, index, searcher, pisa, queries, n_queries, ks)


def pisa_index(texts, directory):
    """PISA through pyterrier-pisa (no stemming, no stopwords, 1 thread)."""
    from pyterrier_pisa import PisaIndex

    pisa = PisaIndex(f"{directory}/pisa", stemmer="none", stops="none", threads=1)
    pisa.index({"docno": str(i), "text": t} for i, t in enumerate(texts))
    return pisa


def bm25_calls(ours, index, searcher, pisa, queries, n_queries, ks) -> dict:
    out = {}
    for k in ks:
        # PISA's one-query call: Transformer.search, a DataFrame of k rows per call
        # (its default algorithm, block_max_wand).
        pisa_k = pisa.bm25(k1=1.2, b=0.75, num_results=k, threads=1)
        times = interleaved({
            "BM25Index": lambda i, k=k: ours.search(queries[i], k, n_threads=1),
            "tantivy": lambda i, k=k: searcher.search(index.parse_query(queries[i], ["body"]), k),
            "PISA": lambda i: pisa_k.search(queries[i]),
        }, n_queries)
        out[k] = {name: percentiles(t) for name, t in times.items()}
        overlap = []
        for q in queries[:100]:
            # ragcore scores every document (those without a query term 0); tantivy
            # returns the matching ones only.
            hits = ours.search(q, k)
            mine = {int(i) for i, s in zip(hits.ids[0], hits.scores[0]) if s > 0}
            theirs = tantivy_ids(index, searcher, q, k)
            overlap.append(len(mine & theirs) / len(mine | theirs) if mine | theirs else 1.0)
        out[k]["overlap"] = float(np.mean(overlap))
    return out


def batch_vs_single(n: int, n_queries: int, ks, rounds: int = 5) -> dict:
    """ragcore BM25Index QPS: one call per query vs one call for the whole batch (best of
    `rounds`, alternating, CPU time of this process)."""
    import ragcore

    texts, queries = zipf_corpus(n, 200_000, n_queries)
    index = ragcore.BM25Index(k1=1.2, b=0.75, stopwords=None)
    index.index(texts, n_threads=2, show_progress=False)
    out = {}
    for k in ks:
        best = {"batch": math.inf, "single": math.inf}
        for _ in range(rounds):
            t0 = time.process_time()
            index.search(queries, k, n_threads=1)
            best["batch"] = min(best["batch"], time.process_time() - t0)
            t0 = time.process_time()
            for q in queries:
                index.search(q, k, n_threads=1)
            best["single"] = min(best["single"], time.process_time() - t0)
        out[k] = {name: n_queries / s for name, s in best.items()}
    return out


# ---- report --------------------------------------------------------------------


def fmt_us(p: tuple[float, float]) -> str:
    return f"{p[0]:,.1f} / {p[1]:,.1f}"


def report(results: dict, args) -> str:
    env = environment()
    lines = [f"Command: `{env['command']}`; CPU: {env.get('cpu', '')}; other processes used "
             f"{results['other_load_cores']:.1f} cores on average while it ran (shared machine).", ""]
    names = [name for name in next(iter(results["dense"].values()), {}) if name != "ivf_lists"]
    rows = [[f"{int(n):,}"] + [fmt_us(res[name]) for name in names] +
            [f"**{res['faiss IndexFlatIP'][0] / res['FlatIndex'][0]:.2f}x**",
             f"**{res['faiss IndexIVFFlat'][0] / res['IVFIndex'][0]:.2f}x**"]
            for n, res in results["dense"].items()]
    lines += ["Dense, one query per call, d = 384, k = 10, 1 thread: p50 / p99 microseconds "
              "(ratio: the faiss index's p50 / ragcore's; above 1 ragcore is faster).", "",
              markdown_table(["N"] + names + ["Flat ratio", "IVF ratio"], rows), ""]
    rows = [[f"{int(n):,}"] + [f"{res['ivf_lists'][s]['scanned']:,.0f} / {res['ivf_lists'][s]['largest']:,}"
                               f" / {res['ivf_lists'][s]['recall']:.3f}"
                               for s in ("IVFIndex", "faiss IndexIVFFlat")]
            for n, res in results["dense"].items()]
    lines += ["IVF lists, nlist = sqrt(N), nprobe = 8: rows scanned per query / largest list / "
              "recall@10 against FlatIndex.", "",
              markdown_table(["N", "IVFIndex", "faiss IndexIVFFlat"], rows), ""]
    rows = []
    for n, res in results["bm25"].items():
        for k, r in res.items():
            rows.append([f"{int(n):,}", k, fmt_us(r["BM25Index"]), fmt_us(r["tantivy"]),
                         fmt_us(r["PISA"]), f"**{r['tantivy'][0] / r['BM25Index'][0]:.2f}x**",
                         f"**{r['PISA'][0] / r['BM25Index'][0]:.2f}x**", f"{r['overlap']:.3f}"])
    lines += ["BM25, one query per call, Zipfian corpus, k1 = 1.2, b = 0.75, 1 thread: p50 / p99 "
              "microseconds (ratios: the peer's p50 / ragcore's; PISA: pyterrier-pisa's "
              "Transformer.search, a DataFrame per call; overlap: share of ragcore's top-k "
              "(lucene_legacy, lucene_norms) that tantivy returns, first 100 queries).", "",
              markdown_table(["N", "k", "BM25Index", "tantivy", "PISA", "tantivy ratio",
                              "PISA ratio", "overlap"], rows), ""]
    rows = [[k, f"{r['batch']:,.0f}", f"{r['single']:,.0f}", f"**{r['single'] / r['batch']:.2f}x**"]
            for k, r in results["batch_vs_single"].items()]
    lines += [f"BM25Index at {args.bm25_batch_n:,} documents, {args.queries} queries, 1 thread: "
              "QPS (CPU time, best of 5) of one call per query against one batched call.", "",
              markdown_table(["k", "batched QPS", "one-per-call QPS", "per-call / batched"], rows)]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 20_000, 100_000],
                        help="none: only the batched against one-per-call comparison")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--ks", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--bm25-batch-n", type=int, default=20_000)
    args = parser.parse_args()
    load = LoadMeter()
    results = {"dense": {}, "bm25": {}}
    for n in args.sizes:
        print(f"dense N = {n:,} ...", flush=True)
        results["dense"][n] = run_dense(n, args.queries)
        print(f"bm25 N = {n:,} ...", flush=True)
        results["bm25"][n] = run_bm25(n, args.queries, args.ks)
    print("bm25 batched vs one per call ...", flush=True)
    results["batch_vs_single"] = batch_vs_single(args.bm25_batch_n, args.queries, args.ks)
    finish("latency", results, load, args, report)


if __name__ == "__main__":
    main()
