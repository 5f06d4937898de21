"""Per-query score normalisations used by score fusion (``ragcore.rag.fusion``).

Each works on a batch: scores float64 ``[nq, k]``, ``valid`` bool ``[nq, k]`` (False at padding),
``n`` the valid count per row ``[nq, 1]`` and, for ``"theoretical"`` only, the list's lower bound.
Values at padding positions are never read, and what is returned there is ignored.

The theoretical min-max is Bruch, Gai and Ingber's ("An Analysis of Fusion Functions for Hybrid
Retrieval", ACM TOIS 2023): ``(s - lower) / (max - lower)``, where ``lower`` is the lowest score
the retriever can give at all (0 for BM25, -1 for cosine) and ``max`` the query's best score. Unlike
min-max it does not stretch a list whose scores are all close to the best, so a retriever that is
unsure (every candidate scored alike) keeps small differences small.
"""

from __future__ import annotations

import numpy as np

# The lowest score each kind of retriever can give, by name (a number can be given instead).
# "unit_ip" / "unit_l2": inner product and minus the squared distance of unit-norm vectors.
LOWER_BOUNDS = {"bm25": 0.0, "cosine": -1.0, "unit_ip": -1.0, "unit_l2": -4.0}


def _norm_none(s, valid, n, lower):
    """Scores as given."""
    return s


def _norm_minmax(s, valid, n, lower):
    """(s - min) / (max - min) per query; a query whose scores are all equal gets 0."""
    lo = np.min(np.where(valid, s, np.inf), axis=1, keepdims=True)
    return _scale_from(s, valid, n, lo)


def _norm_theoretical(s, valid, n, lower):
    """(s - lower) / (max - lower) per query, lower the retriever's lowest possible score;
    a query whose best score equals the lower bound gets 0."""
    below = valid & (s < lower)
    if below.any():
        row, col = (int(x) for x in np.argwhere(below)[0])
        raise ValueError(
            f"row {row} has score {s[row, col]:g} below the lower bound {lower:g}; give the "
            "retriever's true lowest possible score in lower_bounds (0 for BM25, -1 for cosine)"
        )
    return _scale_from(s, valid, n, np.full((s.shape[0], 1), lower))


def _scale_from(s, valid, n, lo):
    hi = np.max(np.where(valid, s, -np.inf), axis=1, keepdims=True)
    spread = np.where(n > 0, hi - lo, 0.0)  # empty rows: inf - inf never reaches a division
    return np.where(spread > 0, (s - lo) / np.where(spread > 0, spread, 1.0), 0.0)


def _norm_zscore(s, valid, n, lower):
    """(s - mean) / std per query, population std; a query whose scores are all equal gets 0."""
    count = np.maximum(n, 1)
    mean = np.where(valid, s, 0.0).sum(axis=1, keepdims=True) / count
    dev = np.where(valid, s - mean, 0.0)
    std = np.sqrt((dev * dev).sum(axis=1, keepdims=True) / count)
    return np.where(std > 0, dev / np.where(std > 0, std, 1.0), 0.0)


def _norm_max(s, valid, n, lower):
    """s / max per query (for non-negative scores such as BM25's); the top score must be > 0."""
    hi = np.max(np.where(valid, s, -np.inf), axis=1, keepdims=True)
    bad = (n[:, 0] > 0) & (hi[:, 0] <= 0)
    if bad.any():
        row = int(np.argmax(bad))
        raise ValueError(
            f"norm='max' needs a positive top score in every query; query {row} has top score "
            f"{hi[row, 0]:g} (use norm='minmax' or 'zscore' for scores that can be negative)"
        )
    return s / np.where(hi > 0, hi, 1.0)


def _norm_rank(s, valid, n, lower):
    """1 - (rank - 1) / n per query, ranks from 1 in the given order, n results in the list."""
    rank0 = np.arange(s.shape[1], dtype=np.float64)[None, :]
    return 1.0 - rank0 / np.maximum(n, 1)


NORMS = {
    "minmax": _norm_minmax,
    "theoretical": _norm_theoretical,
    "zscore": _norm_zscore,
    "max": _norm_max,
    "rank": _norm_rank,
    None: _norm_none,
}


def lower_bound(value, name: str) -> float:
    """A lower bound given as a number or a LOWER_BOUNDS name, as a finite float."""
    if isinstance(value, str):
        if value not in LOWER_BOUNDS:
            raise ValueError(f"unknown {name} {value!r}; expected a number or one of "
                             f"{', '.join(map(repr, LOWER_BOUNDS))}")
        return LOWER_BOUNDS[value]
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number or one of {', '.join(map(repr, LOWER_BOUNDS))}, "
                        f"got {type(value).__name__}")
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return float(value)


def lower_bounds(values, m: int, norm) -> list:
    """One lower bound per list for norm='theoretical' (None for every other norm)."""
    if norm != "theoretical":
        if values is not None:
            raise ValueError(f"lower_bounds apply to norm='theoretical' only, not norm={norm!r}")
        return [None] * m
    if values is None:
        raise ValueError("norm='theoretical' needs lower_bounds: the lowest score each list's "
                         "retriever can give, e.g. ['cosine', 'bm25'] or [-1.0, 0.0]")
    if isinstance(values, (str, int, float)) or len(values) != m:
        raise ValueError(f"lower_bounds must be {m} values, one per list, got {values!r}")
    return [lower_bound(v, f"lower_bounds[{i}]") for i, v in enumerate(values)]


def normalise(scores: np.ndarray, valid: np.ndarray, norm, lower=None, name: str = "scores"):
    """Normalised float64 scores of one list (0 at padding)."""
    n = valid.sum(axis=1, keepdims=True)
    try:
        out = NORMS[norm](scores.astype(np.float64), valid, n, lower)
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from None
    return np.where(valid, out, 0.0)  # padding: 0, not -inf (0 * -inf is NaN)
