"""How much the GPU BM25 index's pruned plan saves, measured on the CPU.

    python bench/bm25_pruning.py [--n 200000] [--k 10 100] [--json OUT.json]

On bench/bm25.py's Zipfian corpus and queries (lucene, no stopwords), runs
reference.bm25_candidate_search, the numpy twin of GpuBM25Index's pruned plan,
with the default dense threshold (terms in at least 1 document in 16), checks its
hits equal BM25Index.search's, and reports per k: the share of queries the pruned
plan answers (the rest fall back to the exhaustive plan) and the postings the GPU
reads for the batch with pruning (essential terms of answered queries, every term
of the others) against without (every term of every query). Candidate probes are
not counted. No GPU is needed.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

import ragcore
from _zipf import zipf_corpus
from ragcore import reference as ref
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--k", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--json")
    args = parser.parse_args()
    texts, queries = zipf_corpus(args.n, 200_000, args.batch, seed=0)
    index = ragcore.BM25Index(stopwords=None)
    index.index(texts, show_progress=False)
    del texts
    impacts = index.impacts()
    lists = np.diff(impacts["offsets"])
    dense_min_df = max(1, (len(impacts["slot_ids"]) + 15) // 16)  # GpuBM25Index's default
    terms, weights, offsets, base = index.weighed_queries(queries)
    report = {"n": args.n, "batch": args.batch, "dense_min_df": dense_min_df, "rows": []}
    for k in args.k:
        hits, fell_back = ref.bm25_candidate_search(impacts, terms, weights, offsets, base, k,
                                                    dense_min_df)
        expected = index.search(queries, k)
        same = np.array_equal(hits.ids, expected.ids) and np.array_equal(hits.scores, expected.scores)
        every = pruned = 0
        for q in range(len(offsets) - 1):
            df = lists[[t for t in terms[offsets[q]:offsets[q + 1]] if t >= 0]]
            every += int(df.sum())
            pruned += int(df.sum() if fell_back[q] else df[df < dense_min_df].sum())
        row = {"k": k, "answered": float(1 - fell_back.mean()), "postings_every_term": every,
               "postings_pruned": pruned, "saving": every / pruned, "same_hits": bool(same)}
        report["rows"].append(row)
        print(f"k = {k}: pruned plan answers {row['answered']:.1%} of the queries; postings read "
              f"{every:,} -> {pruned:,} ({row['saving']:.1f}x fewer); hits equal the CPU index's: "
              f"{same}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    if not all(r["same_hits"] for r in report["rows"]):
        raise SystemExit("the pruned plan's hits differ from the CPU index's")


if __name__ == "__main__":
    main()
