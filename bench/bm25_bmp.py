"""Block-max pruning (algorithm="bmp") against MaxScore, which auto runs at these k.

Corpora:
  - zipf: the 1M-document index and the 1,000 queries that bench/bm25_peers.py keeps in
    --cache DIR (built there with --build-only: ragcore.rbm25, zipf1000000_queries.json),
    lucene_legacy with Lucene's norms, k1 = 1.2, b = 0.75;
  - stdlib: bench/bm25_algorithms.py's (the standard library's paragraphs, stopwords "en",
    "lucene", k1 = 1.5, b = 0.75), --queries queries of exactly m distinct tokens of a
    random paragraph for each m of --terms.
Per cell: one batch, 1 thread, CPU-time QPS (this process's CPU time), best of --rounds
batches after a warm-up, the two algorithms alternating; every batch's hits of both are
checked identical (ids and scores) to exhaustive's.

Run:  .venv/bin/python bench/bm25_bmp.py --cache DIR
Writes bench/results/bm25_bmp.json and bench/results/bm25_bmp.md.
"""

from __future__ import annotations

import _common  # first: re-executes without OPENBLAS_CORETYPE  # noqa: F401
from _common import LoadMeter, markdown_table

import argparse
import json
import time

import numpy as np
from _peers import finish

ALGORITHMS = ("maxscore", "bmp")


def measure(index, queries, k: int, rounds: int) -> dict:
    want = index.search(queries, k, n_threads=1, algorithm="exhaustive")
    best = {a: float("inf") for a in ALGORITHMS}
    for a in ALGORITHMS:
        index.search(queries, k, n_threads=1, algorithm=a)  # warm-up: term caches, ranges
    for _ in range(rounds):
        for a in ALGORITHMS:
            t0 = time.process_time()
            hits = index.search(queries, k, n_threads=1, algorithm=a)
            best[a] = min(best[a], time.process_time() - t0)
            if not (np.array_equal(hits.ids, want.ids) and np.array_equal(hits.scores, want.scores)):
                raise SystemExit(f"{a}'s hits differ from exhaustive's at k = {k}")
    return {a: len(queries) / max(t, 1e-9) for a, t in best.items()}


def report(results: dict, args) -> str:
    rows = [[r["corpus"], r["terms"], r["k"], f"{r['qps']['maxscore']:,.0f}",
             f"{r['qps']['bmp']:,.0f}", f"{r['qps']['bmp'] / r['qps']['maxscore']:.2f}"]
            for r in results["rows"]]
    return (f"Other processes used {results['other_load_cores']:.1f} cores on average.\n\n"
            + markdown_table(["corpus", "terms", "k", "maxscore", "bmp", "bmp / maxscore"], rows)
            + "\n")


def main() -> None:
    import ragcore
    from bm25_algorithms import stdlib_queries
    from bm25 import stdlib_corpus

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", required=True, help="bench/bm25_peers.py's --cache DIR")
    parser.add_argument("--ks", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--terms", type=int, nargs="+", default=[1, 2, 3, 5, 8])
    parser.add_argument("--queries", type=int, default=300, help="stdlib queries per number of terms")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    load = LoadMeter()
    rows = []
    index = ragcore.BM25Index.load(f"{args.cache}/ragcore.rbm25")
    with open(f"{args.cache}/zipf1000000_queries.json") as f:
        queries = json.load(f)
    for k in args.ks:
        rows.append({"corpus": "zipf (1,000,000 docs)", "terms": "2-6 (mixed)", "k": k,
                     "qps": measure(index, queries, k, args.rounds)})
        print(rows[-1], flush=True)
    del index
    texts, _ = stdlib_corpus(0)
    index = ragcore.BM25Index(k1=1.5, b=0.75, variant="lucene", stopwords="en")
    index.index(texts, show_progress=False)
    for k in args.ks:
        for m in args.terms:
            qs = [" ".join(q) for q in stdlib_queries(texts, m, args.queries, seed=m)]
            rows.append({"corpus": f"stdlib ({len(texts):,} docs)", "terms": m, "k": k,
                         "qps": measure(index, qs, k, args.rounds)})
            print(rows[-1], flush=True)
    finish("bm25_bmp", {"rows": rows}, load, args, report)


if __name__ == "__main__":
    main()
