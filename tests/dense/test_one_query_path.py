"""The single-query fast check (one_float32_row) against the full one (as_float_matrix), and
FlatIndex / IVFIndex answers through it equal to the batched path's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _query_inputs import DIM, BatchRefused, query_inputs, search_outcome
from hypothesis import given, settings, strategies as st

import ragcore
from ragcore._util.arrays import as_float_matrix, one_float32_row


@settings(max_examples=400, deadline=None)
@given(query_inputs())
def test_fast_check_accepts_only_what_the_full_check_passes_unchanged(x):
    fast = one_float32_row(x, DIM)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a CopyWarning means the full path would copy
        try:
            full = as_float_matrix(x, "queries", DIM)
        except (TypeError, ValueError, Warning):
            full = None
    if fast is not None:
        assert full is not None and full.shape == (1, DIM)
        assert np.shares_memory(fast, x) and np.array_equal(fast, full)
    elif full is not None and full.shape[0] == 1 and np.all(np.abs(x) <= 10):
        assert not x.flags.c_contiguous  # an ordinary row is declined only for its layout


def test_declined_rows_get_the_full_error():
    index = ragcore.FlatIndex(DIM)
    index.add(np.eye(DIM, dtype=np.float32))
    bad = np.ones(DIM, dtype=np.float32)
    bad[3] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        index.search(bad, 1)
    with pytest.raises(ValueError, match="expected dim=8"):
        index.search(np.ones(DIM + 1, dtype=np.float32), 1)
    huge = np.full(DIM, 1e18, dtype=np.float32)
    with pytest.raises(ValueError, match="could overflow"):
        index.search(huge, 1)


@pytest.mark.parametrize("metric", ["ip", "l2", "cosine"])
def test_one_query_equals_its_row_of_a_batch(metric):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((300, DIM)).astype(np.float32)
    queries = rng.standard_normal((7, DIM)).astype(np.float32)
    flat = ragcore.FlatIndex(DIM, metric=metric)
    flat.add(x)
    ivf = ragcore.IVFIndex(DIM, nlist=4, metric=metric)
    ivf.train(x)
    ivf.add(x)
    for index, kwargs in ((flat, {}), (ivf, {"nprobe": 2})):
        batch = index.search(queries, 5, n_threads=1, **kwargs)
        for i, q in enumerate(queries):
            for single in (q, q[None, :]):
                got = index.search(single, 5, **kwargs)
                np.testing.assert_array_equal(got.ids, batch.ids[i : i + 1])
                np.testing.assert_array_equal(got.scores, batch.scores[i : i + 1])


@pytest.mark.parametrize("metric", ["ip", "l2"])
@settings(max_examples=200, deadline=None)
@given(x=query_inputs())
def test_flat_native_row_path_equals_the_full_path(metric, x):
    index = ragcore.FlatIndex(DIM, metric=metric)
    index.add(np.random.default_rng(1).standard_normal((20, DIM)).astype(np.float32))
    # n_threads as a numpy integer takes the full Python path; a plain int the native row one.
    assert search_outcome(index, x, 0) == search_outcome(index, x, np.int64(0))


@pytest.mark.parametrize("metric", ["ip", "l2"])
@settings(max_examples=200, deadline=None)
@given(x=query_inputs())
def test_hnsw_native_row_path_equals_the_full_path(metric, x):
    index = ragcore.HNSWIndex(DIM, metric=metric, M=4)
    index.add(np.random.default_rng(1).standard_normal((40, DIM)).astype(np.float32))
    # n_threads as a numpy integer takes the full Python path; a plain int the native row one.
    assert search_outcome(index, x, 0) == search_outcome(index, x, np.int64(0))


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_hnsw_one_query_equals_its_row_of_a_batch(dtype):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((300, DIM)).astype(np.float32)
    queries = rng.standard_normal((7, DIM)).astype(np.float32)
    index = ragcore.HNSWIndex(DIM, "l2", M=4, dtype=dtype)
    index.add(x)
    batch = index.search(queries, 5, ef=12, n_threads=2)
    for i, q in enumerate(queries):
        for single in (q, q[None, :]):
            got = index.search(single, 5, ef=12)
            np.testing.assert_array_equal(got.ids, batch.ids[i : i + 1])
            np.testing.assert_array_equal(got.scores, batch.scores[i : i + 1])


IVF_DTYPES = ("float32", "float16", "bfloat16", "sq8")


def _ivf_index(dtype: str, metric: str, n: int = 300, seed: int = 0, nlist: int = 4):
    x = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    index = ragcore.IVFIndex(DIM, nlist=nlist, metric=metric, dtype=dtype)
    index.train(x)
    index.add(x)
    return index


_IVF_INDEXES = {(d, m): _ivf_index(d, m) for d in IVF_DTYPES for m in ("ip", "l2")}


@pytest.mark.parametrize("dtype", IVF_DTYPES)
@pytest.mark.parametrize("metric", ["ip", "l2"])
@settings(max_examples=100, deadline=None)
@given(x=query_inputs())
def test_ivf_native_row_path_equals_the_full_path(dtype, metric, x):
    index = _IVF_INDEXES[dtype, metric]
    # n_threads as a numpy integer takes the full Python path; a plain int the native row one.
    assert search_outcome(index, x, 0) == search_outcome(index, x, np.int64(0))
    assert search_outcome(index, x, 0, nprobe=3) == search_outcome(index, x, np.int64(0), nprobe=3)


@settings(max_examples=40, deadline=None)
@given(dtype=st.sampled_from(IVF_DTYPES), metric=st.sampled_from(["ip", "l2", "cosine"]),
       seed=st.integers(0, 2**16), n=st.integers(1, 300), k=st.integers(1, 30),
       nprobe=st.integers(1, 4), rescore=st.integers(1, 6))
def test_ivf_one_query_equals_its_row_of_a_batch(dtype, metric, seed, n, k, nprobe, rescore):
    index = _ivf_index(dtype, metric, max(n, 4), seed)
    queries = np.random.default_rng(seed + 1).standard_normal((5, DIM)).astype(np.float32)
    batch = index.search(queries, k, nprobe=nprobe, rescore=rescore, n_threads=1)
    for i, q in enumerate(queries):
        for single in (q, q[None, :]):
            got = index.search(single, k, nprobe=nprobe, rescore=rescore)
            np.testing.assert_array_equal(got.ids, batch.ids[i : i + 1])
            np.testing.assert_array_equal(got.scores, batch.scores[i : i + 1])
            assert got.ids.dtype == np.int64 and got.scores.dtype == np.float32


@pytest.mark.parametrize("dtype", IVF_DTYPES)
def test_a_clean_row_takes_the_ivf_row_path(dtype, monkeypatch):
    index = _IVF_INDEXES[dtype, "l2"]
    query = np.random.default_rng(5).standard_normal(DIM).astype(np.float32)
    expected = index.search(query[None, :], 5, n_threads=np.int64(0))
    assert index.last_stage_seconds  # the full path reports its stages ...
    monkeypatch.setattr(ragcore.dense._ivf_rows, "_core",
                        BatchRefused(ragcore.dense._ivf_rows._core, "ivf_search"))
    got = index.search(query, 5)
    np.testing.assert_array_equal(got.ids, expected.ids)
    assert index.last_stage_seconds == {}  # ... the row path takes none
    with pytest.raises(AssertionError, match="not taken"):  # a numpy n_threads: the full path
        index.search(query, 5, n_threads=np.int64(0))


@pytest.mark.parametrize("dtype", IVF_DTYPES)
def test_ivf_bad_arguments_are_still_refused(dtype):
    index = _IVF_INDEXES[dtype, "ip"]
    q = np.ones(DIM, dtype=np.float32)
    for k, error in ((0, ValueError), (True, TypeError), (2.0, TypeError)):
        with pytest.raises(error, match="k"):
            index.search(q, k)
    for nprobe in (0, 5, -1):
        with pytest.raises(ValueError, match="nprobe"):
            index.search(q, 3, nprobe=nprobe)
    with pytest.raises(ValueError, match="rescore"):
        index.search(q, 3, rescore=0)
    with pytest.raises((TypeError, ValueError), match="n_threads"):
        index.search(q, 3, n_threads=-1)
    untrained = ragcore.IVFIndex(DIM, nlist=2, dtype=dtype)
    with pytest.raises(RuntimeError, match="train"):
        untrained.search(q, 3)
