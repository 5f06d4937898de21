"""ragcore.cli.bench: measure_latency, recall_vs_exact, Pareto fronts."""

import numpy as np
import pytest

import ragcore
from ragcore.cli.bench import measure_latency, recall_vs_exact
from ragcore.cli.bench.pareto import pareto_front
from ragcore.hits import Hits


class _Staged:
    """A retriever that reports stages, as IVFIndex does."""

    def __init__(self):
        self.calls = []
        self.last_stage_seconds = {}

    def search(self, queries, k):
        self.calls.append(len(queries))
        self.last_stage_seconds = {"first": 0.001, "second": 0.002}
        return Hits(np.zeros((len(queries), k), np.float32), np.zeros((len(queries), k), np.int64))


def test_measure_latency_reports_percentiles_qps_and_stages():
    retriever = _Staged()
    out = measure_latency(retriever, np.zeros((10, 4), np.float32), 3, warmup=2, repeats=5,
                          batch_sizes=(1, 4))
    assert set(out) == {1, 4}
    for batch, res in out.items():
        assert res["calls"] == 5 and res["qps"] > 0 and res["qps_mean"] > 0
        assert res["p50_ms"] <= res["p95_ms"] <= res["p99_ms"]
        assert set(res["stages"]) == {"first", "second"}
        assert res["stages"]["second"]["p50_ms"] == pytest.approx(2.0)
    assert retriever.calls == [1] * 7 + [4] * 7  # warm-up calls included, batches wrap


def test_measure_latency_takes_a_callable_and_a_real_index():
    x = np.random.default_rng(0).standard_normal((50, 8)).astype(np.float32)
    index = ragcore.IVFIndex(8, 4)
    index.train(x)
    index.add(x)
    out = measure_latency(index, x, 5, warmup=1, repeats=3, batch_sizes=(2,))
    assert set(out[2]["stages"]) == {"coarse", "scan", "rescore"}
    plain = measure_latency(lambda q, k: None, x, 5, warmup=0, repeats=2, batch_sizes=(1,))
    assert plain[1]["stages"] == {}


@pytest.mark.parametrize("kwargs, match", [
    ({"queries": np.zeros(4)}, "non-empty 2-D"), ({"repeats": 0}, "repeats >= 1"),
    ({"batch_sizes": (0,)}, "batch sizes must be >= 1"),
])
def test_measure_latency_checks_arguments(kwargs, match):
    args = {"retriever": _Staged(), "queries": np.zeros((3, 2)), "k": 1, **kwargs}
    with pytest.raises(ValueError, match=match):
        measure_latency(**args)


def test_recall_vs_exact_counts_overlap_and_ignores_padding():
    exact = np.array([[1, 2, 3, 4], [5, 6, -1, -1], [-1, -1, -1, -1]])
    approx = np.array([[4, 3, 9, 8], [6, 7, 5, -1], [1, 2, 3, 4]])
    # query 0: 2 of 4; query 1: 2 of 2 (padding is no result); query 2: left out
    assert recall_vs_exact(approx, exact, 4) == pytest.approx((0.5 + 1.0) / 2)
    assert recall_vs_exact(approx, exact, 2) == pytest.approx((0.0 + 0.5) / 2)
    hits = Hits(np.zeros((3, 4), np.float32), exact.astype(np.int64))
    assert recall_vs_exact(hits, hits, 4) == 1.0
    with pytest.raises(ValueError, match="k=5 exceeds"):
        recall_vs_exact(approx, exact, 5)
    with pytest.raises(ValueError, match="queries"):
        recall_vs_exact(approx[:2], exact, 4)


def test_pareto_front_keeps_the_undominated_points():
    points = [(0.5, 100.0), (0.9, 50.0), (0.8, 40.0), (0.95, 10.0), (0.9, 20.0), (0.4, 90.0)]
    assert pareto_front(points) == [(0.5, 100.0), (0.9, 50.0), (0.95, 10.0)]
