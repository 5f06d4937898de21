"""Score fusion, one query at a time (see ragcore.rag.fusion)."""

from __future__ import annotations

import numpy as np


def fuse_query(lists: list, method: str = "rrf", norm: str | None = None, weights=None,
               r0: float = 60, lower_bounds=None) -> dict:
    """Fused score per id of one query; lists holds, per retriever, (id, score) pairs best first.
    lower_bounds: per list, the lowest possible score (numbers), for norm="theoretical"."""
    weights = [1.0] * len(lists) if weights is None else list(weights)
    bounds = [None] * len(lists) if lower_bounds is None else list(lower_bounds)
    fused: dict = {}
    count: dict = {}
    for pairs, w, lower in zip(lists, weights, bounds):
        scores = [s for _, s in pairs]
        for rank, (doc, score) in enumerate(pairs, 1):
            if method == "rrf":
                value = w / (r0 + rank)
            else:
                value = w * _normalise(score, rank, scores, norm, lower)
            fused.setdefault(doc, []).append(value)
            count[doc] = count.get(doc, 0) + 1
    total = {doc: float(sum(sorted(values))) for doc, values in fused.items()}
    if method == "combmnz":
        total = {doc: value * count[doc] for doc, value in total.items()}
    return total


def convex_query(dense: list, sparse: list, alpha: float, norm: str | None,
                 lower_bounds=(-1.0, 0.0)) -> dict:
    """alpha * norm(dense) + (1 - alpha) * norm(sparse) per id; a missing document gets 0."""
    fused: dict = {}
    for pairs, weight, lower in ((dense, alpha, lower_bounds[0]), (sparse, 1 - alpha, lower_bounds[1])):
        scores = [s for _, s in pairs]
        for rank, (doc, score) in enumerate(pairs, 1):
            fused.setdefault(doc, []).append(weight * _normalise(score, rank, scores, norm, lower))
    return {doc: float(sum(sorted(values))) for doc, values in fused.items()}


def _normalise(score: float, rank: int, scores: list, norm: str | None, lower=None) -> float:
    if norm is None:
        return score
    if norm == "theoretical":
        if score < lower:
            raise ValueError(f"score {score} is below the lower bound {lower}")
        return (score - lower) / (max(scores) - lower) if max(scores) > lower else 0.0
    if norm == "minmax":
        spread = max(scores) - min(scores)
        return (score - min(scores)) / spread if spread > 0 else 0.0
    if norm == "zscore":
        std = float(np.std(scores))
        return (score - float(np.mean(scores))) / std if std > 0 else 0.0
    if norm == "max":
        return score / max(scores)
    if norm == "rank":
        return 1 - (rank - 1) / len(scores)
    raise ValueError(f"unknown norm {norm!r}")
