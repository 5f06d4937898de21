"""Plain numpy reference implementations, written for clarity, not speed.

Tests compare every native function with these. Scores follow the library's
convention: higher is better; for "l2" the score is minus the squared
Euclidean distance. Ordering: score descending, then id ascending.
"""

from __future__ import annotations

import numpy as np

from ._storage import to_float32, to_storage
from .hits import PADDING_ID, Hits

METRICS = ("ip", "cosine", "l2")


def round_to_storage(x: np.ndarray, dtype: str) -> np.ndarray:
    """The float32 values that x becomes once stored as dtype."""
    return to_float32(to_storage(np.asarray(x, dtype=np.float32), dtype, "x"), dtype)


def normalize_rows(x: np.ndarray) -> np.ndarray:
    """Rows divided by their Euclidean norm, in float64."""
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def dense_scores(corpus: np.ndarray, queries: np.ndarray, metric: str = "ip") -> np.ndarray:
    """float64 [nq, n] scores of every query against every corpus row."""
    corpus = np.asarray(corpus, dtype=np.float64)
    queries = np.asarray(queries, dtype=np.float64)
    if metric == "ip":
        return queries @ corpus.T
    if metric == "cosine":
        return normalize_rows(queries) @ normalize_rows(corpus).T
    if metric == "l2":
        diff = queries[:, None, :] - corpus[None, :, :]
        return -np.einsum("qnd,qnd->qn", diff, diff)
    raise ValueError(f"unknown metric {metric!r}; expected one of {METRICS}")


def topk(scores: np.ndarray, ids: np.ndarray, k: int) -> Hits:
    """Best k of each row of scores: score descending, ties by id ascending, padded."""
    scores = np.asarray(scores, dtype=np.float64)
    ids = np.asarray(ids, dtype=np.int64)
    nq, n = scores.shape
    out_scores = np.full((nq, k), -np.inf, dtype=np.float32)
    out_ids = np.full((nq, k), PADDING_ID, dtype=np.int64)
    kept = min(k, n)
    for row in range(nq):
        order = np.lexsort((ids, -scores[row]))[:kept]
        out_scores[row, :kept] = scores[row, order]
        out_ids[row, :kept] = ids[order]
    return Hits(out_scores, out_ids)


def flat_search(corpus, queries, k: int, metric: str = "ip", ids=None) -> Hits:
    """Exact top-k by brute force."""
    corpus = np.asarray(corpus)
    if ids is None:
        ids = np.arange(len(corpus), dtype=np.int64)
    return topk(dense_scores(corpus, np.atleast_2d(queries), metric), ids, k)


# Ranking metrics, one query at a time, with trec_eval's definitions (see ragcore.evaluate).


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


# Fusion, one query at a time (see ragcore.fusion).


def fuse_query(lists: list, method: str = "rrf", norm: str | None = None, weights=None,
               r0: float = 60) -> dict:
    """Fused score per id of one query; lists holds, per retriever, (id, score) pairs best first."""
    weights = [1.0] * len(lists) if weights is None else list(weights)
    fused: dict = {}
    count: dict = {}
    for pairs, w in zip(lists, weights):
        scores = [s for _, s in pairs]
        for rank, (doc, score) in enumerate(pairs, 1):
            if method == "rrf":
                value = w / (r0 + rank)
            else:
                value = w * _normalise(score, rank, scores, norm)
            fused.setdefault(doc, []).append(value)
            count[doc] = count.get(doc, 0) + 1
    total = {doc: float(sum(sorted(values))) for doc, values in fused.items()}
    if method == "combmnz":
        total = {doc: value * count[doc] for doc, value in total.items()}
    return total


def _normalise(score: float, rank: int, scores: list, norm: str | None) -> float:
    if norm is None:
        return score
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


# Evidence spans, one question at a time (see ragcore.evaluate.evidence).


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
