"""IVFIndex(dtype="rabitq") search: exact when everything is re-scored, the bound
re-ranking against FlatIndex, recall in nprobe, filters, threads."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ragcore
from ragcore import reference
from _hits_check import assert_hits_equal
from _ivf_data import clustered, recall, small_integers


def _built(x, nlist, metric="ip", bits=4, ids=None, **kw):
    index = ragcore.IVFIndex(x.shape[1], nlist, metric, "rabitq", bits=bits, **kw)
    index.train(x)
    index.add(x, ids=ids)
    return index


@settings(max_examples=20, deadline=None)
@given(n=st.integers(8, 150), dim=st.sampled_from([1, 5, 8, 12]), k=st.integers(1, 12),
       metric=st.sampled_from(["ip", "l2"]), bits=st.integers(1, 8),
       rescore=st.sampled_from(["all", "count"]), seed=st.integers(0, 10_000))
def test_every_list_rescored_equals_flat_search(n, dim, k, metric, bits, rescore, seed):
    # Small integers: every dot product is exact, so equal scores really tie and the
    # id order of ties is checked too.
    x = small_integers(n, dim, seed)
    q = small_integers(4, dim, seed + 1)
    ids = np.random.default_rng(seed).permutation(5 * n)[:n].astype(np.int64)
    index = _built(x, 4, metric, bits, ids=ids, seed=seed)
    got = index.search(q, k, nprobe=4, rescore="all" if rescore == "all" else n)
    assert_hits_equal(got, reference.flat_search(x, q, k, metric, ids))


@pytest.mark.parametrize("metric", ["ip", "cosine", "l2"])
@pytest.mark.parametrize("bits", [1, 3, 8])
def test_bound_rescoring_of_all_lists_finds_the_exact_top_k(metric, bits):
    # epsilon = 5: the bound fails with probability ~6e-7 per pair, so the pruned
    # re-ranking must return FlatIndex's answer, re-scoring fewer rows as bits rise.
    x = clustered(3000, 32, 20, seed=bits, spread=0.6)
    q = clustered(30, 32, 20, seed=bits + 100, spread=0.6)
    index = _built(x, 20, metric, bits, epsilon=5.0)
    flat = ragcore.FlatIndex(32, metric)
    flat.add(x)
    got, want = index.search(q, 10, nprobe=20), flat.search(q, 10)
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_allclose(got.scores, want.scores, rtol=1e-6, atol=1e-5)
    counts = index.last_search_counts
    assert counts["scanned"] == 30 * 3000
    assert counts["rescored"] < {1: 0.8, 3: 0.2, 8: 0.02}[bits] * counts["scanned"]


def test_recall_rises_with_nprobe_and_meets_the_target_at_4_bits():
    x = clustered(6000, 48, 60, seed=2, spread=1.0)
    q = clustered(100, 48, 60, seed=3, spread=1.0)
    index = _built(x, 60, "ip", 4)
    truth = reference.flat_search(x, q, 10).ids
    exact = [recall(index.search(q, 10, nprobe=p, rescore="all").ids, truth) for p in (1, 2, 4, 8, 16, 60)]
    assert all(a <= b for a, b in zip(exact, exact[1:])) and exact[-1] == 1.0
    bound = [recall(index.search(q, 10, nprobe=p).ids, truth) for p in (1, 2, 4, 8, 16, 60)]
    assert all(a <= b + 0.01 for a, b in zip(bound, bound[1:]))
    assert bound[-1] >= 0.95
    # The estimate loses little against exact IVF at the same nprobe.
    assert all(b >= e - 0.03 for b, e in zip(bound, exact))


@settings(max_examples=15, deadline=None)
@given(n=st.integers(8, 200), k=st.integers(1, 15), fraction=st.floats(0.0, 1.0),
       seed=st.integers(0, 10_000))
def test_filtered_search_of_all_lists_equals_filtered_reference(n, k, fraction, seed):
    rng = np.random.default_rng(seed)
    x = small_integers(n, 10, seed)
    q = small_integers(3, 10, seed + 1)
    ids = rng.permutation(3 * n)[:n].astype(np.int64)
    allowed = ids[rng.random(n) < fraction]
    index = _built(x, 8, "ip", 2, ids=ids)
    got = index.search(q, k, nprobe=8, allow=allowed, rescore="all")
    assert_hits_equal(got, reference.filtered_flat_search(x, q, k, allowed, "ip", ids))
    bound = index.search(q, k, nprobe=8, allow=allowed)  # same answer, from the bound rule
    assert np.isin(bound.ids[bound.ids >= 0], allowed).all()


def test_filtered_search_probes_further_until_k_allowed_are_found():
    x = clustered(2000, 16, 40, seed=1, spread=0.2)
    index = _built(x, 40, "ip", 4, seed=3)
    allowed = np.arange(0, 2000, 150)
    hits = index.search(x[:20], 10, nprobe=1, allow=allowed)
    assert (hits.ids >= 0).all() and np.isin(hits.ids, allowed).all()


def test_threads_and_batches_give_the_same_answer():
    x = clustered(3000, 40, 30, seed=4, spread=0.8)
    q = clustered(64, 40, 30, seed=5, spread=0.8)
    index = _built(x, 30, "l2", 2)
    one = index.search(q, 10, nprobe=5, n_threads=1)
    assert_hits_equal(index.search(q, 10, nprobe=5, n_threads=0), one)
    row = index.search(q[7], 10, nprobe=5)
    np.testing.assert_array_equal(row.ids[0], one.ids[7])


def test_removed_vectors_never_return_and_empty_lists_pad():
    x = clustered(500, 16, 10, seed=6)
    index = _built(x, 10, "ip", 3)
    index.remove(np.arange(0, 500, 2))
    hits = index.search(x[:10], 5, nprobe=10)
    assert (hits.ids % 2 == 1).all()
    empty = ragcore.IVFIndex(16, 10, "ip", "rabitq")
    empty.train(x)
    got = empty.search(x[:2], 3)
    assert (got.ids == -1).all() and np.isneginf(got.scores).all()


def test_bytes_per_vector_and_memory():
    x = clustered(100, 128, 4, seed=7)
    index = _built(x, 4, "l2", 3)
    b = index.bytes_per_vector()
    assert b == {"scanned": 3 * 16 + 12, "kept": 3 * 16 + 12 + 512 + 8 + 4, "float32": 512}
    assert b["scanned"] <= b["float32"] / 8
    assert index.memory_bytes() >= 100 * b["kept"]
