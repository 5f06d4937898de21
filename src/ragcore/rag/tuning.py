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
    criterion over all labelled queries (for "mean": its mean metric). fold_settings: the
    setting each fold chose on its training queries; fold_scores: the criterion of each fold's
    held-out queries at that setting; cv_score: the criterion over all queries, each at its own
    fold's choice ("mean": the mean of their held-out values; "worst_gain": see
    ``criterion_scores``). qids: the labelled queries, in the order of ``folds`` (positions
    into qids, one array of held-out queries per fold).
    """

    setting: object
    metric: str
    criterion: str
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

    @property
    def label(self) -> str:
        """The criterion in words, e.g. "ndcg@10" or "worst_gain(recall@10, mrr@10)"."""
        if self.criterion == "mean":
            return self.metric
        inner = self.metric[5:-1] if self.metric.startswith("mean(") else self.metric
        return f"{self.criterion}({inner})"

    def summary(self) -> str:
        chosen = ", ".join(s.describe() for s in self.fold_settings)
        return (f"{self.setting.describe()} ({self.label} {self.mean_by_value.max():.3f} on "
                f"{len(self.qids)} labelled queries, best of {len(self.settings)} settings); "
                f"{len(self.folds)}-fold cross-validation: {self.label} {self.cv_score:.3f} "
                f"held out (fold std {self.fold_scores.std():.3f}), folds chose {chosen}")


def metric_name(metric) -> str:
    """The criterion's name: a metric, or "mean(a, b)" of several."""
    metrics = metric_list(metric)
    return metrics[0] if len(metrics) == 1 else f"mean({', '.join(metrics)})"


def metric_list(metric) -> list:
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


CRITERIA = ("mean", "worst_gain")


def criterion_scores(criterion: str, means: np.ndarray, base_means: np.ndarray) -> np.ndarray:
    """The criterion of each setting from its mean metrics.

    means: [n_metrics, n_settings]; base_means: [n_metrics, n_base], the input lists alone.
    "mean": the mean over the metrics. "worst_gain": the smallest, over the metrics, of the
    gain over the better list alone (so a setting scores > 0 only if it beats both lists on
    every metric, as the hybrid's target asks); ``best`` breaks its ties by the mean.
    """
    if criterion == "mean":
        return means.mean(axis=0)
    return (means - base_means.max(axis=1, keepdims=True)).min(axis=0)


def best(criterion: str, means: np.ndarray, base_means: np.ndarray) -> int:
    """The setting with the best criterion; ties by the larger mean over the metrics, then the
    first."""
    primary = criterion_scores(criterion, means, base_means)
    order = np.lexsort((np.arange(len(primary)), -means.mean(axis=0), -primary))
    return int(order[0])


def cross_validate(values: np.ndarray, folds: list, criterion: str = "mean",
                   base: np.ndarray | None = None) -> tuple:
    """(chosen setting per fold, criterion of each fold's held-out queries, pooled criterion).

    values: [n_metrics, n_settings, n_queries] metric of each query under each setting; base:
    [n_metrics, n_base, n_queries] the same for the input lists alone ("worst_gain" only). A
    fold's setting is the one with the best criterion over the queries outside the fold (ties:
    the first); the fold's queries are then scored at that setting only. The pooled criterion
    scores every query at its own fold's choice, all queries together.
    """
    n_metrics, n_settings, n = values.shape
    base = np.zeros((n_metrics, 0, n)) if base is None else base
    chosen = np.empty(len(folds), dtype=np.int64)
    fold_scores = np.empty(len(folds))
    held_out = np.full((n_metrics, n), np.nan)
    for f, test in enumerate(folds):
        train = np.ones(n, dtype=bool)
        train[test] = False
        chosen[f] = best(criterion, values[:, :, train].mean(axis=2),
                         base[:, :, train].mean(axis=2))
        held_out[:, test] = values[:, chosen[f], test]
        fold_scores[f] = criterion_scores(criterion, held_out[:, test].mean(axis=1)[:, None],
                                          base[:, :, test].mean(axis=2))[0]
    pooled = criterion_scores(criterion, held_out.mean(axis=1)[:, None], base.mean(axis=2))[0]
    return chosen, fold_scores, float(pooled)


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


def per_query_metrics(hits: Hits, qrels, metrics: list, qids, docids):
    """(labelled qids, [n_metrics, n_labelled] values, per-query recall of every candidate)."""
    from ..evaluate import evaluate

    reach = f"recall@{max(hits.k, 1)}"
    run = doc_level_run(hits, docids, qids)
    try:
        ev = evaluate(run, qrels, list(dict.fromkeys([*metrics, reach])), ties="as_ranked")
    except ValueError as err:
        if "no query is in both" in str(err):
            raise ValueError("qrels judge none of the candidates' queries; qids must name the "
                             "rows of the candidate Hits as the qrels name them") from None
        raise
    values = np.vstack([np.asarray(ev.per_query[m], dtype=np.float64) for m in metrics])
    return ev.qids, values, np.asarray(ev.per_query[reach])
