"""Choosing a fusion parameter from labelled queries: per-query metrics of fused candidates, and
k-fold cross-validation of a grid search over them (``fusion.tune`` composes the two).

Cross-validation answers "how good is the value this procedure picks, on queries it did not
see": each fold's value is chosen on the other folds' queries only and scored on its own, so every
query is scored exactly once, by a value chosen without it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..hits import PADDING_ID, Hits


@dataclass(frozen=True)
class Tuning:
    """The outcome of ``fusion.tune``.

    setting: the FusionSetting with the value best on all the labelled queries (pass it to
    HybridRetriever(fusion=...)). grid / mean_by_value: each candidate value and its mean metric
    over all labelled queries. fold_values: the value each fold chose on its training queries;
    fold_scores: the mean metric of each fold's held-out queries at that value; cv_score: the
    mean over all queries of their held-out values. qids: the labelled queries, in the order of
    ``folds`` (positions into qids, one array of held-out queries per fold). settings: every
    FusionSetting searched (aligned with grid); fold_settings: the one each fold chose.
    """

    setting: object
    parameter: str
    metric: str
    grid: np.ndarray
    mean_by_value: np.ndarray
    fold_values: np.ndarray
    fold_scores: np.ndarray
    cv_score: float
    qids: np.ndarray
    folds: list
    settings: tuple = ()
    fold_settings: tuple = ()

    @property
    def value(self) -> float:
        return float(getattr(self.setting, self.parameter))

    @property
    def spread(self) -> dict:
        """How much the folds disagree: the range of their chosen values and the standard
        deviation of their held-out scores."""
        return {f"{self.parameter}_min": float(self.fold_values.min()),
                f"{self.parameter}_max": float(self.fold_values.max()),
                "score_std": float(self.fold_scores.std())}

    def summary(self) -> str:
        chosen = ", ".join(s.describe() for s in self.fold_settings) if self.fold_settings \
            else ", ".join(f"{v:g}" for v in self.fold_values)
        return (f"{self.setting.describe()} ({self.metric} {self.mean_by_value.max():.3f} on "
                f"{len(self.qids)} labelled queries); {len(self.folds)}-fold cross-validation: "
                f"{self.metric} {self.cv_score:.3f} held out (fold std {self.fold_scores.std():.3f}), "
                f"folds chose {chosen}")


def make_folds(n: int, n_folds: int, seed: int) -> list:
    """n positions shuffled by seed and cut into n_folds parts of sizes differing by at most 1."""
    if isinstance(n_folds, bool) or not isinstance(n_folds, (int, np.integer)):
        raise TypeError(f"folds must be an integer, got {type(n_folds).__name__}")
    if not 2 <= n_folds <= n:
        raise ValueError(f"folds must be between 2 and the number of labelled queries ({n}), "
                         f"got {n_folds}")
    perm = np.random.default_rng(seed).permutation(n)
    return [np.sort(part) for part in np.array_split(perm, n_folds)]


def cross_validate(per_query: np.ndarray, folds: list) -> tuple:
    """(chosen grid index per fold, held-out value per query) of a grid search.

    per_query: [n_values, n_queries] metric of each query at each grid value. A fold's index is
    the best mean over the queries outside the fold (ties: the first grid value); its queries
    are then scored at that index.
    """
    n_values, n = per_query.shape
    chosen = np.empty(len(folds), dtype=np.int64)
    held_out = np.full(n, np.nan)
    for f, test in enumerate(folds):
        train = np.ones(n, dtype=bool)
        train[test] = False
        chosen[f] = int(np.argmax(per_query[:, train].mean(axis=1)))
        held_out[test] = per_query[chosen[f], test]
    return chosen, held_out


def doc_level_run(hits: Hits, docids, qids):
    """A Run from fused Hits, ids mapped to documents; a document several ids map to (its
    chunks) counts once, at its best-ranked id. Scores follow the rank (evaluate as ranked)."""
    from ..evaluate import Run

    valid = hits.ids != PADDING_ID
    rows = np.broadcast_to(np.arange(hits.nq)[:, None], hits.ids.shape)[valid]
    ids = hits.ids[valid]
    if docids is None:
        docs = ids.astype(str)
    elif isinstance(docids, dict):
        docs = np.array([str(docids[i]) for i in ids.tolist()], dtype=str)
    else:
        table = np.asarray([str(d) for d in docids])
        if len(ids) and ids.max() >= len(table):
            raise ValueError(f"docids has {len(table)} entries but the candidates hold id {ids.max()}")
        docs = table[ids]
    vocab, codes = np.unique(docs, return_inverse=True)
    _, first = np.unique(rows * np.int64(max(len(vocab), 1)) + codes.ravel(), return_index=True)
    first = np.sort(first)  # row-major order: rank order within each query
    rank = np.arange(len(rows))
    return Run.from_arrays(np.asarray(qids, dtype=str), rows[first], docs[first],
                           -rank[first].astype(np.float64))


def per_query_metric(hits: Hits, qrels, metric: str, qids, docids):
    """(labelled qids, per-query metric, per-query recall of every candidate) of fused Hits."""
    from ..evaluate import evaluate

    run = doc_level_run(hits, docids, qids)
    try:
        ev = evaluate(run, qrels, [metric, f"recall@{max(hits.k, 1)}"], ties="as_ranked")
    except ValueError as err:
        if "no query is in both" in str(err):
            raise ValueError("qrels judge none of the candidates' queries; qids must name the "
                             "rows of the candidate Hits as the qrels name them") from None
        raise
    return ev.qids, ev.per_query[metric], ev.per_query[f"recall@{max(hits.k, 1)}"]
