"""The reference implementations themselves: worked examples and FAISS."""

from __future__ import annotations

import numpy as np
import pytest

from ragcore import reference as ref
CORPUS = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 0.0]], dtype=np.float32)
QUERY = np.array([[1.0, 0.0]], dtype=np.float32)


def test_inner_product_worked_example():
    hits = ref.flat_search(CORPUS, QUERY, k=4, metric="ip")
    # scores 1, 0, 1, -1: the tie between ids 0 and 2 goes to the smaller id.
    assert hits.ids.tolist() == [[0, 2, 1, 3]]
    assert hits.scores.tolist() == [[1.0, 1.0, 0.0, -1.0]]


def test_l2_worked_example():
    hits = ref.flat_search(CORPUS, QUERY, k=4, metric="l2")
    # squared distances 0, 2, 1, 4; scores are their negatives.
    assert hits.ids.tolist() == [[0, 2, 1, 3]]
    assert hits.scores.tolist() == [[0.0, -1.0, -2.0, -4.0]]


def test_cosine_worked_example():
    hits = ref.flat_search(CORPUS * 3, QUERY * 2, k=4, metric="cosine")
    assert hits.ids.tolist() == [[0, 2, 1, 3]]
    np.testing.assert_allclose(hits.scores, [[1.0, np.sqrt(0.5), 0.0, -1.0]], rtol=1e-6)


def test_padding_and_external_ids():
    hits = ref.flat_search(CORPUS[:2], QUERY, k=4, metric="ip", ids=[40, 7])
    assert hits.ids.tolist() == [[40, 7, -1, -1]]
    assert np.isneginf(hits.scores[0, 2:]).all()


def test_bfloat16_rounding_is_nearest_even():
    # 1 + 2^-8 lies exactly between two bfloat16 values: rounds to the even one (1.0);
    # 1 + 3 * 2^-8 rounds up to 1 + 2^-6.
    x = np.array([[1 + 2**-8, 1 + 3 * 2**-8, -2.5]], dtype=np.float32)
    np.testing.assert_array_equal(ref.round_to_storage(x, "bfloat16"), [[1.0, 1 + 2**-6, -2.5]])


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_reference_agrees_with_faiss(metric):
    faiss = pytest.importorskip("faiss")
    rng = np.random.default_rng(0)
    corpus = rng.standard_normal((2000, 37)).astype(np.float32)
    queries = rng.standard_normal((25, 37)).astype(np.float32)
    index = faiss.IndexFlatIP(37) if metric == "ip" else faiss.IndexFlatL2(37)
    index.add(corpus)
    distances, labels = index.search(queries, 10)
    hits = ref.flat_search(corpus, queries, 10, metric=metric)
    np.testing.assert_array_equal(hits.ids, labels)
    want = distances if metric == "ip" else -distances  # FAISS returns squared distances
    np.testing.assert_allclose(hits.scores, want, rtol=1e-4, atol=1e-4)
