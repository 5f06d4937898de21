"""Maximal marginal relevance, one candidate at a time (see ragcore.rag.mmr)."""

from __future__ import annotations

import math


def _cosine(a, b) -> float:
    dot = sum(float(x) * float(y) for x, y in zip(a, b))
    return dot / (math.sqrt(sum(float(x) ** 2 for x in a)) * math.sqrt(sum(float(y) ** 2 for y in b)))


def mmr(query, candidates, lambda_: float, k: int) -> list:
    """Greedy MMR: the most similar candidate first, then the best of
    lambda_ * sim(query, c) - (1 - lambda_) * max(sim(c, s) for s chosen); ties: lower position."""
    chosen: list = []
    remaining = list(range(len(candidates)))
    while remaining and len(chosen) < k:
        best, best_score = None, -math.inf
        for i in remaining:
            relevance = _cosine(query, candidates[i])
            if chosen:
                score = lambda_ * relevance - (1 - lambda_) * max(
                    _cosine(candidates[i], candidates[s]) for s in chosen)
            else:
                score = relevance
            if score > best_score:
                best, best_score = i, score
        chosen.append(best)
        remaining.remove(best)
    return chosen
