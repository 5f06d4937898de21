"""One query through the search entry of FlatIndex, HNSWIndex and IVFIndex: it answers as
its row of a batch, and its values are checked (natively, once) as the reference checks
(as_float_matrix, in Python) check them: the same error, or the same hits."""

from __future__ import annotations


import numpy as np
import pytest
from _query_inputs import DIM, query_inputs, reference_outcome, search_outcome
from hypothesis import given, settings, strategies as st

import ragcore


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_bad_queries_get_a_clear_error(kind):
    x = np.eye(DIM, dtype=np.float32)
    index = {"flat": lambda: ragcore.FlatIndex(DIM), "hnsw": lambda: ragcore.HNSWIndex(DIM, M=4),
             "ivf": lambda: ragcore.IVFIndex(DIM, nlist=2)}[kind]()
    if kind == "ivf":
        index.train(x)
    index.add(x)
    bad = np.ones((3, DIM), dtype=np.float32)
    bad[2, 3] = np.nan
    with pytest.raises(ValueError, match=r"queries contains NaN or infinity \(first in row 0\)"):
        index.search(bad[2], 1)
    with pytest.raises(ValueError, match=r"queries contains NaN or infinity \(first in row 2\)"):
        index.search(bad, 1)
    with pytest.raises(ValueError, match="expected dim=8"):
        index.search(np.ones(DIM + 1, dtype=np.float32), 1)
    huge = np.full((2, DIM), 1e18, dtype=np.float32)
    huge[0] = 1.0
    with pytest.raises(ValueError, match="queries row 1 has norm 2.83e\\+18; norms above 1e\\+18"):
        index.search(huge, 1)
    huge[0, 0] = np.inf  # a NaN or infinity is named first, wherever it is
    with pytest.raises(ValueError, match="NaN or infinity \\(first in row 0\\)"):
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
def test_flat_checks_queries_as_the_reference_checks_them(metric, x):
    index = ragcore.FlatIndex(DIM, metric=metric)
    index.add(np.random.default_rng(1).standard_normal((20, DIM)).astype(np.float32))
    assert search_outcome(index, x) == reference_outcome(index, x)


@pytest.mark.parametrize("metric", ["ip", "l2"])
@settings(max_examples=200, deadline=None)
@given(x=query_inputs())
def test_hnsw_checks_queries_as_the_reference_checks_them(metric, x):
    index = ragcore.HNSWIndex(DIM, metric=metric, M=4)
    index.add(np.random.default_rng(1).standard_normal((40, DIM)).astype(np.float32))
    assert search_outcome(index, x) == reference_outcome(index, x)


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
def test_ivf_checks_queries_as_the_reference_checks_them(dtype, metric, x):
    index = _IVF_INDEXES[dtype, metric]
    assert search_outcome(index, x) == reference_outcome(index, x)
    assert search_outcome(index, x, nprobe=3) == reference_outcome(index, x, nprobe=3)


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
def test_one_query_reports_its_stage_times_as_a_batch_does(dtype):
    index = _IVF_INDEXES[dtype, "l2"]
    query = np.random.default_rng(5).standard_normal(DIM).astype(np.float32)
    index.search(query, 5)
    one = index.last_stage_seconds
    index.search(np.stack([query, query]), 5)
    assert set(one) == set(index.last_stage_seconds) == {"coarse", "scan", "rescore"}


@pytest.mark.parametrize("dtype", IVF_DTYPES)
def test_ivf_bad_arguments_are_refused(dtype):
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
