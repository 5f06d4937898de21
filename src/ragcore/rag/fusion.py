"""Fusing several result lists into one: reciprocal rank fusion and score fusion.

Every function takes a list of ``Hits`` over the same queries (each may have its own k)
and fuses all queries at once. Padding (id -1) is ignored; a document missing from a list
contributes nothing from that list; a document listed twice in one row is an error.

Fused scores are computed in float64 and returned as float32 ``Hits``; the order is that of
the returned float32 scores, ties by id ascending, as everywhere in ragcore.

Definitions (each agrees with ranx's ``fuse`` where ranx offers it, see the README):

- ``rrf``: sum over lists of ``w_i / (r0 + rank_i)``, ranks counted from 1 (Cormack, Clarke and
  Buettcher, SIGIR 2009); weights as in LangChain's EnsembleRetriever.
- ``combine``: each list is normalised per query (``NORMS``, in ``rag.normalize``), then fused
  (``METHODS``): ``wsum`` = sum of ``w_i * s_i``; ``combsum`` = sum of ``s_i``; ``combmnz`` = sum
  of ``s_i`` times the number of lists that hold the document (Fox and Shaw, TREC-2 1993).
- ``convex``: ``alpha * dense + (1 - alpha) * sparse`` of the normalised scores (Bruch, Gai and
  Ingber, ACM TOIS 2023), by default with their theoretical min-max normalisation; it is
  ``combine(method="wsum", weights=[alpha, 1 - alpha])``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._util.arrays import check_choice, check_positive_int
from ..hits import PADDING_ID, Hits
from .normalize import LOWER_BOUNDS, NORMS, lower_bounds as _lower_bounds, normalise
from .tuning import (CRITERIA, Tuning, best, criterion_scores, cross_validate, make_folds,
                     metric_list, metric_name, per_query_metrics)

__all__ = ["ALPHA_GRID", "DEFAULT_GRIDS", "LOWER_BOUNDS", "METHODS", "NORMS", "R0_GRID",
           "FusionSetting", "combine", "convex", "rrf", "tune"]


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
    r0 = check_r0(r0)
    contribs = []
    for hits, wi in zip(lists, w):
        rank = np.arange(1, hits.k + 1, dtype=np.float64)[None, :]
        contribs.append(np.broadcast_to(wi / (r0 + rank), hits.ids.shape))
    return _fuse(lists, contribs, k, mnz=False)


def combine(hits_list, method: str = "wsum", norm: str | None = "minmax", weights=None,
            k: int | None = None, lower_bounds=None) -> Hits:
    """Score fusion: normalise each list per query, then wsum, combsum or combmnz.

    method: "wsum" (sum of w_i * s_i; weights default to 1), "combsum" (sum of s_i) or
    "combmnz" (sum of s_i times the number of lists holding the document); the last two take
    no weights. norm: "minmax", "theoretical", "zscore", "max", "rank" or None (see
    ``rag.normalize``). lower_bounds: for norm="theoretical" only, the lowest score each list's
    retriever can give (a number or a name of LOWER_BOUNDS: "bm25" 0, "cosine" -1). A document
    missing from a list gets 0 from it. k as in ``rrf``.
    """
    check_choice(method, "method", METHODS)
    check_choice(norm, "norm", tuple(NORMS))
    lists = _check_lists(hits_list, finite=True)
    if method != "wsum" and weights is not None:
        raise ValueError(
            f"weights apply to method='wsum' only; {method!r} is unweighted by definition"
        )
    w = _check_weights(weights, len(lists))
    bounds = _lower_bounds(lower_bounds, len(lists), norm)
    contribs = []
    for i, (hits, wi, lower) in enumerate(zip(lists, w, bounds)):
        valid = hits.ids != PADDING_ID
        contribs.append(wi * normalise(hits.scores, valid, norm, lower, f"hits_list[{i}]"))
    return _fuse(lists, contribs, k, mnz=method == "combmnz")


def convex(dense: Hits, sparse: Hits, alpha: float = 0.5, norm: str | None = "theoretical",
           lower_bounds=("cosine", "bm25"), k: int | None = None) -> Hits:
    """Convex combination ``alpha * norm(dense) + (1 - alpha) * norm(sparse)`` per query.

    alpha: in [0, 1]; 1 is dense alone, 0 sparse alone (documents of the other list stay, at
    the end). norm: as for ``combine``, default "theoretical" (Bruch et al.'s theoretical
    min-max: ``(s - lower) / (best - lower)``). lower_bounds: (dense, sparse), used by
    norm="theoretical" only; the default suits cosine (or inner product of unit vectors) and
    BM25. Worked example (theoretical): dense cosines (0.8, 0.6), BM25 scores (10, 5), alpha
    0.5: a document first in both gets 0.5 * 1 + 0.5 * 1 = 1; one with cosine 0.6 and BM25 5
    gets 0.5 * 1.6 / 1.8 + 0.5 * 0.5 = 0.694.
    """
    alpha = check_alpha(alpha)
    return combine([dense, sparse], method="wsum", norm=norm, weights=[alpha, 1.0 - alpha], k=k,
                   lower_bounds=lower_bounds if norm == "theoretical" else None)


def check_r0(r0) -> float:
    if isinstance(r0, bool) or not isinstance(r0, (int, float, np.integer, np.floating)):
        raise TypeError(f"r0 must be a number, got {type(r0).__name__}")
    if not (np.isfinite(r0) and r0 >= 0):
        raise ValueError(f"r0 must be a finite number >= 0, got {r0}")
    return float(r0)


def check_alpha(alpha) -> float:
    """alpha as a float in [0, 1], or a clear error."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)):
        raise TypeError(f"alpha must be a number in [0, 1], got {type(alpha).__name__}")
    if not 0.0 <= alpha <= 1.0:  # also refuses NaN
        raise ValueError(f"alpha must be in [0, 1] (the dense weight), got {alpha}")
    return float(alpha)


@dataclass(frozen=True)
class FusionSetting:
    """How to fuse a dense and a sparse list: what ``tune`` chooses and HybridRetriever takes.

    method "rrf" (uses r0) or "convex" (uses alpha, norm and lower_bounds).
    """

    method: str = "convex"
    alpha: float = 0.5
    r0: float = 60
    norm: str | None = "theoretical"
    lower_bounds: tuple = ("cosine", "bm25")

    def __post_init__(self):
        check_choice(self.method, "method", ("rrf", "convex"))
        check_choice(self.norm, "norm", tuple(NORMS))
        object.__setattr__(self, "alpha", check_alpha(self.alpha))
        object.__setattr__(self, "r0", check_r0(self.r0))
        if self.norm == "theoretical":
            _lower_bounds(self.lower_bounds, 2, self.norm)
        object.__setattr__(self, "lower_bounds", tuple(self.lower_bounds))

    def fuse(self, dense: Hits, sparse: Hits, k: int | None = None) -> Hits:
        if self.method == "rrf":
            return rrf([dense, sparse], r0=self.r0, k=k)
        return convex(dense, sparse, self.alpha, self.norm, self.lower_bounds, k)

    @property
    def parameter(self) -> str:
        """The name of the method's tuned number: "r0" for RRF, "alpha" for convex."""
        return "r0" if self.method == "rrf" else "alpha"

    @property
    def value(self) -> float:
        return getattr(self, self.parameter)

    def describe(self) -> str:
        if self.method == "rrf":
            return f"rrf(r0={self.r0:g})"
        return f"convex(alpha={self.alpha:g}, norm={self.norm!r})"


ALPHA_GRID = tuple(np.round(np.linspace(0.0, 1.0, 21), 2).tolist())  # 0, 0.05, ..., 1
R0_GRID = (1, 2, 5, 10, 20, 40, 60, 100, 200)
DEFAULT_GRIDS = {"convex": ALPHA_GRID, "rrf": R0_GRID}


def tune(candidate_hits, qrels, metric="ndcg@10", method="convex", grid=None,
         folds: int = 5, seed: int = 0, qids=None, docids=None, norm: str | None = "theoretical",
         lower_bounds=("cosine", "bm25"), criterion: str = "mean") -> Tuning:
    """Choose the fusion of a dense and a sparse list by grid search on labelled queries, with
    k-fold cross-validation: convex fusion's alpha (and normalisation), RRF's r0, or both
    methods at once.

    candidate_hits: [dense, sparse], the two first-stage Hits of the labelled queries. qrels:
    ``{qid: {docid: grade}}`` (or Qrels / a TREC file); rows of the candidates the qrels do not
    judge are left out. metric: a ragcore.evaluate metric name, or several (e.g. ``("recall@10",
    "mrr@10")``). criterion: "mean" (the mean of the metrics, maximised) or "worst_gain" (the
    smallest, over the metrics, of the gain over the better of dense alone and sparse alone,
    maximised: a setting is preferred for beating both lists on every metric, not for a large
    gain on one bought with a loss on another). method: "convex" (grid of alpha, default
    ALPHA_GRID; norm and lower_bounds as for ``convex``; a list of norms searches every norm with
    every alpha), "rrf" (grid of r0, default R0_GRID) or a list of both, which searches every
    setting of each together and lets cross-validation choose the method too; grid is then a
    dict ``{method: values}`` (a method left out takes its default grid). folds, seed: the
    cross-validation split (queries shuffled by seed). qids: one id per row (default "0", "1",
    ...). docids: the document of each id (a sequence indexed by id or a dict); several ids of
    one document (its chunks) count once, at the best-ranked. Ties between settings go to the
    first searched (methods in the order given, then norms, then grid values); for
    "worst_gain", first to the larger mean of the metrics. Returns a Tuning
    (``.setting``, ``.summary()``, ``.spread``).
    """
    methods = _check_methods(method)
    metrics = metric_list(metric)
    check_choice(criterion, "criterion", CRITERIA)
    if not (isinstance(candidate_hits, (list, tuple)) and len(candidate_hits) == 2):
        raise TypeError("candidate_hits must be [dense_hits, sparse_hits]")
    dense, sparse = _check_lists(list(candidate_hits), finite="convex" in methods)
    settings = _grid_settings(methods, grid, norm, lower_bounds)
    qids = np.arange(dense.nq).astype(str) if qids is None else np.asarray(qids, dtype=str)
    if len(qids) != dense.nq:
        raise ValueError(f"qids has {len(qids)} ids for {dense.nq} candidate rows")

    def scored(hits):
        return per_query_metrics(hits, qrels, metrics, qids, docids)

    rows, reach = [], None
    for setting in settings:
        labelled, values, recall_all = scored(setting.fuse(dense, sparse))
        rows.append(values)
        reach = recall_all if reach is None else reach
    if not (reach > 0).any():
        raise ValueError("no relevant document of the qrels is among the candidates of any "
                         "labelled query; check that docids maps the candidates' ids to the "
                         "qrels' document ids")
    values = np.stack(rows, axis=1)  # [metric, setting, query]
    base = np.stack([scored(dense)[1], scored(sparse)[1]], axis=1) \
        if criterion == "worst_gain" else None
    parts = make_folds(values.shape[2], folds, seed)
    chosen, fold_scores, cv_score = cross_validate(values, parts, criterion, base)
    means = values.mean(axis=2)
    base_means = np.zeros((len(metrics), 0)) if base is None else base.mean(axis=2)
    overall = criterion_scores(criterion, means, base_means)
    return Tuning(setting=settings[best(criterion, means, base_means)], metric=metric_name(metrics),
                  criterion=criterion, settings=tuple(settings), mean_by_value=overall,
                  fold_settings=tuple(settings[i] for i in chosen), fold_scores=fold_scores,
                  cv_score=cv_score, qids=labelled, folds=parts)


def _check_methods(method) -> tuple:
    methods = (method,) if isinstance(method, str) else tuple(method) \
        if isinstance(method, (list, tuple)) else None
    if not methods:
        raise ValueError(f"method must be 'convex', 'rrf' or a list of them, got {method!r}")
    for m in methods:
        check_choice(m, "method", tuple(DEFAULT_GRIDS))
    if len(set(methods)) != len(methods):
        raise ValueError(f"method lists a method twice: {method!r}")
    return methods


def _grid_settings(methods: tuple, grid, norm, lower_bounds) -> list:
    """Every FusionSetting the search scores, in tie-breaking order."""
    if grid is not None and len(methods) > 1 and not isinstance(grid, dict):
        raise TypeError("with several methods, grid must be a dict {method: values} "
                        f"(e.g. {{'rrf': [1, 60]}}), got {type(grid).__name__}")
    grids = grid if isinstance(grid, dict) else {methods[0]: grid}
    unknown = set(grids) - set(methods)
    if unknown:
        raise ValueError(f"grid names methods not searched: {sorted(unknown)!r} (method={methods!r})")
    norms = list(norm) if isinstance(norm, (list, tuple)) else [norm]
    if not norms:
        raise ValueError("norm is an empty list; name at least one normalisation")
    settings = []
    for m in methods:
        values = grids.get(m)
        values = np.asarray(DEFAULT_GRIDS[m] if values is None else values, dtype=np.float64)
        if values.ndim != 1 or not len(values):
            raise ValueError(f"the grid of {m} must be a non-empty list of values, got {values!r}")
        if m == "rrf":
            settings += [FusionSetting("rrf", r0=v) for v in values.tolist()]
        else:
            settings += [FusionSetting("convex", alpha=v, norm=n, lower_bounds=lower_bounds)
                         for n in norms for v in values.tolist()]
    return settings


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
