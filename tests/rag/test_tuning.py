"""fusion.tune: grid search with k-fold cross-validation on labelled queries."""

from __future__ import annotations

import numpy as np
import pytest

from ragcore.hits import Hits
from ragcore.rag import fusion
from ragcore.rag.tuning import cross_validate, doc_level_run, make_folds


def ranked(scores: np.ndarray) -> Hits:
    """Hits of every document (ids 0..n-1 per row), best first, ties by id."""
    order = np.lexsort((np.broadcast_to(np.arange(scores.shape[1]), scores.shape), -scores), axis=1)
    return Hits(np.take_along_axis(scores, order, 1).astype(np.float32), order.astype(np.int64))


def planted(alpha: float, nq: int = 200, n: int = 30, noise: float = 0.0, seed: int = 0):
    """Dense and sparse scores in [0, 1]; the relevant document of each query is the best of
    alpha * dense + (1 - alpha) * sparse (plus noise)."""
    rng = np.random.default_rng(seed)
    dense = rng.random((nq, n)).astype(np.float32).astype(np.float64)
    sparse = rng.random((nq, n)).astype(np.float32).astype(np.float64)
    truth = alpha * dense + (1 - alpha) * sparse + noise * rng.standard_normal((nq, n))
    qrels = {str(q): {str(int(d)): 1} for q, d in enumerate(truth.argmax(axis=1))}
    return [ranked(dense), ranked(sparse)], qrels


def test_recovers_a_planted_optimum():
    candidates, qrels = planted(0.3)
    t = fusion.tune(candidates, qrels, metric="mrr@10", norm=None)
    assert t.setting == fusion.FusionSetting("convex", alpha=0.3, norm=None)
    assert t.value == 0.3 and t.mean_by_value.max() == 1.0
    assert (t.fold_values == 0.3).all() and t.cv_score == 1.0
    assert t.mean_by_value[list(t.grid).index(0.0)] < 0.9 and t.mean_by_value[-1] < 0.9
    assert "convex(alpha=0.3, norm=None)" in t.summary()


def test_recovers_a_planted_optimum_under_theoretical_normalisation():
    # BM25-like sparse scores: theoretical min-max divides by the row's best, the lower bound is 0.
    candidates, qrels = planted(0.7, seed=1)
    t = fusion.tune(candidates, qrels, lower_bounds=(0.0, 0.0))
    assert abs(t.value - 0.7) <= 0.1 and np.all(np.abs(t.fold_values - 0.7) <= 0.15)


def test_a_list_of_norms_searches_each_and_finds_the_planted_one():
    # The truth is 0.3 * minmax(dense) + 0.7 * minmax(sparse), dense squeezed into [0.5, 0.6].
    rng = np.random.default_rng(4)
    dense, sparse = 0.5 + 0.1 * rng.random((150, 20)), rng.random((150, 20))

    def mm(x):
        return (x - x.min(1, keepdims=True)) / np.ptp(x, axis=1, keepdims=True)

    dense, sparse = dense.astype(np.float32).astype(np.float64), sparse.astype(np.float32).astype(np.float64)
    truth = 0.3 * mm(dense) + 0.7 * mm(sparse)
    qrels = {str(q): {str(int(d)): 1} for q, d in enumerate(truth.argmax(axis=1))}
    t = fusion.tune([ranked(dense), ranked(sparse)], qrels, metric="mrr@10",
                    norm=["theoretical", "minmax"], lower_bounds=(0.0, 0.0))
    assert t.setting == fusion.FusionSetting("convex", alpha=0.3, norm="minmax", lower_bounds=(0.0, 0.0))
    assert len(t.settings) == 2 * len(fusion.ALPHA_GRID) == len(t.mean_by_value)
    assert all(s.norm == "minmax" for s in t.fold_settings)
    theoretical_best = max(m for m, s in zip(t.mean_by_value, t.settings) if s.norm == "theoretical")
    assert theoretical_best < t.mean_by_value.max() == 1.0


def test_cross_validation_never_scores_a_query_it_tuned_on():
    # Query q scores 1 at grid value q only: a value chosen without query q gives it 0, so the
    # held-out scores are all 0 exactly when no fold tuned on its own queries.
    n = 12
    per_query = np.eye(n)
    folds = make_folds(n, 4, seed=3)
    chosen, fold_scores, pooled = cross_validate(per_query[None], folds)
    assert (fold_scores == 0).all() and pooled == 0
    for f, test in enumerate(folds):
        assert chosen[f] not in test
    # The same with two metrics and the worst-gain criterion against a baseline of zeros.
    chosen, fold_scores, pooled = cross_validate(np.stack([per_query, per_query]), folds,
                                                 "worst_gain", np.zeros((2, 1, n)))
    assert (fold_scores == 0).all() and pooled == 0
    assert all(chosen[f] not in test for f, test in enumerate(folds))
    # Tuned on everything, the first query's own value wins: the same matrix then scores 1 there.
    assert per_query[int(np.argmax(per_query.mean(axis=1))), 0] == 1


def test_folds_partition_the_queries():
    folds = make_folds(23, 5, seed=0)
    assert sorted(np.concatenate(folds).tolist()) == list(range(23))
    assert sorted(len(f) for f in folds) == [4, 4, 5, 5, 5]
    assert [f.tolist() for f in folds] == [f.tolist() for f in make_folds(23, 5, seed=0)]


def test_each_fold_chooses_what_tuning_on_its_training_queries_alone_chooses():
    candidates, qrels = planted(0.4, nq=60, noise=0.3, seed=2)
    t = fusion.tune(candidates, qrels, metric="ndcg@10", norm="minmax", folds=3, seed=5)
    assert len(set(t.fold_values.tolist())) >= 1
    for test, value in zip(t.folds, t.fold_values):
        train = np.setdiff1d(np.arange(60), test)
        sub = [h[train] for h in candidates]
        sub_qrels = {str(i): qrels[str(q)] for i, q in enumerate(train)}
        alone = fusion.tune(sub, sub_qrels, metric="ndcg@10", norm="minmax", folds=2)
        assert alone.value == value
    held = [t.fold_scores[f] * len(p) for f, p in enumerate(t.folds)]
    assert t.cv_score == pytest.approx(sum(held) / 60)


def test_rrf_tunes_r0():
    candidates, qrels = planted(0.5, nq=40)
    t = fusion.tune(candidates, qrels, method="rrf", grid=[1, 60], folds=2)
    assert t.parameter == "r0" and t.setting.method == "rrf" and t.value in (1, 60)
    assert t.mean_by_value.shape == (2,)


def test_chunks_of_one_document_count_once_at_the_best_rank():
    hits = Hits(np.array([[3.0, 2.0, 1.0, 0.5]], np.float32), np.array([[5, 7, 6, 2]]))
    run = doc_level_run(hits, ["a", "a", "b", "c", "c", "x", "x", "y"], ["q"])
    assert run.to_dict() == {"q": {"x": -0.0, "y": -1.0, "b": -3.0}}


def test_bad_input_is_refused():
    candidates, qrels = planted(0.5, nq=10)
    with pytest.raises(ValueError, match="no relevant document of the qrels is among the candidates"):
        fusion.tune(candidates, {str(q): {"999": 1} for q in range(10)}, norm=None)
    with pytest.raises(ValueError, match="qrels judge none of the candidates' queries"):
        fusion.tune(candidates, {"other": {"1": 1}}, norm=None)
    with pytest.raises(ValueError, match=r"alpha must be in \[0, 1\]"):
        fusion.tune(candidates, qrels, grid=[0.5, 1.5], norm=None)
    with pytest.raises(ValueError, match="folds must be between 2 and the number of labelled queries"):
        fusion.tune(candidates, qrels, folds=11, norm=None)
    with pytest.raises(ValueError, match="unknown method 'wsum'"):
        fusion.tune(candidates, qrels, method="wsum")
    with pytest.raises(TypeError, match=r"candidate_hits must be \[dense_hits, sparse_hits\]"):
        fusion.tune(candidates[0], qrels)
    with pytest.raises(ValueError, match="qids has 3 ids for 10 candidate rows"):
        fusion.tune(candidates, qrels, qids=["a", "b", "c"])
    with pytest.raises(ValueError, match="unknown metric|metric"):
        fusion.tune(candidates, qrels, metric="ndgc@10", norm=None)


def rrf_planted(r0: float, nq: int = 200, n: int = 30, seed: int = 0):
    """Random dense and sparse orders; the relevant document of each query is the best of
    1 / (r0 + dense rank) + 1 / (r0 + sparse rank), computed here from the ranks alone."""
    rng = np.random.default_rng(seed)
    dense = rng.random((nq, n)).astype(np.float32).astype(np.float64)
    sparse = rng.random((nq, n)).astype(np.float32).astype(np.float64)
    candidates = [ranked(dense), ranked(sparse)]
    truth = np.zeros((nq, n))
    for hits in candidates:
        rank = np.empty((nq, n))
        np.put_along_axis(rank, hits.ids, np.arange(1, n + 1, dtype=np.float64)[None, :], 1)
        truth += 1.0 / (r0 + rank)
    qrels = {str(q): {str(int(d)): 1} for q, d in enumerate(truth.argmax(axis=1))}
    return candidates, qrels


BOTH = ("rrf", "convex")


def test_searching_both_methods_recovers_a_planted_convex_optimum():
    candidates, qrels = planted(0.3)
    t = fusion.tune(candidates, qrels, metric="mrr@10", method=BOTH, norm=None)
    assert t.setting == fusion.FusionSetting("convex", alpha=0.3, norm=None)
    assert t.parameter == "alpha" and t.value == 0.3 and t.cv_score == 1.0
    assert all(s == t.setting for s in t.fold_settings)
    assert len(t.settings) == len(fusion.R0_GRID) + len(fusion.ALPHA_GRID)
    rrf_best = max(m for m, s in zip(t.mean_by_value, t.settings) if s.method == "rrf")
    assert rrf_best < 0.9
    assert t.spread == {"rrf_folds": 0, "convex_folds": 5, "alpha_min": 0.3, "alpha_max": 0.3,
                        "score_std": 0.0}


def test_searching_both_methods_recovers_a_planted_rrf_optimum():
    candidates, qrels = rrf_planted(5)
    t = fusion.tune(candidates, qrels, metric="mrr@10", method=BOTH,
                    norm=["theoretical", "minmax", "zscore"], lower_bounds=(0.0, 0.0))
    assert t.setting == fusion.FusionSetting("rrf", r0=5)
    assert t.parameter == "r0" and t.value == 5 and t.cv_score == 1.0
    assert t.spread["rrf_folds"] == 5 and t.spread["r0_min"] == t.spread["r0_max"] == 5
    by = {s: m for s, m in zip(t.settings, t.mean_by_value)}
    assert by[fusion.FusionSetting("rrf", r0=2)] < 1 and by[fusion.FusionSetting("rrf", r0=10)] < 1
    assert max(m for s, m in by.items() if s.method == "convex") < 1
    assert "rrf(r0=5)" in t.summary() and f"best of {len(t.settings)} settings" in t.summary()


def test_each_fold_of_a_two_method_search_chooses_from_its_training_queries_alone():
    candidates, qrels = planted(0.5, nq=60, noise=0.4, seed=7)
    grid = {"rrf": [1, 10, 60], "convex": [0.2, 0.5, 0.8]}
    t = fusion.tune(candidates, qrels, metric="ndcg@10", method=BOTH, grid=grid,
                    norm=["minmax", "zscore"], folds=4, seed=1)
    assert len(t.settings) == 3 + 3 * 2
    for test, chosen in zip(t.folds, t.fold_settings):
        train = np.setdiff1d(np.arange(60), test)
        sub_qrels = {str(i): qrels[str(q)] for i, q in enumerate(train)}
        alone = fusion.tune([h[train] for h in candidates], sub_qrels, metric="ndcg@10",
                            method=BOTH, grid=grid, norm=["minmax", "zscore"], folds=2)
        assert alone.setting == chosen
    # The held-out score of each fold is its queries' metric at the fold's choice, nothing else.
    for test, chosen, score in zip(t.folds, t.fold_settings, t.fold_scores):
        sub_qrels = {str(i): qrels[str(q)] for i, q in enumerate(test)}
        only = fusion.tune([h[test] for h in candidates], sub_qrels, metric="ndcg@10",
                           method=chosen.method, grid=[chosen.value],
                           norm=chosen.norm, folds=2)
        assert only.mean_by_value[0] == pytest.approx(score)


def test_several_metrics_are_averaged_per_query():
    candidates, qrels = planted(0.4, nq=50, noise=0.3, seed=3)
    kw = dict(method="rrf", grid=[1, 5, 60], folds=2)
    both = fusion.tune(candidates, qrels, metric=("recall@10", "mrr@10"), **kw)
    rec = fusion.tune(candidates, qrels, metric="recall@10", **kw)
    mrr = fusion.tune(candidates, qrels, metric="mrr@10", **kw)
    np.testing.assert_allclose(both.mean_by_value, (rec.mean_by_value + mrr.mean_by_value) / 2)
    assert both.metric == "mean(recall@10, mrr@10)" and not np.allclose(rec.mean_by_value,
                                                                         mrr.mean_by_value)


def test_bad_method_grid_and_metric_lists_are_refused():
    candidates, qrels = planted(0.5, nq=10)
    with pytest.raises(ValueError, match="method lists a method twice"):
        fusion.tune(candidates, qrels, method=["rrf", "rrf"])
    with pytest.raises(ValueError, match="method must be 'convex', 'rrf' or a list of them"):
        fusion.tune(candidates, qrels, method=[])
    with pytest.raises(ValueError, match="unknown method 'mmr'"):
        fusion.tune(candidates, qrels, method=["rrf", "mmr"])
    with pytest.raises(TypeError, match="with several methods, grid must be a dict"):
        fusion.tune(candidates, qrels, method=BOTH, grid=[1, 2])
    with pytest.raises(ValueError, match=r"grid names methods not searched: \['rrf'\]"):
        fusion.tune(candidates, qrels, method="convex", grid={"rrf": [1]})
    with pytest.raises(ValueError, match="the grid of rrf must be a non-empty list"):
        fusion.tune(candidates, qrels, method=BOTH, grid={"rrf": []})
    with pytest.raises(ValueError, match="r0 must be a finite number >= 0"):
        fusion.tune(candidates, qrels, method=BOTH, grid={"rrf": [-1]}, norm=None)
    with pytest.raises(ValueError, match="metric must be a metric name or a list of them"):
        fusion.tune(candidates, qrels, metric=[], norm=None)
    with pytest.raises(ValueError, match="metric must be a metric name or a list of them"):
        fusion.tune(candidates, qrels, metric=10, norm=None)


def test_worst_gain_scores_the_smaller_gain_over_the_better_list_alone():
    from ragcore.rag.tuning import best, criterion_scores

    means = np.array([[0.80, 0.70, 0.75], [0.40, 0.50, 0.45]])   # recall, MRR of 3 settings
    base = np.array([[0.72, 0.50], [0.43, 0.30]])                # dense, sparse alone
    np.testing.assert_allclose(criterion_scores("worst_gain", means, base), [-0.03, -0.02, 0.02])
    np.testing.assert_allclose(criterion_scores("mean", means, base), [0.6, 0.6, 0.6])
    assert best("worst_gain", means, base) == 2 and best("mean", means, base) == 0
    # Equal worst gains (0.02): the larger mean wins, whatever the order.
    tied = np.array([[0.75, 0.80], [0.45, 0.45]])
    assert best("worst_gain", tied, base) == 1 and best("worst_gain", tied[:, ::-1], base) == 0


def test_worst_gain_recovers_a_planted_optimum_and_matches_the_metrics_it_combines():
    from ragcore.evaluate import evaluate

    candidates, qrels = planted(0.3, nq=80)
    kw = dict(method=BOTH, grid={"rrf": [1, 60], "convex": [0.0, 0.3, 0.6, 1.0]}, norm=None,
              folds=4)
    t = fusion.tune(candidates, qrels, metric=("recall@10", "mrr@10"), criterion="worst_gain", **kw)
    assert t.setting == fusion.FusionSetting("convex", alpha=0.3, norm=None)
    assert all(s == t.setting for s in t.fold_settings)
    assert t.label == "worst_gain(recall@10, mrr@10)" and t.label in t.summary()
    # Each setting's criterion is min over the metrics of (its mean - the better list's mean),
    # the lists evaluated here on their own.
    alone = {m: [evaluate(h, qrels, [m], qids=[str(q) for q in range(80)]).mean[m]
                 for h in candidates] for m in ("recall@10", "mrr@10")}
    per_metric = {m: fusion.tune(candidates, qrels, metric=m, **kw).mean_by_value for m in alone}
    want = np.minimum(*(per_metric[m] - max(alone[m]) for m in alone))
    np.testing.assert_allclose(t.mean_by_value, want)
    assert t.cv_score == pytest.approx(min(1.0 - max(alone[m]) for m in alone))


def test_an_unknown_criterion_is_refused():
    candidates, qrels = planted(0.5, nq=10)
    with pytest.raises(ValueError, match="unknown criterion 'max'"):
        fusion.tune(candidates, qrels, criterion="max")


def test_worst_gain_with_a_query_one_list_cannot_answer():
    # Query 1 has no BM25 result: sparse alone scores 0 there (not dropped), so the better list
    # alone is dense (recall 1, MRR 0.5) and only a fusion with MRR 1 and recall 1 ties it on
    # recall while gaining on MRR: alpha 0 (BM25's order, then dense's documents by id).
    dense = Hits(np.array([[0.9, 0.5], [0.8, 0.1]], np.float32), np.array([[0, 1], [1, 0]]))
    sparse = Hits(np.array([[3.0, 1.0], [-np.inf, -np.inf]], np.float32), np.array([[1, 0], [-1, -1]]))
    t = fusion.tune([dense, sparse], {"0": {"1": 1}, "1": {"0": 1}}, metric=("recall@10", "mrr@10"),
                    criterion="worst_gain", folds=2, norm="minmax")
    assert len(t.qids) == 2 and t.setting == fusion.FusionSetting("convex", alpha=0.0, norm="minmax")
    assert t.mean_by_value.max() == 0.0
