"""FlatIndex search(..., allow=): equals filtering the reference, inside the scan."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ragcore
from ragcore import _core, reference
from _hits_check import assert_hits_close, assert_hits_equal


def _flat(x, ids=None, metric="ip", **options):
    index = ragcore.FlatIndex(x.shape[1], metric)
    index.add(x, ids=ids)
    index._search_options.update(options)
    return index


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 300), k=st.integers(1, 30), nq=st.integers(1, 40),
       path=st.sampled_from([_core.DensePath.Scan, _core.DensePath.Blocked]),
       metric=st.sampled_from(["ip", "l2"]),
       fraction=st.floats(0.0, 1.0), seed=st.integers(0, 10_000))
def test_filtered_search_equals_filtered_reference(n, k, nq, path, metric, fraction, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, size=(n, 12)).astype(np.float32)
    q = rng.integers(-3, 4, size=(nq, 12)).astype(np.float32)
    ids = rng.permutation(5 * n)[:n].astype(np.int64)
    allowed = ids[rng.random(n) < fraction]
    got = _flat(x, ids, metric, path=path, tile_rows=16).search(q, k, allow=allowed)
    assert_hits_equal(got, reference.filtered_flat_search(x, q, k, allowed, metric, ids))


def test_returns_k_whenever_k_allowed_exist():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1000, 16)).astype(np.float32)
    allowed = np.arange(0, 1000, 97)  # 11 ids, none of them near the query
    hits = _flat(x).search(x[5], 10, allow=allowed)
    assert set(hits.ids[0]) <= set(allowed) and (hits.ids[0] >= 0).all()


def test_boolean_mask_by_id_and_sparse_ids():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((200, 8)).astype(np.float32)
    big_ids = (np.arange(200, dtype=np.int64) << 40) + 7  # too sparse for a mask by id
    index = _flat(x, big_ids)
    allowed = big_ids[::3]
    ref = reference.dense_scores(x[::3], x[:4])
    assert_hits_close(index.search(x[:4], 5, allow=allowed), ref, allowed, 5, atol=1e-4)
    mask = np.zeros(200, dtype=bool)
    mask[::3] = True
    dense = _flat(x)
    assert_hits_equal(dense.search(x[:4], 5, allow=mask), dense.search(x[:4], 5, allow=np.arange(0, 200, 3)))
    short_mask = mask[:50]  # ids beyond the mask are not allowed
    assert dense.search(x[:4], 30, allow=short_mask).ids.max() < 50


def test_nothing_allowed_gives_padding():
    x = np.eye(4, dtype=np.float32)
    hits = _flat(x).search(x, 2, allow=[])
    assert (hits.ids == -1).all() and np.isneginf(hits.scores).all()


@pytest.mark.parametrize("allow, error", [
    (np.array([0.5]), TypeError), (["a"], TypeError), (np.array([-2]), ValueError),
])
def test_bad_allow_is_refused(allow, error):
    with pytest.raises(error, match="allow"):
        _flat(np.eye(4, dtype=np.float32)).search(np.ones(4, np.float32), 2, allow=allow)
