"""What FlatIndex accepts as an array: numpy, torch (DLPack), other DLPack objects, lists."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ragcore import CopyWarning, FlatIndex
from _hits_check import assert_hits_equal

torch = pytest.importorskip("torch")

DIM = 16


def data(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)


CORPUS = data(50)
QUERIES = data(4, seed=1)


def reference_index(metric: str = "ip") -> FlatIndex:
    index = FlatIndex(DIM, metric=metric)
    index.add(CORPUS)
    return index


# ---- torch -------------------------------------------------------------------


@pytest.mark.parametrize("metric", ("ip", "cosine", "l2"))
def test_torch_float32_accepted_without_copy(recorder, metric):
    want = reference_index(metric)
    index = FlatIndex(DIM, metric=metric)
    corpus_t = torch.from_numpy(CORPUS.copy())
    queries_t = torch.from_numpy(QUERIES.copy())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        index.add(corpus_t)
        hits = index.search(queries_t, 7)
    searched = recorder.addresses[-1]
    np.testing.assert_array_equal(index.stored_vectors(), want.stored_vectors())
    assert_hits_equal(hits, want.search(QUERIES, 7))
    if metric != "cosine":  # cosine normalises queries, which is a new array by design
        assert searched == queries_t.data_ptr()


def test_torch_row_strided_view_without_copy(recorder):
    big = torch.zeros((2 * len(QUERIES), DIM))
    big[::2] = torch.from_numpy(QUERIES)
    view = big[::2]
    assert not view.is_contiguous()
    index = reference_index()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hits = index.search(view, 5)
    assert recorder.addresses == [view.data_ptr()]
    assert_hits_equal(hits, index.search(QUERIES, 5))


def test_torch_transposed_copied_with_warning():
    index = reference_index()
    t = torch.from_numpy(QUERIES.T.copy()).T  # column-major
    assert not t.is_contiguous()
    with pytest.warns(CopyWarning, match=r"queries: elements within a row are not contiguous"):
        hits = index.search(t, 5)
    assert_hits_equal(hits, index.search(QUERIES, 5))


def test_torch_requires_grad_refused_with_detach_hint():
    index = reference_index()
    t = torch.from_numpy(QUERIES.copy()).requires_grad_(True)
    with pytest.raises(TypeError, match=r"queries: could not read this Tensor .*detach\(\)"):
        index.search(t, 3)
    with pytest.raises(TypeError, match=r"vectors: could not read this Tensor .*detach\(\)"):
        index.add(t)
    assert len(index) == len(CORPUS)
    # the hint works
    assert_hits_equal(index.search(t.detach(), 3), index.search(QUERIES, 3))


def test_torch_float64_converted_with_copywarning():
    index = reference_index()
    t = torch.from_numpy(QUERIES.astype(np.float64))
    with pytest.warns(CopyWarning, match=r"queries: converting float64 to float32"):
        hits = index.search(t, 6)
    assert_hits_equal(hits, index.search(QUERIES, 6))
    half = QUERIES.astype(np.float16)
    with pytest.warns(CopyWarning, match=r"queries: converting float16 to float32"):
        hits = index.search(torch.from_numpy(half), 6)
    assert_hits_equal(hits, index.search(half.astype(np.float32), 6))
    other = FlatIndex(DIM)
    with pytest.warns(CopyWarning, match=r"vectors: converting float64 to float32"):
        other.add(torch.from_numpy(CORPUS.astype(np.float64)))
    np.testing.assert_array_equal(other.stored_vectors(), CORPUS)


@pytest.mark.parametrize("dtype", ("int64", "int32", "bool", "uint8"))
def test_torch_non_float_refused(dtype):
    index = reference_index()
    t = torch.ones((2, DIM), dtype=getattr(torch, dtype))
    with pytest.raises(TypeError, match=rf"queries must hold floating-point numbers.*{dtype}"):
        index.search(t, 3)


def test_torch_nan_refused():
    index = reference_index()
    t = torch.from_numpy(QUERIES.copy())
    t[2, 5] = float("nan")
    with pytest.raises(ValueError, match=r"queries contains NaN or infinity \(first in row 2\)"):
        index.search(t, 3)


def test_torch_1d_tensor_is_one_query():
    index = reference_index()
    hits = index.search(torch.from_numpy(QUERIES[1].copy()), 4)
    assert hits.ids.shape == (1, 4)
    assert_hits_equal(hits, index.search(QUERIES[1:2], 4))


def test_torch_int64_ids_accepted():
    index = FlatIndex(DIM)
    got = index.add(CORPUS[:3], ids=torch.tensor([30, 10, 20]))
    assert got.tolist() == [30, 10, 20]
    index.remove(torch.tensor([10]))
    assert index.ids.tolist() == [30, 20]


def test_torch_float_ids_refused():
    index = FlatIndex(DIM)
    with pytest.raises(TypeError, match=r"ids must hold integers, got dtype float32"):
        index.add(CORPUS[:3], ids=torch.tensor([1.0, 2.0, 3.0]))
    assert len(index) == 0


def test_torch_input_is_not_modified():
    q = torch.from_numpy(QUERIES.copy())
    c = torch.from_numpy(CORPUS.copy())
    index = FlatIndex(DIM, metric="cosine")
    index.add(c)
    index.search(q, 3)
    np.testing.assert_array_equal(q.numpy(), QUERIES)
    np.testing.assert_array_equal(c.numpy(), CORPUS)


# ---- generic DLPack objects --------------------------------------------------


class DLPackOnly:
    """Exposes an array only through the DLPack protocol."""

    def __init__(self, array: np.ndarray):
        self._array = array

    def __dlpack__(self, *args, **kwargs):
        return self._array.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_generic_dlpack_object_accepted(recorder):
    index = FlatIndex(DIM)
    index.add(DLPackOnly(CORPUS))
    assert hasattr(DLPackOnly(QUERIES), "__array__") is False
    wrapped = DLPackOnly(QUERIES)
    hits = index.search(wrapped, 5)
    assert recorder.addresses == [QUERIES.ctypes.data]  # no copy on the way in
    want = reference_index()
    np.testing.assert_array_equal(index.stored_vectors(), want.stored_vectors())
    assert_hits_equal(hits, want.search(QUERIES, 5))


def test_generic_dlpack_float64_converted_with_warning():
    index = reference_index()
    with pytest.warns(CopyWarning, match=r"converting float64 to float32"):
        hits = index.search(DLPackOnly(QUERIES.astype(np.float64)), 5)
    assert_hits_equal(hits, index.search(QUERIES, 5))


class BrokenDLPack:
    def __dlpack__(self, *args, **kwargs):
        raise BufferError("no export today")

    def __dlpack_device__(self):
        return (1, 0)


def test_failing_dlpack_object_gives_typeerror():
    index = reference_index()
    with pytest.raises(TypeError, match=r"queries: could not read this BrokenDLPack through DLPack"):
        index.search(BrokenDLPack(), 3)


# ---- Python sequences and other objects --------------------------------------


def test_lists_of_lists_accepted():
    index = FlatIndex(DIM)
    index.add(CORPUS.tolist())
    want = reference_index()
    np.testing.assert_array_equal(index.stored_vectors(), want.stored_vectors())
    assert_hits_equal(index.search(QUERIES.tolist(), 5), want.search(QUERIES, 5))
    assert_hits_equal(index.search(QUERIES[0].tolist(), 5), want.search(QUERIES[:1], 5))
    assert_hits_equal(index.search(tuple(map(tuple, QUERIES.tolist())), 5), want.search(QUERIES, 5))


def test_list_with_wrong_lengths_or_contents_refused():
    index = reference_index()
    with pytest.raises(TypeError, match=r"queries: expected numbers"):
        index.search([[1.0] * DIM, [1.0] * (DIM - 1)], 3)
    with pytest.raises(TypeError, match=r"queries: expected numbers"):
        index.search([["a"] * DIM], 3)
    with pytest.raises(ValueError, match=r"queries has 3 dimensions per vector, expected dim=16"):
        index.search([[1.0, 2.0, 3.0]], 3)


@pytest.mark.parametrize(
    "bad, type_name",
    [("abc", "str"), ({"a": 1}, "dict"), (None, "NoneType"), (3.5, "float"), ({1.0, 2.0}, "set"),
     (b"\x00" * 64, "bytes")],
)
def test_non_array_objects_refused(bad, type_name):
    index = reference_index()
    with pytest.raises(TypeError, match=rf"queries must be a numpy array, a torch tensor or another DLPack array, got {type_name}"):
        index.search(bad, 3)
    with pytest.raises(TypeError, match=rf"vectors must be a numpy array, .*got {type_name}"):
        index.add(bad)
    assert len(index) == len(CORPUS)
