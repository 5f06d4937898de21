"""BM25Index.save / load: round trips, memory mapping, damaged and foreign files."""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest

from ragcore import BM25Index, FlatIndex, IndexFileError
from ragcore._util import fileformat as _fileformat
from _bm25_corpora import zipf_corpus, zipf_queries
from _hits_check import assert_hits_equal

QUERIES = zipf_queries(12, seed=3)


def build(**kw) -> BM25Index:
    index = BM25Index(stopwords=None, **kw)
    corpus = zipf_corpus(400, seed=4)
    index.add(corpus, ids=np.arange(len(corpus)) * 3 + 1)
    index.remove([4, 7, 10])
    return index


def assert_same_index(a: BM25Index, b: BM25Index) -> None:
    assert (a.k1, a.b, a.delta, a.variant, a.lucene_norms, a.stopwords, a.stemmer) == (
        b.k1, b.b, b.delta, b.variant, b.lucene_norms, b.stopwords, b.stemmer)
    np.testing.assert_array_equal(a.ids, b.ids)
    assert a.vocabulary == b.vocabulary
    for k in (1, 10, len(a) + 2):
        assert_hits_equal(a.search(QUERIES, k), b.search(QUERIES, k))


def leftovers(directory) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n.endswith(".tmp") or n.startswith(".ragcore-"))


@pytest.mark.parametrize("kw", [{}, dict(variant="bm25+", k1=1.2, b=0.5, delta=0.3, lucene_norms=True)])
@pytest.mark.parametrize("mmap", [False, True])
def test_round_trip(tmp_path, kw, mmap):
    index = build(**kw)
    path = tmp_path / "bm25.rc"
    index.save(path)
    loaded = BM25Index.load(path, mmap=mmap)
    assert_same_index(index, loaded)
    assert leftovers(tmp_path) == []
    # A loaded index keeps growing like the original.
    for i in (index, loaded):
        i.add([["t1", "t2", "brand_new"]], ids=[5000])
        i.remove([1])
    assert_same_index(index, loaded)
    assert_hits_equal(index.search([["brand_new"]], 3), loaded.search([["brand_new"]], 3))


def test_tokenizer_settings_travel(tmp_path):
    pytest.importorskip("Stemmer")
    index = BM25Index(stopwords=["zz"], stemmer="english")
    index.add(["running runners", "zz ran"])
    index.save(tmp_path / "s.rc")
    loaded = BM25Index.load(tmp_path / "s.rc")
    assert loaded.stopwords == ("zz",) and loaded.stemmer == "english"
    assert_hits_equal(index.search(["runs", "zz"], 2), loaded.search(["runs", "zz"], 2))


def test_empty_index_round_trip(tmp_path):
    BM25Index().save(tmp_path / "e.rc")
    loaded = BM25Index.load(tmp_path / "e.rc")
    assert len(loaded) == 0 and loaded.search("anything", 2).ids.tolist() == [[-1, -1]]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "bm25.rc"
    build().save(path)
    return path.read_bytes()


def write(tmp_path, data: bytes):
    path = tmp_path / "damaged.rc"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("cut", [0, 10, 100, -5, -1])
def test_truncated_files_are_refused(tmp_path, saved, cut):
    with pytest.raises(IndexFileError):
        BM25Index.load(write(tmp_path, saved[:cut]))


@pytest.mark.parametrize("where", [0.3, 0.6, 0.9])
def test_flipped_bytes_are_refused(tmp_path, saved, where):
    data = bytearray(saved)
    data[int(len(data) * where)] ^= 0x40
    with pytest.raises(IndexFileError):
        BM25Index.load(write(tmp_path, bytes(data)))


def test_foreign_files_are_refused(tmp_path, saved):
    flat = FlatIndex(3)
    flat.add(np.eye(3, dtype=np.float32))
    flat.save(tmp_path / "flat.rc")
    with pytest.raises(IndexFileError, match="holds a FlatIndex, not a BM25Index"):
        BM25Index.load(tmp_path / "flat.rc")
    with pytest.raises(IndexFileError, match="bad magic"):
        BM25Index.load(write(tmp_path, b"PK\x03\x04" + saved[4:]))
    newer = bytearray(saved)
    struct.pack_into("<I", newer, 8, 99)
    with pytest.raises(IndexFileError, match="version 99"):
        BM25Index.load(write(tmp_path, bytes(newer)))


def rewritten(tmp_path, change) -> str:
    """A well-formed, correctly checksummed file whose contents `change` altered."""
    params, arrays = _fileformat.read_index(tmp_path / "good.rc", "BM25Index")
    arrays = {k: np.array(v) for k, v in arrays.items()}
    change(params, arrays)
    path = tmp_path / "crafted.rc"
    _fileformat.write_index(path, "BM25Index", params, arrays)
    return path


def _set(name, fn):
    def change(params, arrays):
        arrays[name] = fn(arrays[name])
    return change


CRAFTED = {
    "posting bytes scrambled": _set("postings", lambda a: np.roll(a, 3)),
    "a bit width above 32": _set("postings", lambda a: np.concatenate([[200], a[1:]]).astype(np.uint8)),
    "list ends past the bytes": _set("list_ends", lambda a: a + 5),
    "list sizes too large": _set("list_sizes", lambda a: a * 2 + 1),
    "duplicate document ids": _set("doc_ids", lambda a: np.where(a >= 0, 7, a)),
    "negative lengths": _set("doc_lengths", lambda a: a - 1000),
    "terms not UTF-8": _set("terms", lambda a: np.concatenate([[0xFF], a[1:]]).astype(np.uint8)),
    "term ends wrong": _set("term_ends", lambda a: a[:-1]),
    "missing array": lambda p, a: a.pop("postings"),
    "unknown variant": lambda p, a: p.update(variant="bm99"),
    "k1 not a number": lambda p, a: p.update(k1="high"),
    "missing param": lambda p, a: p.pop("b"),
}


@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_inconsistent_contents_are_refused(tmp_path, saved, name):
    (tmp_path / "good.rc").write_bytes(saved)
    with pytest.raises(IndexFileError):
        BM25Index.load(rewritten(tmp_path, CRAFTED[name]))


def test_failed_save_leaves_nothing(tmp_path, monkeypatch):
    index = build()
    index.save(tmp_path / "keep.rc")
    before = (tmp_path / "keep.rc").read_bytes()

    def boom(*args, **kw):
        raise OSError("disk full")

    monkeypatch.setattr(_fileformat.os, "fsync", boom)
    with pytest.raises(OSError, match="disk full"):
        index.save(tmp_path / "keep.rc")
    assert (tmp_path / "keep.rc").read_bytes() == before and leftovers(tmp_path) == []
