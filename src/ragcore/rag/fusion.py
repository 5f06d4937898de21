"""Fusing several result lists into one: reciprocal rank fusion and score fusion.

Every function takes a list of ``Hits`` over the same queries (each may have its own k)
and fuses all queries at once. Padding (id -1) is ignored; a document missing from a list
contributes nothing from that list; a document listed twice in one row is an error.

Fused scores are computed in float64 and returned as float32 ``Hits``; the order is that of
the returned float32 scores, ties by id ascending, as everywhere in ragcore.

Definitions (each agrees with ranx's ``fuse`` where ranx offers it, see the README):

- ``rrf``: sum over lists of ``w_i / (r0 + rank_i)``, ranks counted from 1 (Cormack, Clarke and
  Buettcher, SIGIR 2009); weights as in LangChain's EnsembleRetriever.
- ``combine``: each list is normalised per query (``NORMS``), then fused (``METHODS``):
  ``wsum`` = sum of ``w_i * s_i``; ``combsum`` = sum of ``s_i``; ``combmnz`` = sum of ``s_i``
  times the number of lists that hold the document (Fox and Shaw, TREC-2 1993).
"""

from __future__ import annotations

import numpy as np

from .._util.arrays import check_choice, check_positive_int
from ..hits import PADDING_ID, Hits

__all__ = ["METHODS", "NORMS", "combine", "rrf"]


# Normalisations: (scores float64 [nq, k], valid bool [nq, k], n valid per row [nq, 1]) -> scores.
# Values at invalid (padding) positions are never read.


def _norm_none(s, valid, n):
    """Scores as given."""
    return s


def _norm_minmax(s, valid, n):
    """(s - min) / (max - min) per query; a query whose scores are all equal gets 0."""
    lo = np.min(np.where(valid, s, np.inf), axis=1, keepdims=True)
    hi = np.max(np.where(valid, s, -np.inf), axis=1, keepdims=True)
    spread = np.where(n > 0, hi - lo, 0.0)  # empty rows: inf - inf never reaches a division
    return np.where(spread > 0, (s - lo) / np.where(spread > 0, spread, 1.0), 0.0)


def _norm_zscore(s, valid, n):
    """(s - mean) / std per query, population std; a query whose scores are all equal gets 0."""
    count = np.maximum(n, 1)
    mean = np.where(valid, s, 0.0).sum(axis=1, keepdims=True) / count
    dev = np.where(valid, s - mean, 0.0)
    std = np.sqrt((dev * dev).sum(axis=1, keepdims=True) / count)
    return np.where(std > 0, dev / np.where(std > 0, std, 1.0), 0.0)


def _norm_max(s, valid, n):
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


def _norm_rank(s, valid, n):
    """1 - (rank - 1) / n per query, ranks from 1 in the given order, n results in the list."""
    rank0 = np.arange(s.shape[1], dtype=np.float64)[None, :]
    return 1.0 - rank0 / np.maximum(n, 1)


NORMS = {
    "minmax": _norm_minmax,
    "zscore": _norm_zscore,
    "max": _norm_max,
    "rank": _norm_rank,
    None: _norm_none,
}

METHODS = ("wsum", "combsum", "combmnz")


def rrf(hits_list, r0: float = 60, weights=None, k: int | None = None) -> Hits:
    """Reciprocal rank fusion: score(d) = sum_i w_i / (r0 + rank_i(d)), ranks from 1.

    hits_list: Hits over the same queries, each best first. weights: one non-negative number
    per list (default all 1). k: results per query to keep (default: every fused document,
    padded to the longest union). Worked example (r0 = 60): rank 1 in one list and rank 10 in
    another gives 1/61 + 1/70 = 0.0307; rank 3 in both gives 2/63 = 0.0317.
    """
    lists = _check_lists(hits_list, finite=False)
    w = _check_weights(weights, len(lists))
    if isinstance(r0, bool) or not isinstance(r0, (int, float, np.integer, np.floating)):
        raise TypeError(f"r0 must be a number, got {type(r0).__name__}")
    if not (np.isfinite(r0) and r0 >= 0):
        raise ValueError(f"r0 must be a finite number >= 0, got {r0}")
    contribs = []
    for hits, wi in zip(lists, w):
        rank = np.arange(1, hits.k + 1, dtype=np.float64)[None, :]
        contribs.append(np.broadcast_to(wi / (r0 + rank), hits.ids.shape))
    return _fuse(lists, contribs, k, mnz=False)


def combine(hits_list, method: str = "wsum", norm: str | None = "minmax", weights=None,
            k: int | None = None) -> Hits:
    """Score fusion: normalise each list per query, then wsum, combsum or combmnz.

    method: "wsum" (sum of w_i * s_i; weights default to 1), "combsum" (sum of s_i) or
    "combmnz" (sum of s_i times the number of lists holding the document); the last two take
    no weights. norm: "minmax", "zscore", "max", "rank" or None (see NORMS). k as in ``rrf``.
    """
    check_choice(method, "method", METHODS)
    check_choice(norm, "norm", tuple(NORMS))
    lists = _check_lists(hits_list, finite=True)
    if method != "wsum" and weights is not None:
        raise ValueError(
            f"weights apply to method='wsum' only; {method!r} is unweighted by definition"
        )
    w = _check_weights(weights, len(lists))
    contribs = []
    for hits, wi in zip(lists, w):
        valid = hits.ids != PADDING_ID
        n = valid.sum(axis=1, keepdims=True)
        normed = NORMS[norm](hits.scores.astype(np.float64), valid, n)
        contribs.append(wi * np.where(valid, normed, 0.0))  # padding: 0, not -inf (0 * -inf is NaN)
    return _fuse(lists, contribs, k, mnz=method == "combmnz")


def _check_lists(hits_list, finite: bool) -> list[Hits]:
    if isinstance(hits_list, Hits) or not isinstance(hits_list, (list, tuple)):
        raise TypeError("hits_list must be a list of Hits (one per retriever)")
    if not hits_list:
        raise ValueError("hits_list is empty; pass at least one Hits")
    for i, hits in enumerate(hits_list):
        if not isinstance(hits, Hits):
            raise TypeError(f"hits_list[{i}] must be a Hits, got {type(hits).__name__}")
        if hits.nq != hits_list[0].nq:
            raise ValueError(
                f"hits_list[{i}] has {hits.nq} queries but hits_list[0] has {hits_list[0].nq}; "
                "every list must answer the same queries"
            )
        _check_rows(hits, f"hits_list[{i}]", finite)
    return list(hits_list)


def _check_rows(hits: Hits, name: str, finite: bool) -> None:
    ids = hits.ids
    valid = ids != PADDING_ID
    if (ids < PADDING_ID).any():
        row = int(np.argwhere(ids < PADDING_ID)[0, 0])
        raise ValueError(f"{name} row {row} holds a negative id other than the padding id -1")
    if (valid[:, 1:] & ~valid[:, :-1]).any():
        row = int(np.argwhere(valid[:, 1:] & ~valid[:, :-1])[0, 0])
        raise ValueError(f"{name} row {row} has padding (id -1) before a result; padding must come last")
    srt = np.sort(ids, axis=1)
    dup = (srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] != PADDING_ID)
    if dup.any():
        row, col = (int(x) for x in np.argwhere(dup)[0])
        raise ValueError(
            f"{name} row {row} holds id {int(srt[row, col])} twice; a list may rank a document once"
        )
    if finite and not np.isfinite(hits.scores[valid]).all():
        row = int(np.argwhere(valid & ~np.isfinite(hits.scores))[0, 0])
        raise ValueError(f"{name} row {row} has a NaN or infinite score for a real result")


def _check_weights(weights, m: int) -> np.ndarray:
    if weights is None:
        return np.ones(m)
    w = np.asarray(weights, dtype=np.float64) if not isinstance(weights, str) else None
    if w is None or w.shape != (m,):
        raise ValueError(f"weights must be {m} numbers, one per list, got {weights!r}")
    if not (np.isfinite(w).all() and (w >= 0).all()):
        raise ValueError(f"weights must be finite and >= 0, got {weights!r}")
    return w


def _fuse(lists: list[Hits], contribs: list[np.ndarray], k: int | None, mnz: bool) -> Hits:
    """Sum the contributions of each (query, id) over the lists and rank the sums."""
    if k is not None:
        k = check_positive_int(k, "k")
    rows, ids, scores = _fused_scores(lists, contribs, mnz)
    return _to_hits(rows, ids, scores, lists[0].nq, k)


def _fused_scores(lists, contribs, mnz: bool):
    """(row, id, fused float64 score) of every distinct (query, id), sorted by row then id.

    The contributions of one document are added smallest first, so two documents with the
    same contributions (from different lists) get bit-identical sums.
    """
    nq = lists[0].nq
    row_parts, id_parts, val_parts = [], [], []
    for hits, c in zip(lists, contribs):
        valid = hits.ids != PADDING_ID
        row_parts.append(np.broadcast_to(np.arange(nq)[:, None], hits.ids.shape)[valid])
        id_parts.append(hits.ids[valid])
        val_parts.append(np.asarray(c, dtype=np.float64)[valid])
    row = np.concatenate(row_parts)
    doc = np.concatenate(id_parts)
    val = np.concatenate(val_parts)
    order = np.lexsort((val, doc, row))
    row, doc, val = row[order], doc[order], val[order]
    first = np.ones(len(row), dtype=bool)
    first[1:] = (row[1:] != row[:-1]) | (doc[1:] != doc[:-1])
    group = np.cumsum(first) - 1
    total = np.bincount(group, weights=val) if len(group) else np.zeros(0)
    if mnz:
        total = total * np.bincount(group)
    return row[first], doc[first], total


def _to_hits(rows, ids, scores, nq: int, k: int | None) -> Hits:
    """Rank (row, id, score) triples into Hits: float32 score descending, ties by id ascending."""
    scores32 = scores.astype(np.float32)
    order = np.lexsort((ids, -scores32, rows))
    rows, ids, scores32 = rows[order], ids[order], scores32[order]
    counts = np.bincount(rows, minlength=nq)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    pos = np.arange(len(rows)) - starts[rows]
    width = k if k is not None else int(counts.max(initial=0))
    keep = pos < width
    out_ids = np.full((nq, width), PADDING_ID, dtype=np.int64)
    out_scores = np.full((nq, width), -np.inf, dtype=np.float32)
    out_ids[rows[keep], pos[keep]] = ids[keep]
    out_scores[rows[keep], pos[keep]] = scores32[keep]
    return Hits(out_scores, out_ids)
