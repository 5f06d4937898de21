"""usearch: its HNSW index, inner product, float32 (ann)."""

from __future__ import annotations

import numpy as np

LIBRARY, DISTRIBUTION = "usearch", "usearch"


class Hnsw:
    name, knob = "usearch", "ef"

    def __init__(self, threads, params):
        self.threads, self.params = threads, params

    def build(self, x):
        from usearch.index import Index

        self.index = Index(ndim=x.shape[1], metric="ip", dtype="f32",
                           connectivity=self.params["M"],
                           expansion_add=self.params["ef_construction"])
        self.index.add(np.arange(len(x)), x, threads=self.threads)

    def search(self, q, k, value):
        self.index.expansion_search = value
        return np.asarray(self.index.search(q, k, threads=self.threads).keys, dtype=np.int64)


TASKS = {"ann": [Hnsw]}
