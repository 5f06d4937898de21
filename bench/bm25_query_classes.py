"""Where BM25's 1M-document query time goes: per-query CPU time, by class of query.

The index and the 1,000 queries that bench/bm25_peers.py keeps in --cache DIR (ragcore.rbm25,
zipf1000000_queries.json; lucene_legacy with Lucene's norms, k1 = 1.2, b = 0.75). Each query
is searched alone (one batched call of one query, 1 thread, algorithm "auto"), --rounds times
round-robin, and its time is the least thread CPU time it took; the queries are summed by
class: those whose terms all have doc bits (every term in at least 1/64 of the documents,
where MaxScore takes its required-list and posting-skip shortcuts) and the others. Run it
once per build, alternating, to compare two builds on the same queries.

Run:  .venv/bin/python bench/bm25_query_classes.py --cache DIR [--k 10]
Writes bench/results/bm25_query_classes.json and bench/results/bm25_query_classes.md.
"""

from __future__ import annotations

import _common  # first: re-executes without OPENBLAS_CORETYPE  # noqa: F401
from _common import LoadMeter, markdown_table

import argparse
import json
import time

import numpy as np
from _peers import finish


def per_query_us(index, queries, k: int, rounds: int) -> np.ndarray:
    index.search(queries, k, n_threads=1)  # warm-up: the term caches
    best = np.full(len(queries), np.inf)
    for _ in range(rounds):
        for i, q in enumerate(queries):
            t0 = time.thread_time_ns()
            index.search([q], k, n_threads=1)
            best[i] = min(best[i], time.thread_time_ns() - t0)
    return best / 1e3


def report(results: dict, args) -> str:
    rows = [[c["class"], c["queries"], f"{c['ms']:.1f}", f"{c['median_us']:.0f}"]
            for c in results["classes"]]
    return (f"ragcore {results['ragcore']}; k = {args.k}; other processes used "
            f"{results['other_load_cores']:.1f} cores on average.\n\n"
            + markdown_table(["class", "queries", "summed ms", "median us"], rows) + "\n")


def main() -> None:
    import ragcore

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", required=True, help="bench/bm25_peers.py's --cache DIR")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    load = LoadMeter()
    index = ragcore.BM25Index.load(f"{args.cache}/ragcore.rbm25")
    with open(f"{args.cache}/zipf1000000_queries.json") as f:
        queries = json.load(f)
    times = per_query_us(index, queries, args.k, args.rounds)
    n = len(index)
    frequent = np.array([all(index.doc_freq(w) * 64 >= n for w in q.split()) for q in queries])
    classes = [{"class": name, "queries": int(m.sum()), "ms": float(times[m].sum() / 1e3),
                "median_us": float(np.median(times[m])) if m.any() else float("nan")}
               for name, m in (("all terms frequent", frequent), ("others", ~frequent),
                               ("all", np.ones_like(frequent)))]
    finish("bm25_query_classes", {"ragcore": ragcore.__file__, "classes": classes}, load, args,
           report)


if __name__ == "__main__":
    main()
