"""HNSWIndex save/load: round trips, and damaged or crafted files refused."""

import os

import numpy as np
import pytest

import ragcore
from ragcore._util.fileformat import read_index, write_index
from _hnsw_data import clustered


def _built(metric="ip", dtype="float32", n=500):
    x = clustered(n, 16, seed=1)
    index = ragcore.HNSWIndex(16, metric, M=6, ef_construction=32, dtype=dtype, seed=3)
    index.add(x, ids=np.arange(n) * 5 + 1, n_threads=1)
    index.remove(np.arange(0, n, 7) * 5 + 1)  # free slots in the file
    return index, x


@pytest.mark.parametrize("metric", ["ip", "cosine", "l2"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("mmap", [False, True])
def test_round_trip_gives_the_same_answers(tmp_path, metric, dtype, mmap):
    index, x = _built(metric, dtype)
    path = tmp_path / "g.rc"
    index.save(path)
    loaded = ragcore.HNSWIndex.load(path, mmap=mmap)
    assert (loaded.M, loaded.ef_construction, loaded.dtype, loaded.metric, len(loaded)) == \
        (index.M, index.ef_construction, index.dtype, index.metric, len(index))
    for ef in (4, 40):
        a, b = index.search(x[:30], 5, ef=ef), loaded.search(x[:30], 5, ef=ef)
        np.testing.assert_array_equal(a.ids, b.ids)
        np.testing.assert_array_equal(a.scores, b.scores)
    # Later adds behave as on the original (slots, levels and ids continue alike).
    more = clustered(40, 16, seed=9)
    np.testing.assert_array_equal(index.add(more, n_threads=1), loaded.add(more, n_threads=1))
    np.testing.assert_array_equal(index.search(more, 5).ids, loaded.search(more, 5).ids)
    os.remove(path)  # a mapped file's data was copied by add, nothing reads it any more
    assert len(loaded.search(more, 5).ids) == 40


def test_empty_index_round_trip(tmp_path):
    ragcore.HNSWIndex(3, "l2").save(tmp_path / "e.rc")
    loaded = ragcore.HNSWIndex.load(tmp_path / "e.rc")
    assert len(loaded) == 0 and (loaded.search(np.ones(3, np.float32), 2).ids == -1).all()


def test_damaged_and_foreign_files_are_refused(tmp_path):
    index, _ = _built()
    path = tmp_path / "g.rc"
    index.save(path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40
    (tmp_path / "flip.rc").write_bytes(bytes(data))
    with pytest.raises(ragcore.IndexFileError, match="checksum"):
        ragcore.HNSWIndex.load(tmp_path / "flip.rc")
    (tmp_path / "cut.rc").write_bytes(path.read_bytes()[:-100])
    with pytest.raises(ragcore.IndexFileError):
        ragcore.HNSWIndex.load(tmp_path / "cut.rc")
    flat = ragcore.FlatIndex(16)
    flat.save(tmp_path / "flat.rc")
    with pytest.raises(ragcore.IndexFileError, match="not a HNSWIndex"):
        ragcore.HNSWIndex.load(tmp_path / "flat.rc")


def _crafted(tmp_path, change):
    """A file whose checksum is right but whose contents were changed by change(params, arrays)."""
    index, _ = _built()
    index.save(tmp_path / "g.rc")
    params, arrays = read_index(tmp_path / "g.rc", "HNSWIndex")
    arrays = {name: a.copy() for name, a in arrays.items()}
    change(params, arrays)
    write_index(tmp_path / "bad.rc", "HNSWIndex", params, arrays)
    return tmp_path / "bad.rc"


def _live(arrays):
    return int(np.flatnonzero(arrays["levels"] >= 0)[0])


CRAFTED = {
    "neighbour outside the index": (lambda p, a: a["links0"].__setitem__((_live(a), 1), 10**6), "outside the index"),
    "neighbour count above the degree": (lambda p, a: a["links0"].__setitem__((_live(a), 0), 99), "neighbours on level 0"),
    "link to a free slot": (lambda p, a: a["links0"].__setitem__(
        (_live(a), 1), int(np.flatnonzero(a["levels"] < 0)[0])), "not on level 0"),
    "level without upper lists": (lambda p, a: a["levels"].__setitem__(_live(a), 5), "upper offsets|level"),
    "entry point out of range": (lambda p, a: p.__setitem__("entry", 10**9), "entry point"),
    "id of a free slot": (lambda p, a: a["ids"].__setitem__(int(np.flatnonzero(a["levels"] < 0)[0]), 7), "disagree"),
    "repeated id": (lambda p, a: a["ids"].__setitem__(_live(a) + 1, a["ids"][_live(a)]), "twice|unique"),
    "upper offsets beyond the lists": (lambda p, a: a["upper_offsets"].__setitem__(-1, 10**9), "upper"),
    "links of the wrong dtype": (lambda p, a: a.__setitem__("links0", a["links0"].astype(np.int64)), "links0"),
    "vectors of the wrong shape": (lambda p, a: a.__setitem__("vectors", a["vectors"][:, :8].copy()), "vectors"),
    "NaN vector": (lambda p, a: a["vectors"].__setitem__((_live(a), 0), np.nan), "NaN"),
    "missing array": (lambda p, a: a.pop("upper"), "upper"),
    "M changed": (lambda p, a: p.__setitem__("M", 7), "links0"),
}


@pytest.mark.parametrize("case", sorted(CRAFTED))
def test_crafted_files_are_refused_not_followed(tmp_path, case):
    change, message = CRAFTED[case]
    path = _crafted(tmp_path, change)
    with pytest.raises(ragcore.IndexFileError, match=message):
        ragcore.HNSWIndex.load(path)
