"""FlatIndex.load / IVFIndex.load on crafted files (valid checksum, edited contents).

Each case is a finding of issue 18: the file loaded (or crashed the process) before
the loaders checked every field; now it is IndexFileError naming the field.
"""

from __future__ import annotations

import numpy as np
import pytest

from ragcore import FlatIndex, IndexFileError, IVFIndex
from _crafted import rewrite, set_element, stored

DIM = 6


def _data(n, seed=0):
    return np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)


@pytest.fixture
def flat_file(tmp_path):
    def make(metric="ip", dtype="float32"):
        index = FlatIndex(DIM, metric, dtype)
        index.add(_data(20), ids=np.arange(20) * 2)
        path = tmp_path / f"flat-{metric}-{dtype}.rc"
        index.save(path)
        return path
    return make


@pytest.fixture
def ivf_file(tmp_path):
    def make(metric="ip", dtype="float32"):
        index = IVFIndex(DIM, 4, metric, dtype, max_iter=3)
        index.train(_data(40, 1))
        index.add(_data(30, 2))
        path = tmp_path / f"ivf-{metric}-{dtype}.rc"
        index.save(path)
        return path
    return make


def refused(load, path, field: str):
    with pytest.raises(IndexFileError, match=field):
        load(path)


# ---- header fields -------------------------------------------------------------

@pytest.mark.parametrize("next_id", [0, -1, 38, 2**63, "5", 1.5, None])
def test_flat_next_id_must_exceed_every_id(flat_file, next_id):
    path = flat_file()
    rewrite(path, "FlatIndex", params={"next_id": next_id})
    refused(FlatIndex.load, path, "next_id")


@pytest.mark.parametrize("next_id", [0, -1])
def test_ivf_next_id_must_exceed_every_id(ivf_file, next_id):
    path = ivf_file()
    rewrite(path, "IVFIndex", params={"next_id": next_id})
    refused(IVFIndex.load, path, "next_id")


@pytest.mark.parametrize("params, field", [
    ({"dim": 2**40}, "dim"), ({"dim": 6.0}, "dim"), ({"dim": True}, "dim"),
    ({"metric": ["ip"]}, "metric"), ({"dtype": {"a": 1}}, "dtype"),
])
def test_flat_header_fields_are_typed(flat_file, params, field):
    path = flat_file()
    rewrite(path, "FlatIndex", params=params)
    refused(FlatIndex.load, path, field)


@pytest.mark.parametrize("params, field", [
    ({"nlist": 2**40}, "nlist"), ({"nlist": 0}, "nlist"), ({"dtype": ["sq8"]}, "dtype"),
    ({"max_iter": 1e308}, "max_iter"), ({"seed": 2**64}, "seed"), ({"seed": -1}, "seed"),
    ({"training": [1, 2]}, "training"), ({"training": {"objective": "x"}}, "training"),
    ({"init": None}, "init"),
])
def test_ivf_header_fields_are_typed(ivf_file, params, field):
    path = ivf_file()
    rewrite(path, "IVFIndex", params=params)
    refused(IVFIndex.load, path, field)


def test_ivf_nlist_beyond_the_offsets_allocates_nothing(ivf_file):
    """nlist = 2**40 used to allocate 8 TB of list offsets (MemoryError) before any check."""
    path = ivf_file()
    rewrite(path, "IVFIndex", params={"nlist": 2**22})
    refused(IVFIndex.load, path, "offsets")


# ---- arrays ---------------------------------------------------------------------------

def test_flat_ids_unique_and_non_negative(flat_file):
    path = flat_file()
    _, arrays = stored(path, "FlatIndex")
    ids = arrays["ids"].copy()
    ids[3] = ids[4]
    rewrite(path, "FlatIndex", arrays={"ids": ids})
    refused(FlatIndex.load, path, "ids")
    ids[3] = -1
    rewrite(path, "FlatIndex", arrays={"ids": ids})
    refused(FlatIndex.load, path, "ids")


@pytest.mark.parametrize("value", [1e30, 3e38, np.inf, np.nan])
def test_flat_vectors_finite_and_of_bounded_norm(flat_file, value):
    """Finite but huge vectors made scores infinite or NaN, and NaN rows vanished
    from batched results (padding although k <= n)."""
    path = flat_file()
    set_element(path, "FlatIndex", "vectors", (5, 2), value)
    refused(FlatIndex.load, path, "vectors")


@pytest.mark.parametrize("bits", [0x7C00, 0x7E00])  # float16 inf, NaN
def test_flat_float16_rows_finite(flat_file, bits):
    path = flat_file(dtype="float16")
    set_element(path, "FlatIndex", "vectors", (1, 1), bits, view=np.uint16)
    refused(FlatIndex.load, path, "vectors")


@pytest.mark.parametrize("value", [np.nan, np.inf, -5.0, 1e30])
def test_flat_l2_norms_match_the_vectors(flat_file, value):
    path = flat_file(metric="l2")
    set_element(path, "FlatIndex", "sq_norms", 4, value)
    refused(FlatIndex.load, path, "sq_norms")


def test_flat_cosine_rows_are_unit_vectors(flat_file):
    path = flat_file(metric="cosine")
    _, arrays = stored(path, "FlatIndex")
    vectors = arrays["vectors"]
    vectors[0] *= 3
    rewrite(path, "FlatIndex", arrays={"vectors": vectors})
    refused(FlatIndex.load, path, "vectors")


@pytest.mark.parametrize("value", [3e38, 1e20, np.nan])
def test_ivf_centroids_finite_and_bounded(ivf_file, value):
    """A huge finite centroid made the coarse distances NaN; with 8 or more queries
    the probes were dropped and the scan indexed list -1 (heap corruption)."""
    path = ivf_file()
    set_element(path, "IVFIndex", "centroids", (1, 0), value)
    refused(IVFIndex.load, path, "centroids")


def test_ivf_rows_finite(ivf_file):
    path = ivf_file(dtype="float16")
    set_element(path, "IVFIndex", "rows", (2, 3), 0x7C00, view=np.uint16)
    refused(IVFIndex.load, path, "rows")


@pytest.mark.parametrize("name, value", [
    ("code_scale", np.nan), ("code_scale", 0.0), ("code_scale", -1.0), ("code_scale", 1e30),
    ("code_min", np.inf), ("code_min", 1e30),
])
def test_ivf_sq8_code_ranges(ivf_file, name, value):
    path = ivf_file(dtype="sq8")
    set_element(path, "IVFIndex", name, 1, value)
    refused(IVFIndex.load, path, name)


def test_ivf_sq8_exact_rows_finite(ivf_file):
    path = ivf_file(metric="l2", dtype="sq8")
    set_element(path, "IVFIndex", "exact", (0, 0), np.nan)
    refused(IVFIndex.load, path, "exact")


def test_ivf_l2_norms_match(ivf_file):
    path = ivf_file(metric="l2")
    set_element(path, "IVFIndex", "sq_norms", 0, -1.0)
    refused(IVFIndex.load, path, "sq_norms")


def test_ivf_offsets_describe_the_lists(ivf_file):
    path = ivf_file()
    _, arrays = stored(path, "IVFIndex")
    offsets = arrays["offsets"]
    offsets[2] = offsets[1] - 1
    rewrite(path, "IVFIndex", arrays={"offsets": offsets})
    refused(IVFIndex.load, path, "offsets")


@pytest.mark.parametrize("metric", ["ip", "l2", "cosine"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_good_flat_files_still_load_bit_identically(tmp_path, metric, dtype):
    index = FlatIndex(DIM, metric, dtype)
    index.add(_data(20))
    index.save(tmp_path / "good.rc")
    q = _data(9, 5)
    want = index.search(q, 25)
    for loaded in (FlatIndex.load(tmp_path / "good.rc"), FlatIndex.load(tmp_path / "good.rc", mmap=True)):
        got = loaded.search(q, 25)
        np.testing.assert_array_equal(got.ids, want.ids)
        np.testing.assert_array_equal(got.scores, want.scores)
