"""Speed of ragcore.evaluate and ragcore.rag.fusion on a million-row run.

A run of Q = 10,000 queries x 100 results (1,000,000 rows) with 20 graded judgments per query;
times (best of 3, seconds) for: evaluating nine metrics from Hits with a docid table, from a
dict, and from a TREC run file (read included); writing and reading the run file; RRF and
score fusion of two such Hits; and, when installed, pytrec_eval (trec_eval) on the same dicts.
Checks that ragcore and trec_eval agree on the means.

Run:  .venv/bin/python bench/evaluate.py            (the full run)
      .venv/bin/python bench/evaluate.py --queries 1000   (smoke run)
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time

import numpy as np

from ragcore.rag import fusion
from ragcore.evaluate import evaluate, read_run, write_run
from ragcore.hits import Hits

METRICS = ["ndcg@10", "ndcg", "map", "mrr", "mrr@10", "recall@100", "precision@10", "hit@10", "rprec"]
TREC = {"ndcg@10": "ndcg_cut_10", "ndcg": "ndcg", "map": "map", "mrr": "recip_rank",
        "recall@100": "recall_100", "precision@10": "P_10", "hit@10": "success_10", "rprec": "Rprec"}


def best_of(fn, repeat: int = 3):
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def make_hits(rng, nq: int, k: int, n_docs: int) -> Hits:
    ids = np.argsort(rng.random((nq, n_docs)), axis=1)[:, :k].astype(np.int64)
    scores = -np.sort(-rng.random((nq, k)).astype(np.float32), axis=1)
    scores[:, 1::7] = scores[:, 0::7][:, : scores[:, 1::7].shape[1]]  # some ties
    scores = -np.sort(-scores, axis=1)
    return Hits(scores, ids)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--k", type=int, default=100)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    nq, k, n_docs = args.queries, args.k, 1000
    hits = make_hits(rng, nq, k, n_docs)
    docids = np.array([f"doc{i}" for i in range(n_docs)])
    qids = [f"q{i}" for i in range(nq)]
    judged = np.argsort(rng.random((nq, n_docs)), axis=1)[:, :20]
    grades = rng.integers(0, 4, size=judged.shape)
    qrels = {q: dict(zip(docids[judged[i]].tolist(), grades[i].tolist())) for i, q in enumerate(qids)}
    run_dict = {q: dict(zip(docids[hits.ids[i]].tolist(), hits.scores[i].astype(float).tolist()))
                for i, q in enumerate(qids)}
    rows = nq * k
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, numpy {np.__version__}")
    print(f"run: {nq} queries x {k} = {rows:,} rows; qrels: {nq * 20:,} judgments; metrics: {len(METRICS)}")

    results = {}
    t, ours = best_of(lambda: evaluate(hits, qrels, METRICS, docids=docids, qids=qids))
    results["evaluate(Hits + docid table)"] = t
    results["evaluate(Hits, ties='as_ranked')"] = best_of(
        lambda: evaluate(hits, qrels, METRICS, docids=docids, qids=qids, ties="as_ranked"))[0]
    results["evaluate(dict)"] = best_of(lambda: evaluate(run_dict, qrels, METRICS))[0]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "run.txt")
        results["write_run (TREC file)"] = best_of(lambda: write_run(hits, path, docids=docids, qids=qids))[0]
        results["read_run (TREC file)"] = best_of(lambda: read_run(path))[0]
        results["evaluate(TREC file path)"] = best_of(lambda: evaluate(path, qrels, METRICS))[0]
    other = make_hits(rng, nq, k, n_docs)
    results["fusion.rrf(2 lists)"] = best_of(lambda: fusion.rrf([hits, other]))[0]
    results["fusion.combine(wsum, minmax)"] = best_of(lambda: fusion.combine([hits, other]))[0]
    results["fusion.combine(combmnz, zscore)"] = best_of(
        lambda: fusion.combine([hits, other], method="combmnz", norm="zscore"))[0]
    try:
        import pytrec_eval
    except ImportError:
        pytrec_eval = None
    if pytrec_eval is not None:
        measures = {"ndcg_cut.10", "ndcg", "map", "recip_rank", "recall.100", "P.10", "success.10", "Rprec"}

        def trec():
            return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run_dict)

        results["pytrec_eval (trec_eval), same dicts"], want = best_of(trec, repeat=1)
        for ours_name, theirs in TREC.items():
            mean = np.mean([want[q][theirs] for q in ours.qids.tolist()])
            assert abs(mean - ours.mean[ours_name]) < 1e-9, (ours_name, mean, ours.mean[ours_name])
        print("means agree with trec_eval to 1e-9")
    width = max(map(len, results))
    for name, seconds in results.items():
        print(f"  {name:<{width}}  {seconds:7.3f} s   {rows / seconds / 1e6:6.2f} M rows/s")


if __name__ == "__main__":
    main()
