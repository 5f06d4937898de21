"""PQIndex remove, save and load (mmap included), and files crafted to break the loader."""

import numpy as np
import pytest

import ragcore
from ragcore import IndexFileError
from _crafted import rewrite, set_element, stored
from _hnsw_data import clustered

KIND = "PQIndex"


def _index(metric="ip", n=500, d=24, m=6, ids=None):
    x = clustered(n, d, seed=11)
    index = ragcore.PQIndex(d, m, metric)
    index.train(x)
    index.add(x, ids=ids)
    return index, x


@pytest.mark.parametrize("metric", ["ip", "cosine", "l2"])
@pytest.mark.parametrize("mmap", [False, True])
def test_save_load_gives_the_same_answers(tmp_path, metric, mmap):
    index, x = _index(metric, ids=np.arange(1000, 1500))
    index.remove([1003, 1200])
    q = clustered(20, 24, seed=12)
    path = tmp_path / "pq.rc"
    index.save(path)
    back = ragcore.PQIndex.load(path, mmap=mmap)
    assert (back.dim, back.m, back.metric, len(back)) == (24, 6, metric, 498)
    for rescore in (1, 4, 100):
        a, b = index.search(q, 10, rescore=rescore), back.search(q, 10, rescore=rescore)
        np.testing.assert_array_equal(a.ids, b.ids)
        np.testing.assert_array_equal(a.scores, b.scores)
    np.testing.assert_array_equal(back.centroids, index.centroids)
    assert back.add(x[:2]).tolist() == [1500, 1501]  # next_id survives the file


def test_untrained_index_roundtrip(tmp_path):
    ragcore.PQIndex(8, 4).save(tmp_path / "empty.rc")
    back = ragcore.PQIndex.load(tmp_path / "empty.rc")
    assert not back.is_trained and len(back) == 0


def test_removed_vectors_never_come_back():
    index, x = _index(n=400)
    gone = np.arange(0, 400, 3)
    index.remove(gone)
    assert len(index) == 400 - len(gone)
    hits = index.search(x[:50], 20, rescore=50)
    assert not np.isin(hits.ids, gone).any()
    # The rest is exactly searchable: full re-scoring finds each kept vector itself.
    kept = np.setdiff1d(np.arange(400), gone)
    top = index.search(x[kept[:30]], 1, rescore=400).ids[:, 0]
    np.testing.assert_array_equal(top, kept[:30])
    with pytest.raises(ValueError, match="not in the index"):
        index.remove([gone[0]])
    assert len(index) == 400 - len(gone)  # a failed remove removes nothing


def _crafts(path):
    params, arrays = stored(path, KIND)
    n, m = arrays["codes"].shape
    return [
        ({"params": {"m": 5}}, "m"),
        ({"params": {"m": 0}}, "params.m"),
        ({"params": {"dim": 0}}, "params.dim"),
        ({"params": {"metric": "dot"}}, "params.metric"),
        ({"params": {"next_id": 1}}, "next_id"),
        ({"arrays": {"codes": arrays["codes"][:-1]}}, "codes"),
        ({"arrays": {"codes": np.full((n, m), 16, np.uint8)}}, "codes"),
        ({"arrays": {"ids": np.zeros(n, np.int64)}}, "ids"),
        ({"arrays": {"ids": -np.arange(1, n + 1, dtype=np.int64)}}, "ids"),
        ({"arrays": {"exact": arrays["exact"][:, :-1].copy()}}, "exact"),
        ({"arrays": {"exact": np.full_like(arrays["exact"], 1e30)}}, "exact"),
        ({"arrays": {"codebooks": np.full_like(arrays["codebooks"], np.nan)}}, "codebooks"),
        ({"arrays": {"codebooks": arrays["codebooks"][:-1]}}, "codebooks"),
        ({"drop": ["codebooks"]}, "codebooks"),
        ({"drop": ["exact"]}, "exact"),
    ]


@pytest.mark.parametrize("case", range(15))
def test_crafted_files_are_refused_naming_the_field(tmp_path, case):
    index, _ = _index()
    path = tmp_path / "pq.rc"
    index.save(path)
    change, field = _crafts(path)[case]
    rewrite(path, KIND, **change)
    with pytest.raises(IndexFileError, match=field):
        ragcore.PQIndex.load(path)


def test_crafted_l2_norms_and_cosine_rows_are_refused(tmp_path):
    index, _ = _index("l2")
    path = tmp_path / "l2.rc"
    index.save(path)
    set_element(path, KIND, "sq_norms", 3, 7.0)
    with pytest.raises(IndexFileError, match="sq_norms"):
        ragcore.PQIndex.load(path)
    index, _ = _index("cosine")
    index.save(path)
    set_element(path, KIND, "exact", (2, 0), 3.0)
    with pytest.raises(IndexFileError, match="norm 1"):
        ragcore.PQIndex.load(path)


def test_damaged_and_foreign_files_are_refused(tmp_path):
    index, _ = _index()
    path = tmp_path / "pq.rc"
    index.save(path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    (tmp_path / "bad.rc").write_bytes(bytes(data))
    with pytest.raises(IndexFileError, match="checksum"):
        ragcore.PQIndex.load(tmp_path / "bad.rc")
    flat = ragcore.FlatIndex(24)
    flat.save(tmp_path / "flat.rc")
    with pytest.raises(IndexFileError, match="not a PQIndex"):
        ragcore.PQIndex.load(tmp_path / "flat.rc")
