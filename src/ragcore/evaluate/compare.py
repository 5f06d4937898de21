"""Paired comparison of two systems over the same queries: gained, lost, sign test."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import comb

import numpy as np

from ._metrics import Evaluation


@dataclass(frozen=True)
class Comparison:
    """Queries where b beats a (gained), where a beats b (lost), ties, and the sign test."""

    gained: np.ndarray  # query ids (or indices) where b > a
    lost: np.ndarray  # where b < a
    tied: int
    p_value: float  # two-sided exact binomial sign test, ties left out


def sign_test(gained: int, lost: int) -> float:
    """Two-sided exact sign test: P(a split at least as uneven as gained/lost | p = 1/2).

    7 gained / 2 lost gives 0.180; 8 / 1 gives 0.039. With no untied query it is 1.
    """
    for name, value in (("gained", gained), ("lost", lost)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"{name} must be a count >= 0, got {value!r}")
    n = int(gained) + int(lost)
    tail = sum(comb(n, i) for i in range(min(gained, lost) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


def compare(per_query_a, per_query_b, metric: str | None = None) -> Comparison:
    """Compare system b with system a, query by query.

    per_query_a / per_query_b: arrays of equal length (queries by position), dicts
    ``{qid: value}`` with the same keys, or Evaluations (then name the metric; queries are
    matched by id and must be the same).
    """
    ids, a, b = _align(per_query_a, per_query_b, metric)
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("per-query values must be finite")
    gained, lost = b > a, b < a
    return Comparison(ids[gained], ids[lost], int((a == b).sum()),
                      sign_test(int(gained.sum()), int(lost.sum())))


def _align(a, b, metric):
    if isinstance(a, Evaluation) or isinstance(b, Evaluation):
        if not (isinstance(a, Evaluation) and isinstance(b, Evaluation)):
            raise TypeError("compare an Evaluation with another Evaluation")
        if metric is None:
            raise ValueError(f"name the metric to compare, one of {sorted(a.per_query)}")
        for name, ev in (("per_query_a", a), ("per_query_b", b)):
            if metric not in ev.per_query:
                raise KeyError(f"{name} has no metric {metric!r}; it has {sorted(ev.per_query)}")
        a = dict(zip(a.qids.tolist(), a.per_query[metric].tolist()))
        b = dict(zip(b.qids.tolist(), b.per_query[metric].tolist()))
    elif metric is not None:
        raise ValueError("metric applies to Evaluation input only")
    if isinstance(a, dict) or isinstance(b, dict):
        if not (isinstance(a, dict) and isinstance(b, dict)):
            raise TypeError("compare a dict with a dict (same query ids) or an array with an array")
        if a.keys() != b.keys():
            only = sorted(map(str, a.keys() ^ b.keys()))[:3]
            raise ValueError(f"the two systems must cover the same queries; not in both: {only}")
        ids = np.array(list(a))
        return ids, np.array([a[q] for q in ids.tolist()], float), np.array([b[q] for q in ids.tolist()], float)
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"per_query_a and per_query_b must be 1-D of the same length, got "
                         f"shapes {a.shape} and {b.shape}")
    return np.arange(len(a)), a, b
