"""The boundary between the Python layer and the native modules: options cross as the
enum types of ragcore._core (shared by ragcore._cuda), never as integer codes; the long
native calls take their options by keyword only, except the search entries, called once per
query, which take them positionally too (keyword parsing costs more than a small search);
each user string has its enum member."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from ragcore import _core
from ragcore.hits import Hits
from ragcore.dense import _metric, _storage, ivf
from ragcore.sparse import bm25
from ragcore.sparse.variants import VARIANTS

X = np.arange(24, dtype=np.float32).reshape(6, 4)
Q = X[:2].copy()
F32, IP = _core.Storage.F32, _core.Metric.InnerProduct


def _ivf_arrays():
    centroids = X[:2].copy()
    return dict(centroids=centroids, centroid_sq_norms=(centroids ** 2).sum(1),
                list_offsets=np.array([0, 3, 6], np.int64), ids=np.arange(6, dtype=np.int64),
                sq_norms=None, nprobe=1)


def test_keyword_only_arguments_refuse_positional_use():
    with pytest.raises(TypeError):
        _core.kmeans(X, 2, 10)
    with pytest.raises(TypeError):
        _core.assign_nearest(X, X[:2], 1)
    with pytest.raises(TypeError):
        _core.tokenize_texts(["some text"], 1)
    with pytest.raises(TypeError):
        _core.Vocabulary().tokenize(["some text"], 1, 0)
    with pytest.raises(TypeError):
        _core.Bm25Index(1.5, 0.75, 0.5, _core.Variant.Lucene, False)


def test_keyword_calls_work():
    hits = _core.flat_search(X, len(X), Q, 2, storage=F32, metric=IP)
    assert isinstance(hits, Hits) and hits.ids.shape == (2, 2) and hits.ids[0, 0] == 5
    _, ids, stages = _core.ivf_search(X, Q, 2, storage=F32, metric=IP, **_ivf_arrays())
    assert ids.shape == (2, 2) and set(stages) == {"coarse", "scan", "rescore"}


def test_search_entries_take_positional_arguments():
    assert _core.flat_search(X, len(X), Q, 2, F32, IP).ids.tolist() == [[5, 4], [5, 4]]
    assert _core.flat_search(X, 3, Q[0], 2, F32, IP).ids.tolist() == [[2, 1]]  # rows [0, n)
    a = _ivf_arrays()
    _, ids, _ = _core.ivf_search(X, Q, 2, a["centroids"], a["centroid_sq_norms"],
                                 a["list_offsets"], F32, a["ids"], None, IP, 2)
    assert ids.tolist() == [[5, 4], [5, 4]]
    native = _core.Bm25Index(k1=1.5, b=0.75, delta=0.5, variant=_core.Variant.Lucene,
                             lucene_norms=False)
    assert native.num_docs == 0


def test_integer_codes_are_refused():
    with pytest.raises(TypeError):
        _core.flat_search(X, len(X), Q, 2, storage=0, metric=0)
    with pytest.raises(TypeError):
        _core.flat_search(X, len(X), Q, 2, storage=F32, metric=IP, path=1)
    with pytest.raises(TypeError):
        _core.kmeans(X, 2, init=1)
    with pytest.raises(TypeError):
        _core.Bm25Index(k1=1.5, b=0.75, delta=0.5, variant=0, lucene_norms=False)


def test_enum_values_built_from_out_of_range_integers_are_refused():
    with pytest.raises(ValueError, match="storage"):
        _core.flat_search(X, len(X), Q, 2, storage=_core.Storage(7), metric=IP)
    with pytest.raises(ValueError, match="storage"):
        _core.flat_search(X, len(X), Q, 2, storage=_core.Storage.SQ8, metric=IP)
    with pytest.raises(ValueError, match="metric"):
        _core.flat_search(X, len(X), Q, 2, storage=F32, metric=_core.Metric(5))
    with pytest.raises(ValueError, match="variant"):
        _core.Bm25Index(k1=1.5, b=0.75, delta=0.5, variant=_core.Variant(42), lucene_norms=False)


def test_every_user_string_has_its_enum_member():
    # The documented user strings, each mapped to the member the native code expects.
    assert _metric.NATIVE_METRIC == {"ip": _core.Metric.InnerProduct,
                                     "cosine": _core.Metric.InnerProduct, "l2": _core.Metric.L2}
    # pq4 and rabitq have native scans of their own, not members of Storage.
    assert set(_storage.NATIVE_STORAGE) == set(ivf.DTYPES) - {"pq4", "rabitq"}
    assert _storage.NATIVE_STORAGE["sq8"] is _core.Storage.SQ8
    assert bm25._NATIVE_ALGORITHM == {
        "auto": _core.QueryAlgorithm.Auto, "exhaustive": _core.QueryAlgorithm.Exhaustive,
        "maxscore": _core.QueryAlgorithm.MaxScore, "bmw": _core.QueryAlgorithm.BlockMaxWand,
        "bmp": _core.QueryAlgorithm.BlockMaxPruning}
    # The registry's variants, in its order, are the native variants in theirs.
    native_order = sorted(_core.Variant.__members__.values(), key=int)
    assert [bm25._NATIVE_VARIANT[name] for name in VARIANTS] == native_order


# make test-asan builds the CPU module alone (RAGCORE_CUDA=OFF), whatever nvcc there is.
@pytest.mark.skipif(shutil.which("nvcc") is None or os.environ.get("RAGCORE_SANITIZED") == "1",
                    reason="no nvcc, or the sanitizer build: the CUDA module is not built")
def test_the_cuda_module_uses_the_same_enum_types():
    from ragcore import _cuda
    assert _cuda.Storage is _core.Storage and _cuda.Metric is _core.Metric
    with pytest.raises(TypeError):  # integer codes
        _cuda.DeviceCorpus(0, 8, storage=0, metric=0)
    with pytest.raises(TypeError):  # positional options
        _cuda.DeviceCorpus(0, 8, F32, IP)
    try:  # _core's members are accepted: what remains is whether device 0 exists
        _cuda.DeviceCorpus(0, 8, storage=_core.Storage.F16, metric=_core.Metric.L2)
    except ValueError as err:
        assert "device" in str(err)


def test_simd_levels_outside_the_enum_are_refused():
    for bad in (_core.SimdLevel(-5), _core.SimdLevel(99)):
        with pytest.raises(ValueError, match="simd_level"):
            _core.flat_search(X, len(X), Q, 2, storage=F32, metric=IP, simd_level=bad)
        with pytest.raises(ValueError, match="simd_level"):
            _core.blocked_path_min_batch(bad, F32)
        with pytest.raises(ValueError, match="simd_level"):
            _core.simd_level_name(bad)


def test_the_bm25_entry_returns_hits_and_writes_the_algorithms_only_where_asked():
    index = bm25.BM25Index(stopwords=None)
    index.add(["aa bb", "bb cc", "cc dd"])
    encoder, native = index._pair
    auto = _core.QueryAlgorithm.Auto
    hits = encoder.search(native, ["bb", "cc"], False, 2, auto, 1, None, False, None)
    assert isinstance(hits, Hits) and hits.ids.shape == (2, 2)
    codes = np.full(2, 255, np.uint8)
    again = encoder.search(native, ["bb", "cc"], False, 2, auto, 1, None, False, codes)
    np.testing.assert_array_equal(again.ids, hits.ids)
    assert all(0 < c < 255 for c in codes)  # the algorithm that ran, never Auto (0)
    read_only = np.zeros(2, np.uint8)
    read_only.flags.writeable = False
    for bad in (np.zeros(3, np.uint8), np.zeros(2, np.int64), np.zeros(4, np.uint8)[::2],
                read_only, [0, 0]):
        with pytest.raises(ValueError, match="algorithms_out"):
            encoder.search(native, ["bb", "cc"], False, 2, auto, 1, None, False, bad)
