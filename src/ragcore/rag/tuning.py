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

    setting: the FusionSetting best on all the labelled queries (pass it to
    HybridRetriever(fusion=...)). settings / mean_by_value: every FusionSetting searched and its
    mean metric over all labelled queries. fold_settings: the setting each fold chose on its
    training queries; fold_scores: the mean metric of each fold's held-out queries at that
    setting; cv_score: the mean over all queries of their held-out values. qids: the labelled
    queries, in the order of ``folds`` (positions into qids, one array of held-out queries per
    fold).
    """

    setting: object
    metric: str
    settings: tuple
    mean_by_value: np.ndarray
    fold_settings: tuple
    fold_scores: np.ndarray
    cv_score: float
    qids: np.ndarray
    folds: list

    @property
    def parameter(self) -> str:
        """The chosen setting's tuned number: "alpha" (convex) or "r0" (RRF)."""
        return self.setting.parameter

    @property
    def value(self) -> float:
        return float(self.setting.value)

    @property
    def grid(self) -> np.ndarray:
        """The tuned number of each searched setting (alpha or r0, see ``settings``)."""
        return np.array([s.value for s in self.settings], dtype=np.float64)

    @property
    def fold_values(self) -> np.ndarray:
        return np.array([s.value for s in self.fold_settings], dtype=np.float64)

    @property
    def spread(self) -> dict:
        """How much the folds disagree: how many chose each method, the range of the values
        they chose (per method's parameter), and the standard deviation of their held-out
        scores."""
        out = {f"{m}_folds": sum(s.method == m for s in self.fold_settings)
               for m in dict.fromkeys(s.method for s in self.settings)}
        for s in self.fold_settings:
            low, high = f"{s.parameter}_min", f"{s.parameter}_max"
            out[low] = min(out.get(low, s.value), s.value)
            out[high] = max(out.get(high, s.value), s.value)
        out["score_std"] = float(self.fold_scores.std())
        return out

    def summary(self) -> str:
        chosen = ", ".join(s.describe() for s in self.fold_settings)
        return (f"{self.setting.describe()} ({self.metric} {self.mean_by_value.max():.3f} on "
                f"{len(self.qids)} labelled queries, best of {len(self.settings)} settings); "
                f"{len(self.folds)}-fold cross-validation: {self.metric} {self.cv_score:.3f} "
                f"held out (fold std {self.fold_scores.std():.3f}), folds chose {chosen}")


def metric_name(metric) -> str:
    """The criterion's name: a metric, or "mean(a, b)" of several."""
    metrics = _metric_list(metric)
    return metrics[0] if len(metrics) == 1 else f"mean({', '.join(metrics)})"


def _metric_list(metric) -> list:
    metrics = [metric] if isinstance(metric, str) else list(metric) \
        if isinstance(metric, (list, tuple)) else None
    if not metrics or not all(isinstance(m, str) for m in metrics):
        raise ValueError(f"metric must be a metric name or a list of them (e.g. 'ndcg@10' or "
                         f"['recall@10', 'mrr@10']), got {metric!r}")
    return metrics


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


def per_query_metric(hits: Hits, qrels, metric, qids, docids):
    """(labelled qids, per-query criterion, per-query recall of every candidate) of fused Hits;
    the criterion is the metric, or the mean of several metrics."""
    from ..evaluate import evaluate

    metrics = _metric_list(metric)
    reach = f"recall@{max(hits.k, 1)}"
    run = doc_level_run(hits, docids, qids)
    try:
        ev = evaluate(run, qrels, list(dict.fromkeys([*metrics, reach])), ties="as_ranked")
    except ValueError as err:
        if "no query is in both" in str(err):
            raise ValueError("qrels judge none of the candidates' queries; qids must name the "
                             "rows of the candidate Hits as the qrels name them") from None
        raise
    values = np.mean([np.asarray(ev.per_query[m], dtype=np.float64) for m in metrics], axis=0)
    return ev.qids, values, np.asarray(ev.per_query[reach])
