"""One query through the search entry of PQIndex and IVFIndex dtype="pq4" / "rabitq": it
answers as its row of a batch, its values are checked as the reference checks them, and bad
arguments get a clear error."""

from __future__ import annotations

import numpy as np
import pytest
from _query_inputs import DIM, query_inputs, reference_outcome, search_outcome
from hypothesis import given, settings, strategies as st

import ragcore

KINDS = ("pq", "ivf_pq4", "rabitq1", "rabitq3")


def _index(kind: str, metric: str, n: int = 400, seed: int = 0):
    x = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    if kind == "pq":
        index = ragcore.PQIndex(DIM, 4, metric)
    elif kind == "ivf_pq4":
        index = ragcore.IVFIndex(DIM, 4, metric, dtype="pq4", m=4)
    else:
        index = ragcore.IVFIndex(DIM, 4, metric, dtype="rabitq", bits=int(kind[-1]))
    index.train(x)
    index.add(x)
    return index


_INDEXES = {(kind, metric): _index(kind, metric) for kind in KINDS for metric in ("ip", "l2")}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("metric", ["ip", "l2"])
@settings(max_examples=150, deadline=None)
@given(x=query_inputs())
def test_queries_are_checked_as_the_reference_checks_them(kind, metric, x):
    index = _INDEXES[kind, metric]
    assert search_outcome(index, x) == reference_outcome(index, x)


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=40, deadline=None)
@given(metric=st.sampled_from(["ip", "l2", "cosine"]), seed=st.integers(0, 2**16),
       n=st.integers(40, 300), k=st.integers(1, 30), nprobe=st.integers(1, 4),
       rescore=st.integers(1, 6))
def test_one_query_equals_its_row_of_a_batch(kind, metric, seed, n, k, nprobe, rescore):
    index = _index(kind, metric, n, seed)
    queries = np.random.default_rng(seed + 1).standard_normal((5, DIM)).astype(np.float32)
    kwargs = {} if kind == "pq" else {"nprobe": nprobe}
    if kind != "rabitq1" and kind != "rabitq3":
        kwargs["rescore"] = rescore
    batch = index.search(queries, k, n_threads=1, **kwargs)
    batch_counts = getattr(index, "last_search_counts", None)
    for i, q in enumerate(queries):
        for single in (q, q[None, :]):
            got = index.search(single, k, **kwargs)
            np.testing.assert_array_equal(got.ids, batch.ids[i : i + 1])
            np.testing.assert_array_equal(got.scores, batch.scores[i : i + 1])
            assert got.ids.dtype == np.int64 and got.scores.dtype == np.float32
    if batch_counts is not None:  # rabitq: one query's counts, as a 2-D row or a 1-D one
        index.search(queries[-1:], k, **kwargs)
        as_row = index.last_search_counts
        index.search(queries[-1], k, **kwargs)
        assert index.last_search_counts == as_row


@pytest.mark.parametrize("kind", KINDS)
def test_bad_arguments_are_refused(kind):
    index = _INDEXES[kind, "ip"]
    q = np.ones(DIM, dtype=np.float32)
    with pytest.raises(ValueError, match="k"):
        index.search(q, 0)
    with pytest.raises(TypeError, match="k"):
        index.search(q, True)
    with pytest.raises((TypeError, ValueError), match="n_threads"):
        index.search(q, 3, n_threads=-1)
    with pytest.raises(TypeError, match="n_threads"):
        index.search(q, 3, n_threads=True)
    if kind == "pq":
        with pytest.raises(ValueError, match="rescore"):
            index.search(q, 3, rescore=0)
    else:
        with pytest.raises(ValueError, match="nprobe"):
            index.search(q, 3, nprobe=5)
        with pytest.raises(ValueError, match="nprobe"):
            index.search(q, 3, nprobe=0)
    bad = q.copy()
    bad[2] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        index.search(bad, 3)
    with pytest.raises(ValueError, match="dim"):
        index.search(np.ones(DIM + 1, dtype=np.float32), 3)


@pytest.mark.parametrize("kind", KINDS)
def test_an_untrained_index_still_says_so(kind):
    if kind == "pq":
        index = ragcore.PQIndex(DIM, 4)
    elif kind == "ivf_pq4":
        index = ragcore.IVFIndex(DIM, 4, dtype="pq4", m=4)
    else:
        index = ragcore.IVFIndex(DIM, 4, dtype="rabitq", bits=int(kind[-1]))
    with pytest.raises(RuntimeError, match="not trained"):
        index.search(np.ones(DIM, dtype=np.float32), 3)


@pytest.mark.parametrize("kind", KINDS)
def test_an_emptied_index_pads_one_query_and_a_batch(kind):
    index = _index(kind, "l2", n=60, seed=9)
    index.remove(index.ids)
    q = np.ones(DIM, dtype=np.float32)
    row, full = index.search(q, 4), index.search(np.stack([q, q]), 4)[:1]
    assert row.ids.tolist() == full.ids.tolist() == [[-1] * 4]
    assert row.scores.tolist() == full.scores.tolist() == [[-np.inf] * 4]
