"""IVFIndex(dtype="bfloat16", compute="bfloat16"): the lists scanned by FlatIndex's bf16
kernels, so its scores are FlatIndex(dtype="bfloat16", compute="bfloat16")'s bit for bit
(at nprobe = nlist the same answer), a query's answer does not depend on its batch, and the
option is checked, saved and loaded like FlatIndex's."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragcore import FlatIndex, IndexFileError, IVFIndex, _core

EXACT_LEVELS = [lvl for lvl in (_core.Bf16Level.Scalar, _core.Bf16Level.Avx512Bf16)
                if _core.bf16_level_available(lvl)]
SETTINGS = settings(max_examples=12, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.int32)


def _ivf(x, nlist, metric, level=None):
    index = IVFIndex(x.shape[1], nlist, metric, "bfloat16", compute="bfloat16", max_iter=3)
    index.train(x)
    index.add(x, ids=np.arange(len(x)) * 3 + 1)
    index._storage.bf16_level = level
    return index


@pytest.mark.parametrize("level", EXACT_LEVELS, ids=str)
@pytest.mark.parametrize("metric", ["ip", "l2", "cosine"])
@SETTINGS
@given(n=st.integers(1, 400), d=st.sampled_from((1, 7, 32, 33, 70)), nq=st.integers(1, 300),
       nlist=st.integers(1, 5), k=st.integers(1, 12), threads=st.sampled_from((1, 2)),
       seed=st.integers(0, 2**31))
def test_all_lists_probed_is_flat_bf16_compute_bit_for_bit(level, metric, n, d, nq, nlist, k,
                                                           threads, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    q = rng.standard_normal((nq, d)).astype(np.float32)
    nlist = min(nlist, n)
    flat = FlatIndex(d, metric, "bfloat16", compute="bfloat16")
    flat.add(x, ids=np.arange(n) * 3 + 1)
    flat._search_options = {"bf16_level": level}
    want = flat.search(q, k, n_threads=1)
    got = _ivf(x, nlist, metric, level).search(q, k, nprobe=nlist, n_threads=threads)
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_array_equal(_bits(got.scores), _bits(want.scores))


@pytest.mark.parametrize("metric", ["ip", "l2"])
@SETTINGS
@given(nq=st.integers(2, 300), nprobe=st.integers(1, 3), filtered=st.booleans(),
       seed=st.integers(0, 2**31))
def test_a_query_gets_its_answer_alone_whatever_its_batch(metric, nq, nprobe, filtered, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((500, 40)).astype(np.float32)
    q = rng.standard_normal((nq, 40)).astype(np.float32)
    index = _ivf(x, 4, metric)
    allow = rng.choice(500, 120, replace=False) * 3 + 1 if filtered else None
    batch = index.search(q, 6, nprobe=nprobe, n_threads=1, allow=allow)
    for row in range(0, nq, max(1, nq // 25)):
        alone = index.search(q[row], 6, nprobe=nprobe, allow=allow)
        np.testing.assert_array_equal(alone.ids[0], batch.ids[row])
        np.testing.assert_array_equal(_bits(alone.scores[0]), _bits(batch.scores[row]))


def test_scores_differ_from_float32_compute_by_the_query_rounding():
    """Not float32 compute in disguise: the scores are those of the bf16-rounded query."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((300, 64)).astype(np.float32)
    q = rng.standard_normal((20, 64)).astype(np.float32)
    bf16 = _ivf(x, 3, "ip").search(q, 5, nprobe=3)
    f32 = IVFIndex(64, 3, "ip", "bfloat16", max_iter=3)
    f32.train(x)
    f32.add(x, ids=np.arange(300) * 3 + 1)
    assert not np.array_equal(_bits(bf16.scores), _bits(f32.search(q, 5, nprobe=3).scores))
    np.testing.assert_allclose(bf16.scores, f32.search(q, 5, nprobe=3).scores, rtol=0.05, atol=0.3)


def test_compute_is_checked_and_applies_to_bfloat16_rows_only():
    with pytest.raises(ValueError, match="compute applies to dtype='bfloat16' only"):
        IVFIndex(8, 2, dtype="float32", compute="bfloat16")
    with pytest.raises(ValueError, match="unknown compute"):
        IVFIndex(8, 2, dtype="bfloat16", compute="int8")
    assert IVFIndex(8, 2).compute == "float32"
    assert IVFIndex(8, 2, dtype="bfloat16").compute == "float32"


def test_compute_is_kept_by_save_load_and_repr(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 16)).astype(np.float32)
    index = _ivf(x, 4, "ip")
    index.save(tmp_path / "i.rc")
    loaded = IVFIndex.load(tmp_path / "i.rc")
    assert loaded.compute == "bfloat16" and "compute='bfloat16'" in repr(loaded)
    q = rng.standard_normal((30, 16)).astype(np.float32)
    np.testing.assert_array_equal(_bits(loaded.search(q, 5, nprobe=2).scores),
                                  _bits(index.search(q, 5, nprobe=2).scores))
    plain = IVFIndex(16, 4, dtype="bfloat16", max_iter=3)
    plain.train(x)
    plain.save(tmp_path / "plain.rc")  # float32 compute writes no compute field
    assert IVFIndex.load(tmp_path / "plain.rc").compute == "float32"


@pytest.mark.parametrize("dtype, value", [("bfloat16", "int8"), ("bfloat16", 1),
                                          ("float32", "bfloat16"), ("sq8", "float32")])
def test_a_file_with_a_bad_compute_field_is_refused(tmp_path, dtype, value):
    from ragcore._util.fileformat import read_index, write_index

    index = IVFIndex(4, 2, dtype=dtype, max_iter=2)
    index.train(np.random.default_rng(0).standard_normal((20, 4)).astype(np.float32))
    path = tmp_path / "i.rc"
    index.save(path)
    params, arrays = read_index(path, "IVFIndex")
    params["compute"] = value
    write_index(path, "IVFIndex", params, {name: np.asarray(a) for name, a in arrays.items()})
    with pytest.raises(IndexFileError, match="params.compute"):
        IVFIndex.load(path)


def test_the_native_search_refuses_bf16_compute_over_other_rows():
    index = IVFIndex(4, 1, max_iter=2)
    x = np.eye(4, dtype=np.float32)
    index.train(x)
    index.add(x)
    index._storage._compute_args = lambda: (True, None)  # as a bfloat16 index asks
    with pytest.raises(ValueError, match="bf16_compute"):
        index.search(x, 1)
