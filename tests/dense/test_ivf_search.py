"""IVFIndex search against FlatIndex and the reference."""

import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ragcore
from ragcore import reference
from _hits_check import assert_hits_close, assert_hits_equal
from _ivf_data import clustered, recall, small_integers

FLOAT_DTYPES = ("float32", "float16", "bfloat16")


def _ivf(x, nlist, metric="ip", dtype="float32", ids=None, seed=0):
    index = ragcore.IVFIndex(x.shape[1], nlist, metric, dtype, seed=seed)
    index.train(x)
    index.add(x, ids=ids)
    return index


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_all_lists_probed_is_exactly_flat(dtype, metric):
    x = small_integers(600, 24, seed=1)
    q = small_integers(9, 24, seed=2)
    ids = np.arange(600, dtype=np.int64)[::-1] * 3  # external ids, not positions
    flat = ragcore.FlatIndex(24, metric, dtype)
    flat.add(x, ids=ids)
    index = _ivf(x, 16, metric, dtype, ids=ids)
    for batch in (q[:1], q):
        assert_hits_equal(index.search(batch, 7, nprobe=16), flat.search(batch, 7))


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 120), nlist=st.integers(1, 8), k=st.integers(1, 20),
       metric=st.sampled_from(["ip", "cosine", "l2"]), seed=st.integers(0, 1000))
def test_all_lists_probed_matches_reference(n, nlist, k, metric, seed):
    nlist = min(nlist, n)
    x = clustered(n, 8, 3, seed=seed)
    q = clustered(4, 8, 3, seed=seed + 1)
    got = _ivf(x, nlist, metric).search(q, k, nprobe=nlist)
    ref = reference.dense_scores(x, q, metric)
    assert_hits_close(got, ref, np.arange(n), k, atol=1e-4 * (1 + np.abs(ref).max()))


def test_recall_never_decreases_with_nprobe():
    x = clustered(3000, 16, 40, seed=3, spread=0.8)
    q = clustered(50, 16, 40, seed=4, spread=0.8)
    flat = ragcore.FlatIndex(16)
    flat.add(x)
    truth = flat.search(q, 10).ids
    index = _ivf(x, 32, seed=11)
    recalls = [recall(index.search(q, 10, nprobe=p).ids, truth) for p in (1, 2, 4, 8, 16, 32)]
    assert all(b >= a for a, b in zip(recalls, recalls[1:])), recalls
    assert recalls[-1] == 1.0 and recalls[0] < 1.0


@pytest.mark.parametrize("metric", ["ip", "cosine", "l2"])
def test_sq8_returns_exact_scores_of_its_ids(metric):
    x = clustered(2000, 32, 20, seed=5)
    q = clustered(20, 32, 20, seed=6)
    index = _ivf(x, 16, metric, "sq8")
    got = index.search(q, 10, nprobe=16)
    ref = reference.dense_scores(x, q, metric)
    for row in range(len(q)):
        np.testing.assert_allclose(got.scores[row], ref[row, got.ids[row]], rtol=0,
                                   atol=1e-4 * (1 + np.abs(ref).max()))
    truth = ragcore.FlatIndex(32, metric)
    truth.add(x)
    assert recall(got.ids, truth.search(q, 10).ids) >= 0.98


def test_sq8_codes_match_the_reference_quantiser():
    x = clustered(500, 12, 4, seed=8)
    index = _ivf(x, 4, dtype="sq8")
    order = index.ids
    codes = reference.scalar_quantize(x[order], index._storage.code_min, index._storage.code_scale)
    np.testing.assert_array_equal(index._lists.rows, codes)
    back = reference.scalar_dequantize(codes, index._storage.code_min, index._storage.code_scale)
    assert np.abs(back - x[order]).max() <= index._storage.code_scale.max() / 2 * (1 + 1e-5)


def test_batch_equals_one_query_at_a_time_and_threads_do_not_matter():
    x = clustered(2000, 16, 20, seed=9)
    q = clustered(30, 16, 20, seed=10)
    index = _ivf(x, 20)
    batch = index.search(q, 5, nprobe=3, n_threads=1)
    for n_threads in (0, 3):
        assert_hits_equal(index.search(q, 5, nprobe=3, n_threads=n_threads), batch)
    for row in range(len(q)):
        assert_hits_equal(index.search(q[row], 5, nprobe=3), batch[row])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + ("sq8",))
@pytest.mark.parametrize("metric", ["ip", "l2", "cosine"])
@settings(max_examples=8, deadline=None)
@given(nq=st.integers(8, 300), nprobe=st.integers(1, 3), filtered=st.booleans(),
       seed=st.integers(0, 2**31))
def test_lists_many_queries_probe_give_each_query_its_answer_alone(dtype, metric, nq, nprobe,
                                                                   filtered, seed):
    """A list that many queries of the batch probe is scanned once for all of them by the
    blocked kernel (over 256 of them in several blocks; sq8 codes converted to floats first);
    each query still gets the hits it gets alone (the one-query scan), bit for bit, filtered
    or not."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((600, 24)).astype(np.float32)
    q = rng.standard_normal((nq, 24)).astype(np.float32)
    index = _ivf(x, 4, metric, dtype)
    allow = rng.choice(600, 150, replace=False) if filtered else None
    batch = index.search(q, 7, nprobe=nprobe, n_threads=1, allow=allow)
    for row in range(nq):
        assert_hits_equal(index.search(q[row], 7, nprobe=nprobe, allow=allow), batch[row])


def test_padding_when_k_exceeds_the_vectors():
    x = clustered(5, 4, 2, seed=0)
    index = _ivf(x, 2)
    hits = index.search(x[:2], 8, nprobe=2)
    assert (hits.ids[:, 5:] == -1).all() and np.isneginf(hits.scores[:, 5:]).all()
    empty = ragcore.IVFIndex(4, 2)
    empty.train(x)
    assert (empty.search(x[:1], 3).ids == -1).all()


def test_stage_times_are_reported():
    x = clustered(500, 8, 4, seed=0)
    index = _ivf(x, 4, dtype="sq8")
    index.search(x[:3], 5, nprobe=2)
    assert set(index.last_stage_seconds) == {"coarse", "scan", "rescore"}


def test_stage_times_belong_to_the_index_and_thread_that_searched():
    x = clustered(500, 8, 4, seed=0)
    first, second = _ivf(x, 4), _ivf(x, 4)
    assert first.last_stage_seconds == {}  # no search yet
    first.search(x[:3], 5, nprobe=2)
    assert set(first.last_stage_seconds) == {"coarse", "scan", "rescore"}
    second.search(x[:3], 5, nprobe=2)
    assert first.last_stage_seconds == {}  # this thread's last search was the second's
    assert set(second.last_stage_seconds) == {"coarse", "scan", "rescore"}
    seen = []
    worker = threading.Thread(target=lambda: seen.append(second.last_stage_seconds))
    worker.start()
    worker.join()
    assert seen == [{}]  # another thread has searched nothing
