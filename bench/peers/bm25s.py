"""bm25s: its BM25 (method "lucene"; the numba backend where numba is installed) (bm25)."""

from __future__ import annotations

import importlib.util

import numpy as np

LIBRARY, DISTRIBUTION = "bm25s", "bm25s"


class Bm25:
    backend = "numba" if importlib.util.find_spec("numba") else "numpy"
    name = f"bm25s {backend}"

    def __init__(self, threads, workdir):
        self.threads = threads

    def build(self, texts):
        import bm25s

        self.bm25s = bm25s
        self.retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75, backend=self.backend)
        self.retriever.index(bm25s.tokenize(texts, stopwords=None, show_progress=False),
                             show_progress=False)

    def search(self, queries, k):
        tokens = self.bm25s.tokenize(queries, stopwords=None, show_progress=False)
        ids, _ = self.retriever.retrieve(tokens, k=k, n_threads=self.threads,
                                         show_progress=False)
        return np.asarray(ids)


TASKS = {"bm25": [Bm25]}
