"""ragcore.rag.mmr against the plain reference, its two ends (lambda 1 and 0) and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcore.rag.mmr import mmr
from ragcore.reference.mmr import mmr as mmr_reference


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 3), st.sampled_from([1, 2, 7, 20]),
       st.sampled_from([1, 3, 8]), st.sampled_from([0.0, 0.3, 0.5, 0.9, 1.0]), st.integers(2, 6))
def test_equals_the_reference(seed, nq, n, k, lambda_, d):
    rng = np.random.default_rng(seed)
    queries = rng.standard_normal((nq, d))
    candidates = rng.standard_normal((nq, n, d)).astype(np.float32)
    batch = mmr(queries, candidates, lambda_, k)
    assert batch.shape == (nq, min(k, n)) and batch.dtype == np.int64
    for row in range(nq):
        want = mmr_reference(queries[row], candidates[row], lambda_, k)
        assert mmr(queries[row], candidates[row], lambda_, k).tolist() == want
        assert batch[row].tolist() == want


def test_lambda_one_is_the_relevance_order():
    rng = np.random.default_rng(1)
    q, c = rng.standard_normal(8), rng.standard_normal((30, 8))
    cos = c @ q / np.linalg.norm(c, axis=1)
    assert mmr(q, c, 1.0, 30).tolist() == np.argsort(-cos, kind="stable").tolist()


def test_lambda_zero_takes_one_of_each_cluster_before_any_second():
    # Three tight clusters of five; the query sits closest to cluster 0.
    rng = np.random.default_rng(2)
    centres = np.eye(3, 6) * 10
    c = np.repeat(centres, 5, axis=0) + 0.01 * rng.standard_normal((15, 6))
    q = centres[0] + 0.5 * centres[1] / 10
    chosen = mmr(q, c, 0.0, 3)
    assert sorted(i // 5 for i in chosen) == [0, 1, 2] and chosen[0] // 5 == 0
    assert [i // 5 for i in mmr(q, c, 1.0, 3)] == [0, 0, 0]


def test_ties_go_to_the_lower_position():
    c = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert mmr([1.0, 0.0], c, 1.0, 3).tolist() == [0, 1, 2]
    assert mmr([1.0, 0.0], c, 0.0, 3).tolist() == [0, 2, 1]


def test_bad_input_is_refused():
    c = np.ones((3, 2))
    with pytest.raises(ValueError, match=r"lambda_ must be a number in \[0, 1\]"):
        mmr([1.0, 0.0], c, 1.5)
    with pytest.raises(ValueError, match="k must be >= 1"):
        mmr([1.0, 0.0], c, 0.5, 0)
    with pytest.raises(ValueError, match="all-zero vector"):
        mmr([0.0, 0.0], c)
    with pytest.raises(ValueError, match="an all-zero vector at \\[1\\]"):
        mmr([1.0, 0.0], [[1.0, 1.0], [0.0, 0.0]])
    with pytest.raises(ValueError, match="needs candidate_vectors \\[n, d\\]"):
        mmr([1.0, 0.0, 0.0], c)
    with pytest.raises(ValueError, match="NaN or infinity"):
        mmr([np.nan, 0.0], c)
    with pytest.raises(TypeError, match="real numbers"):
        mmr(["a", "b"], c)
