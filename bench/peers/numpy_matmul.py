"""numpy: queries @ corpus.T in row blocks, argpartition and sort of the top k (exact)."""

from __future__ import annotations

import numpy as np

LIBRARY, DISTRIBUTION = "numpy", "numpy"
BLOCK = 65_536


class Exact:
    name = "numpy"

    def __init__(self, threads):
        self.threads = threads

    def build(self, x):
        self.x = x

    def search(self, q, k):
        from threadpoolctl import threadpool_limits

        with threadpool_limits(self.threads, user_api="blas"):
            best_s = np.full((len(q), 0), -np.inf, np.float32)
            best_i = np.empty((len(q), 0), np.int64)
            for start in range(0, len(self.x), BLOCK):
                s = q @ self.x[start:start + BLOCK].T
                kk = min(k, s.shape[1])
                part = np.argpartition(-s, kk - 1, axis=1)[:, :kk]
                best_s = np.concatenate([best_s, np.take_along_axis(s, part, 1)], 1)
                best_i = np.concatenate([best_i, part + start], 1)
            order = np.argsort(-best_s, axis=1, kind="stable")[:, :k]
            return np.take_along_axis(best_i, order, 1)


TASKS = {"exact": [Exact]}
