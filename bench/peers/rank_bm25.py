"""rank_bm25: BM25Okapi over whitespace tokens, all scores then the top k (bm25)."""

from __future__ import annotations

import numpy as np

LIBRARY, DISTRIBUTION = "rank_bm25", "rank-bm25"


class Bm25:
    name = "rank_bm25"
    max_docs = 50_000  # it scores every document in Python per query

    def __init__(self, threads, workdir):
        pass

    def build(self, texts):
        from rank_bm25 import BM25Okapi

        self.index = BM25Okapi([t.lower().split() for t in texts], k1=1.2, b=0.75)

    def search(self, queries, k):
        out = []
        for q in queries:
            s = self.index.get_scores(q.lower().split())
            out.append(np.argsort(-s, kind="stable")[:k])
        return out


TASKS = {"bm25": [Bm25]}
