"""Ranking metrics with trec_eval's definitions and evidence-span recall, one query at a time
(see ragcore.evaluate)."""

from __future__ import annotations

import numpy as np


def trec_eval_order(scores: dict) -> list:
    """Document ids by score descending, equal scores by id descending as strings (trec_eval).

    trec_eval stores scores as C floats, so scores are compared after rounding to float32.
    """
    docs = sorted(scores, reverse=True)
    with np.errstate(over="ignore"):
        docs.sort(key=lambda doc: -np.float32(scores[doc]))  # stable: keeps the id order within equal scores
    return docs


def ranking_metric(ranking: list, grades: dict, metric: str, k: int | None = None) -> float:
    """One metric of one query: ranking is best first, grades maps judged ids to grades."""
    top = ranking if k is None else ranking[:k]
    relevant = [grades.get(doc, 0) >= 1 for doc in top]
    num_rel = sum(g >= 1 for g in grades.values())
    if metric == "precision":
        return sum(relevant) / k
    if metric == "recall":
        return sum(relevant) / num_rel if num_rel else 0.0
    if metric == "hit":
        return float(any(relevant))
    if metric == "mrr":
        return next((1.0 / rank for rank, rel in enumerate(relevant, 1) if rel), 0.0)
    if metric == "map":
        found, total = 0, 0.0
        for rank, rel in enumerate(relevant, 1):
            if rel:
                found += 1
                total += found / rank
        return total / num_rel if num_rel else 0.0
    if metric == "ndcg":
        dcg = sum(max(grades.get(doc, 0), 0) / np.log2(rank + 1) for rank, doc in enumerate(top, 1))
        ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
        idcg = sum(g / np.log2(rank + 1) for rank, g in enumerate(ideal, 1))
        return dcg / idcg if idcg else 0.0
    if metric == "rprec":
        return sum(grades.get(doc, 0) >= 1 for doc in ranking[:num_rel]) / num_rel if num_rel else 0.0
    raise ValueError(f"unknown metric {metric!r}")


def evidence_question(chunks: list, groups: list, k: int | None = None) -> tuple:
    """(recall at k, reciprocal rank within k) of one question: chunks best first, groups of spans."""
    def covers(chunk, span):
        overlap = min(chunk[2], span[2]) - max(chunk[1], span[1])
        return chunk[0] == span[0] and 2 * overlap >= span[2] - span[1]

    top = chunks if k is None else chunks[:k]
    covered = sum(any(covers(c, s) for c in top for s in group) for group in groups)
    rr = next((1.0 / rank for rank, c in enumerate(top, 1)
               if any(covers(c, s) for group in groups for s in group)), 0.0)
    return covered / len(groups), rr
