"""Dense test data and the reference's view of it, shared by the CPU and GPU FlatIndex tests."""

from __future__ import annotations

import numpy as np

from ragcore import reference as ref


def make_data(c):
    rng = np.random.default_rng(c["seed"])
    n, d, nq = c["n"], c["d"], c["nq"]
    if c["data"] == "gaussian":
        corpus = rng.standard_normal((n, d)).astype(np.float32)
        queries = rng.standard_normal((nq, d)).astype(np.float32)
    else:  # small integers: every sum is exact in float32, so ties are exact
        corpus = rng.integers(-3, 4, (n, d)).astype(np.float32)
        queries = rng.integers(-3, 4, (nq, d)).astype(np.float32)
        repeats = rng.integers(0, n, n // 3)  # repeated rows: exact ties
        corpus[repeats] = corpus[rng.integers(0, n, len(repeats))]
    if c["metric"] == "cosine":  # cosine is undefined for zero rows
        corpus[np.all(corpus == 0, axis=1), 0] = 1.0
        queries[np.all(queries == 0, axis=1), 0] = 1.0
    ids = rng.permutation(n).astype(np.int64) * 7 + 3  # external ids, not in storage order
    return corpus, queries, ids


def reference_on_stored(stored, queries, metric):
    """Reference scores computed on the values an index really stores."""
    if metric == "cosine":  # stored rows are already normalised (then rounded)
        queries = ref.normalize_rows(queries)
        metric = "ip"
    return ref.dense_scores(stored, queries, metric)


def rounding_tolerance(queries, stored, metric):
    """Per-query absolute tolerance: float32 accumulation error grows with d and with
    the magnitudes involved."""
    stored = stored.astype(np.float64)
    scale = np.linalg.norm(queries, axis=1) * np.linalg.norm(stored, axis=1).max()
    if metric == "l2":
        scale = (np.linalg.norm(queries, axis=1) + np.linalg.norm(stored, axis=1).max()) ** 2
    if metric == "cosine":
        scale = np.ones(len(queries))
    return 4e-6 * (queries.shape[1] + 4) * scale
