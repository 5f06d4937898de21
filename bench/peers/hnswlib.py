"""hnswlib: its HNSW index, inner product (ann)."""

from __future__ import annotations

import numpy as np

LIBRARY, DISTRIBUTION = "hnswlib", "hnswlib"


class Hnsw:
    name, knob = "hnswlib", "ef"

    def __init__(self, threads, params):
        self.threads, self.params = threads, params

    def build(self, x):
        import hnswlib

        self.index = hnswlib.Index(space="ip", dim=x.shape[1])
        self.index.init_index(max_elements=len(x), M=self.params["M"],
                              ef_construction=self.params["ef_construction"], random_seed=0)
        self.index.add_items(x, np.arange(len(x)), num_threads=self.threads)

    def search(self, q, k, value):
        self.index.set_ef(max(value, k))
        return self.index.knn_query(q, k, num_threads=self.threads)[0].astype(np.int64)


TASKS = {"ann": [Hnsw]}
