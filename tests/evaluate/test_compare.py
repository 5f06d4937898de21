"""compare(): gained / lost queries and the exact two-sided sign test."""

from __future__ import annotations

import numpy as np
import pytest

from ragcore.evaluate import compare, evaluate, sign_test


def test_sign_test_worked_examples():
    assert sign_test(7, 2) == pytest.approx(0.1797, abs=1e-4)  # 2 * 46 / 512
    assert round(sign_test(7, 2), 2) == 0.18
    assert sign_test(8, 1) == pytest.approx(20 / 512)
    assert round(sign_test(8, 1), 2) == 0.04
    assert sign_test(0, 0) == 1.0 and sign_test(3, 3) == 1.0
    assert sign_test(2, 7) == sign_test(7, 2)


def test_sign_test_matches_scipy_when_installed():
    stats = pytest.importorskip("scipy.stats")
    for gained, lost in [(7, 2), (8, 1), (30, 12), (0, 5), (50, 50)]:
        want = stats.binomtest(gained, gained + lost, 0.5).pvalue
        assert sign_test(gained, lost) == pytest.approx(want, rel=1e-12)


def test_compare_arrays():
    a = np.array([0.5] * 10)
    b = np.array([0.9] * 7 + [0.1] * 2 + [0.5])
    got = compare(a, b)
    assert got.gained.tolist() == list(range(7)) and got.lost.tolist() == [7, 8] and got.tied == 1
    assert got.p_value == pytest.approx(92 / 512)


def test_compare_dicts_and_evaluations():
    got = compare({"q1": 0.2, "q2": 0.4}, {"q2": 0.1, "q1": 0.3})
    assert got.gained.tolist() == ["q1"] and got.lost.tolist() == ["q2"] and got.p_value == 1.0
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    first = evaluate({"q1": {"a": 2.0, "b": 1.0}, "q2": {"a": 2.0, "b": 1.0}}, qrels, "mrr")
    second = evaluate({"q1": {"a": 1.0, "b": 2.0}, "q2": {"a": 1.0, "b": 2.0}}, qrels, "mrr")
    got = compare(first, second, metric="mrr")
    assert got.gained.tolist() == ["q2"] and got.lost.tolist() == ["q1"]


def test_compare_errors():
    with pytest.raises(ValueError, match="must be 1-D of the same length"):
        compare([0.1, 0.2], [0.1])
    with pytest.raises(ValueError, match="must cover the same queries; not in both: \\['q3'\\]"):
        compare({"q1": 0.1}, {"q1": 0.2, "q3": 0.0})
    with pytest.raises(ValueError, match="name the metric to compare"):
        ev = evaluate({"q": {"a": 1.0}}, {"q": {"a": 1}}, "mrr")
        compare(ev, ev)
    with pytest.raises(KeyError, match="per_query_a has no metric 'map'"):
        compare(ev, ev, metric="map")
    with pytest.raises(ValueError, match="finite"):
        compare([np.nan], [0.0])
    with pytest.raises(ValueError, match="gained must be a count >= 0"):
        sign_test(-1, 2)
