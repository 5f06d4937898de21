"""HNSWIndex search(..., allow=): the filtered walk and the exact fallback against the
filtered reference."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ragcore
from ragcore import reference
from ragcore.dense import hnsw
from _hits_check import assert_hits_close, assert_hits_equal
from _hnsw_data import clustered, recall


def _index(x, ids=None, metric="ip", M=8):
    index = ragcore.HNSWIndex(x.shape[1], metric, M=M, ef_construction=32)
    index.add(x, ids=ids, n_threads=1)
    return index


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 300), k=st.integers(1, 20), metric=st.sampled_from(["ip", "l2"]),
       fraction=st.floats(0.0, 1.0), seed=st.integers(0, 10_000), walk=st.booleans())
def test_filtered_search_equals_filtered_reference(n, k, metric, fraction, seed, walk):
    # Small integers: exact float32 sums, so the comparison is exact, ties included.
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, size=(n, 12)).astype(np.float32)
    q = rng.integers(-3, 4, size=(6, 12)).astype(np.float32)
    ids = rng.permutation(5 * n)[:n].astype(np.int64)
    allowed = ids[rng.random(n) < fraction]
    index = _index(x, ids, metric)
    # walk: the graph walk at full ef (exhaustive); else the exact scoring of the allowed set.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(hnsw, "EXACT_FILTER_FACTOR", 0.0 if walk else 1e9)
        got = index.search(q, k, ef=n, allow=allowed)
    assert index.last_search["exact"] == (not walk or len(allowed) == 0)
    assert_hits_equal(got, reference.filtered_flat_search(x, q, k, allowed, metric, ids))


def test_filtered_walk_keeps_recall_and_returns_only_allowed_ids(monkeypatch):
    x = clustered(4000, 32, seed=1)
    q = clustered(100, 32, seed=2)
    index = _index(x)
    allowed = np.flatnonzero(np.random.default_rng(3).random(4000) < 0.3)
    monkeypatch.setattr(hnsw, "EXACT_FILTER_FACTOR", 0.0)
    got = index.search(q, 10, ef=64, allow=allowed)
    assert not index.last_search["exact"] and index.last_search["allowed"] == len(allowed)
    assert np.isin(got.ids, allowed).all()
    truth = reference.filtered_flat_search(x, q, 10, allowed).ids
    assert recall(got.ids, truth) > 0.9


def test_small_allowed_sets_are_scored_exactly_by_default():
    x = clustered(5000, 16, seed=4)
    index = _index(x)
    limit = hnsw.exact_filter_limit(len(index), index.ef, index.M)
    assert 0 < limit < len(index)
    allowed = np.arange(0, 5000, 5000 // limit + 1)
    got = index.search(x[:20], 10, allow=allowed)
    assert index.last_search == {"exact": True, "allowed": len(allowed)}
    want = reference.filtered_flat_search(x, x[:20], 10, allowed)
    assert_hits_close(got, reference.dense_scores(x[allowed], x[:20]), allowed, 10, atol=1e-5)
    np.testing.assert_array_equal(np.sort(got.ids, axis=1), np.sort(want.ids, axis=1))
    index.search(x[:2], 10, allow=np.arange(5000))
    assert index.last_search == {"exact": False, "allowed": 5000}


def test_masks_sparse_ids_and_empty_filters():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((300, 8)).astype(np.float32)
    big_ids = (np.arange(300, dtype=np.int64) << 40) + 7  # too sparse for a mask by id
    index = _index(x, big_ids)
    allowed = big_ids[::4]
    got = index.search(x[:3], 5, ef=300, allow=allowed)
    assert_hits_close(got, reference.dense_scores(x[::4], x[:3]), allowed, 5, atol=1e-5)
    assert (index.search(x[:3], 5, allow=[]).ids == -1).all()
    assert (index.search(x[:3], 5, allow=[12345]).ids == -1).all()  # unknown ids allow nothing

    small = _index(x)
    mask = np.zeros(300, dtype=bool)
    mask[[3, 50, 299]] = True
    got = small.search(x[3], 5, allow=mask)
    assert sorted(got.ids[0, :3].tolist()) == [3, 50, 299] and (got.ids[0, 3:] == -1).all()
    with pytest.raises(ValueError, match="non-negative"):
        small.search(x[3], 5, allow=[-1])
    with pytest.raises(TypeError, match="allow"):
        small.search(x[3], 5, allow=np.array([0.5]))
