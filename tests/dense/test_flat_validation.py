"""FlatIndex argument checking and the edge cases of add / search / remove.

Bad input must raise a plain Python exception that names the argument and says
what was expected, and a refused add() or remove() must leave the index exactly
as it was. Data are small integers so every score is exact in float32 and
results can be compared with the reference bit for bit.
"""

from __future__ import annotations

import contextlib
import itertools
import warnings

import numpy as np
import pytest

import ragcore
from ragcore import CopyWarning, FlatIndex, Hits
from ragcore import reference as ref
from ragcore.dense._storage import float32_to_bfloat16_bits
from _hits_check import assert_hits_equal

DIM = 8
METRICS = ("ip", "cosine", "l2")
DTYPES = ("float32", "float16", "bfloat16")


def int_data(n: int, d: int = DIM, seed: int = 0) -> np.ndarray:
    """Small nonzero integers as float32: exact arithmetic, no zero rows."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, (n, d)).astype(np.float32)
    x[:, 0] = rng.integers(1, 4, n)  # never a zero row (cosine)
    return x


def filled(metric: str = "ip", dtype: str = "float32", n: int = 20) -> FlatIndex:
    index = FlatIndex(DIM, metric=metric, dtype=dtype)
    index.add(int_data(n))
    return index


QUERIES = int_data(5, seed=99)


def state(index: FlatIndex):
    """Everything observable about an index, to check that a failed call changed nothing."""
    hits = index.search(QUERIES, 7)
    return len(index), index.ids, index.stored_vectors(), hits


def assert_state_equal(index: FlatIndex, before) -> None:
    n, ids, vectors, hits = before
    assert len(index) == n
    np.testing.assert_array_equal(index.ids, ids)
    np.testing.assert_array_equal(index.stored_vectors(), vectors)
    assert_hits_equal(index.search(QUERIES, 7), hits)


@contextlib.contextmanager
def no_warnings():
    """Fails if any warning is issued inside (reports all of them, not just the first)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    assert [str(w.message) for w in caught] == []


# ---- constructor -------------------------------------------------------------


@pytest.mark.parametrize(
    "dim, exc, match",
    [
        (0, ValueError, r"dim must be >= 1, got 0"),
        (-1, ValueError, r"dim must be >= 1, got -1"),
        ("3", TypeError, r"dim must be an integer, got str"),
        (True, TypeError, r"dim must be an integer, got bool"),
        (3.0, TypeError, r"dim must be an integer, got float"),
        (None, TypeError, r"dim must be an integer, got NoneType"),
    ],
)
def test_bad_dim(dim, exc, match):
    with pytest.raises(exc, match=match):
        FlatIndex(dim)


def test_numpy_integer_dim_accepted():
    index = FlatIndex(np.int64(4))
    assert index.dim == 4 and type(index.dim) is int


def test_unknown_metric_lists_choices():
    with pytest.raises(ValueError, match=r"unknown metric 'dot'; expected one of 'ip', 'cosine', 'l2'"):
        FlatIndex(4, metric="dot")


def test_unknown_dtype_lists_choices():
    with pytest.raises(
        ValueError, match=r"unknown dtype 'int8'; expected one of 'float32', 'float16', 'bfloat16'"
    ):
        FlatIndex(4, dtype="int8")


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_defaults_and_properties(metric, dtype):
    assert (FlatIndex(3).metric, FlatIndex(3).dtype) == ("ip", "float32")
    index = FlatIndex(5, metric=metric, dtype=dtype)
    assert (index.dim, index.metric, index.dtype, len(index)) == (5, metric, dtype, 0)
    assert repr(index) == f"FlatIndex(dim=5, metric={metric!r}, dtype={dtype!r}, n=0)"


# ---- add(): vectors ----------------------------------------------------------


def _with(value, row: int, n: int = 4) -> np.ndarray:
    x = int_data(n, seed=7)
    x[row, 3] = value
    return x


BAD_VECTORS = {
    "3-D": (np.zeros((2, 3, DIM), np.float32), ValueError,
            r"vectors must be 1-D \(one vector\) or 2-D .*got 3-D with shape \(2, 3, 8\)"),
    "wrong dim": (np.ones((3, DIM + 1), np.float32), ValueError,
                  r"vectors has 9 dimensions per vector, expected dim=8"),
    "wrong dim 1-D": (np.ones(DIM - 1, np.float32), ValueError,
                      r"vectors has 7 dimensions per vector, expected dim=8"),
    "int32": (np.ones((3, DIM), np.int32), TypeError,
              r"vectors must hold floating-point numbers .*got dtype int32"),
    "int64": (np.ones((3, DIM), np.int64), TypeError, r"vectors must hold floating-point.*int64"),
    "bool": (np.ones((3, DIM), bool), TypeError, r"vectors must hold floating-point.*dtype bool"),
    "complex": (np.ones((3, DIM), np.complex64), TypeError,
                r"vectors must hold floating-point.*complex64"),
    "object": (np.ones((3, DIM), object), TypeError, r"vectors must hold floating-point.*object"),
    "NaN": (_with(np.nan, 2), ValueError, r"vectors contains NaN or infinity \(first in row 2\)"),
    "inf": (_with(np.inf, 1), ValueError, r"vectors contains NaN or infinity \(first in row 1\)"),
    "-inf": (_with(-np.inf, 3), ValueError, r"vectors contains NaN or infinity \(first in row 3\)"),
}


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("case", list(BAD_VECTORS))
def test_add_bad_vectors_refused_and_index_unchanged(case, metric):
    vectors, exc, match = BAD_VECTORS[case]
    index = filled(metric)
    before = state(index)
    with pytest.raises(exc, match=match):
        index.add(vectors)
    assert_state_equal(index, before)
    # the failed call did not consume default ids
    np.testing.assert_array_equal(index.add(int_data(2, seed=3)), [20, 21])


def test_float16_overflow_refused_and_index_unchanged():
    index = filled(dtype="float16")
    before = state(index)
    with pytest.raises(ValueError, match=r"vectors has values beyond the float16 range .*first in row 1"):
        index.add(_with(1e5, 1))
    assert_state_equal(index, before)
    # just inside the range is fine
    index.add(_with(65504.0, 1))
    assert len(index) == 24


def test_bfloat16_overflow_refused_and_index_unchanged():
    index = filled(dtype="bfloat16")
    before = state(index)
    # float32 max would round up to infinity in bfloat16; it is refused before that,
    # as its scores would overflow float32.
    with pytest.raises(ValueError, match=r"vectors row 2 has norm .* could overflow"):
        index.add(_with(np.finfo(np.float32).max, 2))
    with pytest.raises(ValueError, match=r"x has values beyond the bfloat16 range"):
        float32_to_bfloat16_bits(_with(np.finfo(np.float32).max, 2), "x")
    assert_state_equal(index, before)
    index.add(_with(1e5, 2))  # no problem for bfloat16
    assert len(index) == 24


def test_cosine_zero_vector_refused():
    index = filled("cosine")
    before = state(index)
    x = int_data(4, seed=5)
    x[2] = 0
    with pytest.raises(ValueError, match=r"vectors row 2 is all zeros; cosine similarity is undefined"):
        index.add(x)
    assert_state_equal(index, before)


def test_zero_vector_fine_for_ip_and_l2():
    for metric in ("ip", "l2"):
        index = FlatIndex(DIM, metric=metric)
        index.add(np.zeros((2, DIM), np.float32))
        hits = index.search(np.ones(DIM, np.float32), 2)
        assert hits.ids.tolist() == [[0, 1]]
        want = [[-DIM, -DIM]] if metric == "l2" else [[0.0, 0.0]]
        assert hits.scores.tolist() == want


# ---- add(): ids --------------------------------------------------------------

BAD_IDS = {
    "too few": ([1, 2], ValueError, r"ids must be a 1-D array of 3 ids, got shape \(2,\)"),
    "too many": (np.arange(100, 104), ValueError, r"ids must be a 1-D array of 3 ids, got shape \(4,\)"),
    "2-D": (np.array([[100, 101, 102]]), ValueError, r"ids must be a 1-D array of 3 ids, got shape \(1, 3\)"),
    "scalar": (np.int64(100), ValueError, r"ids must be a 1-D array of 3 ids"),
    "0-d array": (np.array(100), ValueError, r"ids must be a 1-D array of 3 ids, got shape \(\)"),
    "negative": ([100, -2, 101], ValueError, r"ids must be non-negative"),
    "duplicate": ([104, 107, 104], ValueError, r"ids contains 104 more than once; ids must be unique"),
    "already present": ([50, 3, 60], ValueError, r"ids: 3 is already in the index"),
    "float list": ([100.0, 101.0, 102.0], TypeError, r"ids must hold integers, got dtype float64"),
    "float32 array": (np.array([100, 101, 102], np.float32), TypeError,
                      r"ids must hold integers, got dtype float32"),
    "bool": (np.array([True, False, True]), TypeError, r"ids must hold integers, got dtype bool"),
    "int64 max": ([100, np.iinfo(np.int64).max, 101], ValueError, r"ids must be below 2\*\*63 - 1"),
    "uint64 huge": (np.array([100, 2**64 - 1, 101], np.uint64), ValueError, r"ids must be below 2\*\*63 - 1"),
}


@pytest.mark.parametrize("case", list(BAD_IDS))
def test_add_bad_ids_refused_and_index_unchanged(case):
    ids, exc, match = BAD_IDS[case]
    index = filled()
    before = state(index)
    with pytest.raises(exc, match=match):
        index.add(int_data(3, seed=4), ids=ids)
    assert_state_equal(index, before)
    np.testing.assert_array_equal(index.add(int_data(1, seed=3)), [20])


def test_ids_of_other_integer_dtypes_accepted():
    index = FlatIndex(DIM)
    got = index.add(int_data(3), ids=np.array([7, 3, 9], np.uint8))
    assert got.dtype == np.int64 and got.tolist() == [7, 3, 9]
    got = index.add(int_data(2, seed=1), ids=(np.int32(1), 2))
    assert got.tolist() == [1, 2]
    assert index.ids.tolist() == [7, 3, 9, 1, 2]


# ---- search() ----------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(k=0), ValueError, r"k must be >= 1, got 0"),
        (dict(k=-1), ValueError, r"k must be >= 1, got -1"),
        (dict(k=1.5), TypeError, r"k must be an integer, got float"),
        (dict(k=True), TypeError, r"k must be an integer, got bool"),
        (dict(k="3"), TypeError, r"k must be an integer, got str"),
        (dict(k=None), TypeError, r"k must be an integer, got NoneType"),
        (dict(k=3, n_threads=-1), ValueError, r"n_threads must be >= 0 \(0 means all cores\), got -1"),
        (dict(k=3, n_threads=1.0), TypeError, r"n_threads must be an integer, got float"),
        (dict(k=3, n_threads=False), TypeError, r"n_threads must be an integer, got bool"),
    ],
)
def test_search_bad_k_and_threads(kwargs, exc, match):
    index = filled()
    with pytest.raises(exc, match=match):
        index.search(QUERIES, **kwargs)


@pytest.mark.parametrize(
    "queries, exc, match",
    [
        (np.ones((2, DIM - 1), np.float32), ValueError,
         r"queries has 7 dimensions per vector, expected dim=8"),
        (np.ones(DIM + 2, np.float32), ValueError, r"queries has 10 dimensions per vector, expected dim=8"),
        (np.ones((1, 2, DIM), np.float32), ValueError, r"queries must be 1-D .* got 3-D"),
        (np.ones((), np.float32), ValueError, r"queries must be 1-D .* got 0-D"),
        (_with(np.nan, 1), ValueError, r"queries contains NaN or infinity \(first in row 1\)"),
        (_with(np.inf, 0), ValueError, r"queries contains NaN or infinity \(first in row 0\)"),
        (np.ones((2, DIM), np.int64), TypeError, r"queries must hold floating-point numbers.*int64"),
    ],
)
def test_search_bad_queries(queries, exc, match):
    index = filled()
    with pytest.raises(exc, match=match):
        index.search(queries, 3)


def test_search_cosine_zero_query_refused():
    index = filled("cosine")
    q = int_data(3, seed=2)
    q[1] = 0
    with pytest.raises(ValueError, match=r"queries row 1 is all zeros"):
        index.search(q, 3)


def test_numpy_integer_k_accepted():
    index = filled()
    assert_hits_equal(index.search(QUERIES, np.int32(4), n_threads=np.int64(1)), index.search(QUERIES, 4))


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_index_search_is_all_padding(metric, dtype):
    index = FlatIndex(DIM, metric=metric, dtype=dtype)
    hits = index.search(QUERIES[:3], 4)
    assert hits.ids.shape == (3, 4) and hits.scores.shape == (3, 4)
    assert hits.ids.dtype == np.int64 and hits.scores.dtype == np.float32
    assert (hits.ids == -1).all()
    assert np.isneginf(hits.scores).all()
    assert hits.to_lists() == [[], [], []]
    one = index.search(QUERIES[0], 1)
    assert one.ids.tolist() == [[-1]] and np.isneginf(one.scores).all()


@pytest.mark.parametrize("metric", ("ip", "l2"))
def test_k_larger_than_index_pads_the_tail(metric):
    corpus = int_data(3)
    index = FlatIndex(DIM, metric=metric)
    index.add(corpus, ids=[30, 10, 20])
    hits = index.search(QUERIES, 6)
    assert hits.ids.shape == (5, 6)
    want = ref.flat_search(corpus, QUERIES, 6, metric=metric, ids=np.array([30, 10, 20]))
    assert_hits_equal(hits, want)
    assert (hits.ids[:, 3:] == -1).all() and np.isneginf(hits.scores[:, 3:]).all()
    assert (hits.ids[:, :3] != -1).all() and np.isfinite(hits.scores[:, :3]).all()
    assert all(len(row) == 3 for row in hits.to_lists())


@pytest.mark.parametrize("metric", METRICS)
def test_one_dimensional_query_is_one_query(metric):
    index = filled(metric)
    hits = index.search(QUERIES[2], 5)
    assert hits.ids.shape == (1, 5) and hits.nq == 1 and len(hits) == 1
    assert_hits_equal(hits, index.search(QUERIES[2:3], 5))
    assert_hits_equal(hits, index.search(QUERIES, 5)[2])


@pytest.mark.parametrize("metric", ("ip", "l2"))
def test_results_match_reference_exactly(metric):
    corpus = int_data(50, seed=1)
    ids = np.random.default_rng(2).permutation(50) * 3 + 11
    index = FlatIndex(DIM, metric=metric)
    index.add(corpus, ids=ids)
    assert_hits_equal(index.search(QUERIES, 9), ref.flat_search(corpus, QUERIES, 9, metric, ids=ids))


def test_empty_batches():
    """A contiguous float32 array with no rows is neither copied (no CopyWarning) nor refused."""
    index = filled()
    before = state(index)
    with no_warnings():
        got = index.add(np.empty((0, DIM), np.float32))
    assert got.shape == (0,) and got.dtype == np.int64
    with no_warnings():
        hits = index.search(np.empty((0, DIM), np.float32), 3)
    assert hits.ids.shape == (0, 3) and hits.scores.shape == (0, 3)
    assert_state_equal(index, before)


# ---- dtype and layout conversion ---------------------------------------------


def test_float64_converted_with_copywarning_same_result():
    corpus, queries = int_data(30, seed=3), QUERIES
    a = FlatIndex(DIM)
    a.add(corpus)
    b = FlatIndex(DIM)
    with pytest.warns(CopyWarning, match=r"vectors: converting float64 to float32"):
        b.add(corpus.astype(np.float64))
    np.testing.assert_array_equal(a.stored_vectors(), b.stored_vectors())
    with pytest.warns(CopyWarning, match=r"queries: converting float64 to float32"):
        hits = b.search(queries.astype(np.float64), 6)
    assert_hits_equal(hits, a.search(queries, 6))


def test_float16_input_converted_with_copywarning():
    index = filled()
    with pytest.warns(CopyWarning, match=r"queries: converting float16 to float32"):
        hits = index.search(QUERIES.astype(np.float16), 6)
    assert_hits_equal(hits, index.search(QUERIES, 6))


def _layouts():
    base = int_data(12, seed=8)
    wide = np.zeros((12, 2 * DIM), np.float32)
    wide[:, ::2] = base
    tall = np.zeros((24, DIM), np.float32)
    tall[::2] = base
    return {
        "column-strided": (base, wide[:, ::2], True),
        "fortran": (base, np.asfortranarray(base), True),
        "reversed rows": (base, base[::-1].copy()[::-1], True),
        "broadcast rows": (np.tile(base[0], (4, 1)), np.broadcast_to(base[0], (4, DIM)), True),
        "row-strided": (base, tall[::2], False),
    }


LAYOUTS = _layouts()


@pytest.mark.parametrize("case", list(LAYOUTS))
def test_noncontiguous_input_gives_same_results(case):
    contiguous, view, copies = LAYOUTS[case]
    assert np.array_equal(contiguous, view)
    a = FlatIndex(DIM, metric="l2")
    a.add(contiguous)
    b = FlatIndex(DIM, metric="l2")
    if copies:
        with pytest.warns(CopyWarning, match=r"vectors: elements within a row are not contiguous"):
            b.add(view)
        with pytest.warns(CopyWarning, match=r"queries: elements within a row are not contiguous"):
            hits = b.search(view, 5)
    else:
        with no_warnings():
            b.add(view)
            hits = b.search(view, 5)
    np.testing.assert_array_equal(a.stored_vectors(), b.stored_vectors())
    assert_hits_equal(hits, a.search(contiguous, 5))


def test_row_strided_view_reaches_native_code_without_copy(recorder):
    index = filled()
    tall = np.zeros((2 * len(QUERIES), DIM), np.float32)
    tall[::2] = QUERIES
    view = tall[::2]
    assert not view.flags.c_contiguous
    with no_warnings():
        hits = index.search(view, 4)
    assert recorder.addresses == [view.__array_interface__["data"][0]]
    assert_hits_equal(hits, index.search(QUERIES, 4))


def test_contiguous_float32_reaches_native_code_without_copy(recorder):
    index = filled()
    with no_warnings():
        index.search(QUERIES, 4)
        index.search(QUERIES[1], 4)
    assert recorder.addresses == [QUERIES.ctypes.data, QUERIES[1].ctypes.data]


# ---- ids ---------------------------------------------------------------------


def test_default_ids_continue_after_largest_seen():
    # l2: remove-then-add is tested for every metric in test_remove_then_add
    index = FlatIndex(DIM, metric="l2")
    assert index.add(int_data(3)).tolist() == [0, 1, 2]
    assert index.add(int_data(2, seed=1), ids=[100, 5]).tolist() == [100, 5]
    assert index.add(int_data(2, seed=2)).tolist() == [101, 102]
    assert index.add(int_data(1, seed=3), ids=[7]).tolist() == [7]  # smaller than the largest
    assert index.add(int_data(1, seed=4)).tolist() == [103]
    assert index.ids.tolist() == [0, 1, 2, 100, 5, 101, 102, 7, 103]
    # removing the largest id does not make default ids reuse it
    index.remove([103])
    assert index.add(int_data(1, seed=5)).tolist() == [104]


def test_add_returns_a_copy_of_ids():
    index = FlatIndex(DIM)
    given = np.array([4, 9], np.int64)
    got = index.add(int_data(2), ids=given)
    got[0] = 77
    given[1] = 78
    assert index.ids.tolist() == [4, 9]


def test_ids_property_and_stored_vectors_are_copies():
    corpus = int_data(6)
    index = FlatIndex(DIM)
    index.add(corpus, ids=[5, 3, 8, 1, 0, 2])
    assert index.ids.tolist() == [5, 3, 8, 1, 0, 2]  # storage order
    np.testing.assert_array_equal(index.stored_vectors(), corpus)
    assert index.stored_vectors().dtype == np.float32
    index.ids[:] = 99
    index.stored_vectors()[:] = 99
    assert index.ids.tolist() == [5, 3, 8, 1, 0, 2]
    np.testing.assert_array_equal(index.stored_vectors(), corpus)


@pytest.mark.parametrize("dtype", DTYPES)
def test_stored_vectors_normalised_and_rounded(dtype):
    rng = np.random.default_rng(4)
    corpus = rng.standard_normal((10, DIM)).astype(np.float32) * 3
    index = FlatIndex(DIM, metric="cosine", dtype=dtype)
    index.add(corpus)
    unit = (corpus / np.linalg.norm(corpus, axis=1, keepdims=True)).astype(np.float32)
    stored = index.stored_vectors()
    assert stored.shape == (10, DIM) and stored.dtype == np.float32
    np.testing.assert_allclose(stored, ref.round_to_storage(unit, dtype), rtol=0, atol=1e-7)
    tol = {"float32": 1e-6, "float16": 2e-3, "bfloat16": 1e-2}[dtype]
    np.testing.assert_allclose(np.linalg.norm(stored, axis=1), 1.0, atol=tol)


# ---- remove() ----------------------------------------------------------------


def test_remove_unknown_id_removes_nothing_then_valid_remove_works():
    corpus = int_data(20)
    index = FlatIndex(DIM)
    index.add(corpus)
    before = state(index)
    with pytest.raises(ValueError, match=r"ids: 1 id\(s\) are not in the index \(e.g. 999\); nothing removed"):
        index.remove([3, 999])
    assert_state_equal(index, before)
    with pytest.raises(ValueError, match=r"ids: 2 id\(s\) are not in the index \(e.g. -1, 20\)"):
        index.remove(np.array([-1, 5, 20]))
    assert_state_equal(index, before)

    index.remove([3, 7])
    keep = np.array([i for i in range(20) if i not in (3, 7)])
    assert len(index) == 18
    assert index.ids.tolist() == keep.tolist()
    np.testing.assert_array_equal(index.stored_vectors(), corpus[keep])
    assert_hits_equal(index.search(QUERIES, 25), ref.flat_search(corpus[keep], QUERIES, 25, ids=keep))
    with pytest.raises(ValueError, match=r"not in the index \(e.g. 3\)"):
        index.remove([3])  # already removed


def test_remove_refuses_non_integer_ids():
    index = filled()
    before = state(index)
    with pytest.raises(TypeError, match=r"ids must hold integers, got dtype float64"):
        index.remove([1.0, 2.0])
    with pytest.raises(TypeError, match=r"ids must be a numpy array"):
        index.remove("3")
    assert_state_equal(index, before)


def test_remove_zero_d_and_empty():
    index = filled()
    index.remove(np.array(4))
    index.remove(np.array([], np.int64))
    index.remove([])
    assert len(index) == 19 and 4 not in index.ids


def test_remove_everything_then_search():
    index = filled()
    index.remove(np.arange(20))
    assert len(index) == 0
    assert (index.search(QUERIES, 3).ids == -1).all()


@pytest.mark.parametrize("metric", METRICS)
def test_remove_then_add(metric):
    corpus = int_data(10)
    index = FlatIndex(DIM, metric=metric)
    index.add(corpus)
    index.remove([2, 9])
    extra = int_data(3, seed=5)
    assert index.add(extra).tolist() == [10, 11, 12]
    assert index.add(corpus[2:3], ids=[2]).tolist() == [2]  # a removed id may come back
    want_ids = np.array([0, 1, 3, 4, 5, 6, 7, 8, 10, 11, 12, 2])
    want_vectors = np.concatenate([corpus[[0, 1, 3, 4, 5, 6, 7, 8]], extra, corpus[2:3]])
    assert index.ids.tolist() == want_ids.tolist()
    assert len(index) == 12
    if metric != "cosine":
        np.testing.assert_array_equal(index.stored_vectors(), want_vectors)
        assert_hits_equal(index.search(QUERIES, 12), ref.flat_search(want_vectors, QUERIES, 12, metric, want_ids))
    else:
        hits = index.search(QUERIES, 12)
        assert sorted(hits.ids[0].tolist()) == sorted(want_ids.tolist())


# ---- Hits --------------------------------------------------------------------


def _hits():
    scores = np.array([[3.0, 2.0, -np.inf], [5.0, 4.0, 1.0], [-np.inf, -np.inf, -np.inf]], np.float32)
    ids = np.array([[7, 2, -1], [1, 9, 4], [-1, -1, -1]], np.int64)
    return Hits(scores, ids)


@pytest.mark.parametrize(
    "scores, ids, exc, match",
    [
        (np.zeros((2, 3), np.float64), np.zeros((2, 3), np.int64), TypeError, r"Hits.scores must be a float32"),
        (np.zeros((2, 3), np.float16), np.zeros((2, 3), np.int64), TypeError, r"Hits.scores must be a float32"),
        ([[1.0]], np.zeros((1, 1), np.int64), TypeError, r"Hits.scores must be a float32 numpy array"),
        (np.zeros((2, 3), np.float32), np.zeros((2, 3), np.int32), TypeError, r"Hits.ids must be an int64"),
        (np.zeros((2, 3), np.float32), np.zeros((2, 3), np.uint64), TypeError, r"Hits.ids must be an int64"),
        (np.zeros((2, 3), np.float32), [[1, 2, 3]], TypeError, r"Hits.ids must be an int64 numpy array"),
        (np.zeros((2, 3), np.float32), np.zeros((2, 4), np.int64), ValueError,
         r"must be 2-D of the same shape, got \(2, 3\) and \(2, 4\)"),
        (np.zeros(3, np.float32), np.zeros(3, np.int64), ValueError, r"must be 2-D of the same shape"),
    ],
)
def test_hits_validation(scores, ids, exc, match):
    with pytest.raises(exc, match=match):
        Hits(scores, ids)


def test_hits_is_frozen():
    hits = _hits()
    with pytest.raises(AttributeError):
        hits.ids = np.zeros((3, 3), np.int64)


def test_hits_shape_properties_and_to_lists():
    hits = _hits()
    assert (hits.nq, hits.k, len(hits)) == (3, 3, 3)
    assert hits.to_lists() == [[(7, 3.0), (2, 2.0)], [(1, 5.0), (9, 4.0), (4, 1.0)], []]
    assert all(type(i) is int and type(s) is float for row in hits.to_lists() for i, s in row)


def test_hits_indexing_keeps_rows_2d():
    hits = _hits()
    for i in (0, 1, 2, np.int64(1)):
        row = hits[i]
        assert isinstance(row, Hits) and row.ids.shape == (1, 3)
        assert row.ids.tolist() == [hits.ids[int(i)].tolist()]
        np.testing.assert_array_equal(row.scores, hits.scores[int(i) : int(i) + 1])
    assert hits[-1].ids.tolist() == [[-1, -1, -1]]
    assert hits[-2].ids.tolist() == [[1, 9, 4]]
    assert hits[0].to_lists() == [[(7, 3.0), (2, 2.0)]]
    assert hits[1:].ids.tolist() == [[1, 9, 4], [-1, -1, -1]]
    assert hits[1:].to_lists() == [[(1, 5.0), (9, 4.0), (4, 1.0)], []]
    assert hits[[2, 0]].ids.tolist() == [[-1, -1, -1], [7, 2, -1]]


@pytest.mark.parametrize("i", [3, 10, -4])
def test_hits_index_out_of_range_raises(i):
    hits = _hits()
    with pytest.raises(IndexError):
        hits[i]


def test_hits_iteration_yields_each_query_once():
    hits = _hits()
    rows = list(itertools.islice(iter(hits), 10))  # bounded: never loops forever
    assert len(rows) == 3
    assert [r.ids.tolist()[0] for r in rows] == hits.ids.tolist()


def test_search_result_to_lists_drops_padding():
    index = FlatIndex(DIM)
    corpus = int_data(2)
    index.add(corpus, ids=[40, 41])
    hits = index.search(QUERIES[:2], 4)
    lists = hits.to_lists()
    assert [len(row) for row in lists] == [2, 2]
    for row, q in zip(lists, QUERIES[:2]):
        assert sorted(i for i, _ in row) == [40, 41]
        for i, s in row:
            assert s == float(corpus[i - 40] @ q)


def test_types_exposed():
    assert issubclass(ragcore.IndexFileError, ValueError)
    assert issubclass(ragcore.CopyWarning, UserWarning)


@pytest.mark.parametrize("metric", ("ip", "l2"))
def test_vectors_whose_scores_would_overflow_refused(metric):
    index = FlatIndex(4, metric=metric)
    huge = np.array([[1e19, 0.0, 0.0, 0.0]], dtype=np.float32)
    with pytest.raises(ValueError, match=r"vectors row 0 has norm 1e\+19; norms above 1e\+18"):
        index.add(huge)
    assert len(index) == 0
    index.add(np.ones((3, 4), np.float32))
    with pytest.raises(ValueError, match=r"queries row 0 has norm"):
        index.search(huge, 2)
    # Large but safe magnitudes are fine and give finite scores.
    hits = index.search(np.full((1, 4), 1e17, np.float32), 2)
    assert np.isfinite(hits.scores).all()
