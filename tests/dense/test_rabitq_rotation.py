"""The structured (FHT-Kac) rotation of RaBitQ codes: native against the numpy
reference, orthogonal, seeded; no dimension limit; layout-1 files (a dense matrix)
still load and search."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ragcore
from ragcore import IndexFileError, _core
from ragcore.dense._rabitq import ROTATION_ROUNDS, dense_rotation, rotation_signs
from ragcore.reference import rabitq as ref
from _crafted import rewrite, stored
from _hits_check import assert_hits_equal
from _rabitq_fixtures import data, index  # noqa: F401 (fixtures)
from _ivf_data import clustered

KIND = "IVFIndex"
LEVELS = [None, _core.SimdLevel.Scalar]


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 9), dim=st.sampled_from([1, 5, 8, 13, 64, 96, 100, 384, 520, 1000]),
       seed=st.integers(0, 10_000), rounds=st.integers(1, 5), level=st.sampled_from(LEVELS))
def test_native_rotation_equals_reference(n, dim, seed, rounds, level):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, dim)) * rng.uniform(0.01, 100.0)).astype(np.float32)
    signs = rng.integers(0, 256, (rounds, ref.padded_dim(dim) // 8), dtype=np.uint8)
    got = _core.rabitq_fht_rotate(x, signs, n_threads=1, simd_level=level)
    want = ref.fht_kac_rotate(x, signs)
    assert got.shape == want.shape == (n, ref.padded_dim(dim))
    scale = np.linalg.norm(x.astype(np.float64), axis=1, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * scale.max())


@pytest.mark.parametrize("dim", [1, 13, 64, 384, 1000, 3000])
def test_rotation_is_orthogonal_and_keeps_norms_and_inner_products(dim):
    signs = rotation_signs(dim, 7)
    p = dense_rotation(signs, dim).astype(np.float64)
    assert p.shape == (ref.padded_dim(dim), dim)
    np.testing.assert_allclose(p.T @ p, np.eye(dim), atol=1e-5)
    rng = np.random.default_rng(dim)
    x = rng.standard_normal((6, dim)).astype(np.float32)
    r = _core.rabitq_fht_rotate(x, signs).astype(np.float64)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(r @ r.T, x64 @ x64.T, rtol=1e-4, atol=1e-3)


def test_rotation_mixes_every_coordinate():
    # Not a permutation in disguise: every input coordinate reaches many outputs, also
    # when the padded dim is not a power of two (the Kac steps join the two blocks).
    for dim in (64, 384, 1000):
        p = dense_rotation(rotation_signs(dim, 1), dim)
        assert (np.abs(p) > 1e-6).sum(axis=0).min() >= 0.75 * min(64, dim)  # some entries cancel
        assert np.abs(p).max() < 0.5


def test_rotation_signs_are_seeded():
    a = rotation_signs(100, 3)
    assert a.shape == (ROTATION_ROUNDS, ref.padded_dim(100) // 8) and a.dtype == np.uint8
    np.testing.assert_array_equal(a, rotation_signs(100, 3))
    assert not np.array_equal(a, rotation_signs(100, 4))


def test_rotation_arguments_are_checked():
    x = np.ones((2, 12), np.float32)
    with pytest.raises(ValueError, match="signs"):
        _core.rabitq_fht_rotate(x, np.zeros((4, 1), np.uint8))  # 12 pads to 16: 2 bytes
    with pytest.raises(ValueError, match="signs"):
        _core.rabitq_fht_rotate(x, np.zeros((0, 2), np.uint8))
    with pytest.raises(ValueError, match="x"):
        _core.rabitq_fht_rotate(x.astype(np.float64), np.zeros((4, 2), np.uint8))


def test_no_dimension_limit_of_the_dense_rotation():
    dim = 3000  # above the 2,048 of the dense rotation
    x = clustered(80, dim, 4, seed=0)
    index = ragcore.IVFIndex(dim, 4, "ip", "rabitq", bits=2)
    index.train(x)
    index.add(x)
    exact = ragcore.FlatIndex(dim, "ip")
    exact.add(x)
    assert_hits_equal(index.search(x[:5], 3, nprobe=4, rescore="all"), exact.search(x[:5], 3))
    np.testing.assert_array_equal(index.search(x[:5], 3, nprobe=4).ids, exact.search(x[:5], 3).ids)


def _as_layout_1(path, index):
    """Re-writes a saved index as the first layout wrote it: the same rotation as a
    dense float32 matrix, no params.rabitq_layout."""
    rewrite(path, KIND, arrays={"rotation": index.rotation}, drop=["rabitq_layout"])


def test_layout_1_files_load_and_search_the_same(tmp_path, index, data):
    path = tmp_path / "old.rc"
    index.save(path)
    assert stored(path, KIND)[0]["rabitq_layout"] == 2
    assert stored(path, KIND)[1]["rotation"].dtype == np.uint8
    _as_layout_1(path, index)
    old = ragcore.IVFIndex.load(path)
    assert old._storage.rotation.dtype == np.float32
    for rescore in ("bound", "all", 3):
        assert_hits_equal(old.search(data[:20], 4, nprobe=3, rescore=rescore),
                          index.search(data[:20], 4, nprobe=3, rescore=rescore))
    assert_hits_equal(old.search(data[:1], 4, nprobe=3), index.search(data[:1], 4, nprobe=3))
    old.add(data[:3])  # encodes with the dense matrix; saved again as layout 1
    old.save(path)
    assert "rabitq_layout" in stored(path, KIND)[0]
    assert stored(path, KIND)[0]["rabitq_layout"] == 1
    assert len(ragcore.IVFIndex.load(path)) == len(index) + 3


@pytest.mark.parametrize("change, field", [
    ({"params": {"rabitq_layout": 3}}, "params.rabitq_layout"),
    ({"params": {"rabitq_layout": 0}}, "params.rabitq_layout"),
    ({"arrays": {"rotation": np.zeros((3, 2), np.uint8)}}, "rotation"),
    ({"arrays": {"rotation": np.zeros((4, 2), np.int8)}}, "rotation"),
    ({"arrays": {"rotation": np.eye(16, 12, dtype=np.float32)}}, "rotation"),  # dense, layout 2
    ({"params": {"rabitq_layout": 1}}, "rotation"),  # sign bits where a matrix belongs
])
def test_crafted_rotations_are_refused(tmp_path, index, change, field):
    path = tmp_path / "bad.rc"
    index.save(path)
    rewrite(path, KIND, **change)
    with pytest.raises(IndexFileError, match=field):
        ragcore.IVFIndex.load(path)


def test_layout_1_file_above_the_dense_limit_is_refused(tmp_path):
    dim = 2056
    x = clustered(20, dim, 2, seed=0)
    index = ragcore.IVFIndex(dim, 2, "ip", "rabitq", bits=1)
    index.train(x)
    index.add(x)
    path = tmp_path / "big.rc"
    index.save(path)
    rewrite(path, KIND, arrays={"rotation": np.zeros((dim, dim), np.float32)},
            drop=["rabitq_layout"])
    with pytest.raises(IndexFileError, match="params.dim.*dense rotation"):
        ragcore.IVFIndex.load(path)
