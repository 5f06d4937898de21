"""Collection with dense="hnsw": searches checked against brute force (an ef as large as the
collection makes the small graph's search exact), filters through the graph walk and through
the exact path, deletes, reopening and repairing the graph file, and bad options."""

from __future__ import annotations

import os

import numpy as np
import pytest

from _collection_data import (ForbiddenEncoder, HashEncoder, assert_same_ranking,
                              brute_force_dense, corpus, queries)
import ragcore.dense.hnsw as hnsw_module
from ragcore import CollectionError
from ragcore.rag.collection import Collection

N = 400
FULL_EF = {"kind": "hnsw", "M": 8, "ef_construction": 64, "ef": N}


def _check_exact(col, texts, allowed, flt=None, k=10):
    enc = HashEncoder()
    for q in queries(10, seed=4):
        got = col.search(q, k=k, mode="dense", filter=flt)
        want_scores, want_ids = brute_force_dense(enc, texts, allowed, q, k)
        assert_same_ranking(np.array([m.score for m in got]), np.array([m.id for m in got]),
                            want_scores, want_ids)


@pytest.fixture
def hnsw_collection(tmp_path):
    texts, metadata = corpus(N, seed=6)
    col = Collection.create(tmp_path / "c", encoder=HashEncoder(), chunker="none", dense=FULL_EF)
    col.add(texts[:250], ids=list(range(250)), metadata=metadata[:250])
    col.add(texts[250:], ids=list(range(250, N)), metadata=metadata[250:])
    yield col, texts, metadata
    col.close()


def test_the_graph_serves_dense_search_exactly_at_full_ef(hnsw_collection):
    col, texts, _ = hnsw_collection
    assert type(col.indexes.dense).__name__ == "HNSWIndex" and len(col.indexes.dense) == N
    _check_exact(col, texts, list(range(N)))


@pytest.mark.parametrize("factor", [0.0, 1e6])  # through the walk / the allowed scored alone
def test_filters_inside_the_walk_and_on_the_exact_path(hnsw_collection, monkeypatch, factor):
    monkeypatch.setattr(hnsw_module, "EXACT_FILTER_FACTOR", factor)
    col, texts, metadata = hnsw_collection
    flt = {"year": {"$gte": 2000}}
    allowed = [i for i in range(N) if metadata[i]["year"] >= 2000]
    _check_exact(col, texts, allowed, flt)
    for m in col.search("alpha beta", k=20, mode="dense", filter=flt):
        assert m.metadata["year"] >= 2000
    assert col.indexes.dense.last_search["exact"] == (factor > 0)


def test_deleted_chunks_never_appear_and_leave_the_graph(hnsw_collection, monkeypatch):
    col, texts, _ = hnsw_collection
    top = [m.id for m in col.search("alpha beta gamma", k=30, mode="dense")]
    col.delete(top[:15])
    assert len(col.indexes.tombstones) == 15
    alive = [i for i in range(N) if i not in set(top[:15])]
    _check_exact(col, texts, alive)
    col.compact()
    assert not col.indexes.tombstones and len(col.indexes.dense) == N - 15
    _check_exact(col, texts, alive)
    col.add([texts[i] for i in top[:15]], ids=[1000 + i for i in range(15)])  # reuses slots
    assert len(col.indexes.dense) == N


def test_reopen_loads_the_graph_and_repairs_a_damaged_one(tmp_path):
    texts, metadata = corpus(N, seed=7)
    path = tmp_path / "c"
    with Collection.create(path, encoder=HashEncoder(), chunker="none", dense=FULL_EF) as col:
        col.add(texts, ids=list(range(N)), metadata=metadata)
        col.delete([1, 2, 3])
    alive = [i for i in range(N) if i not in (1, 2, 3)]
    with Collection.open(path, encoder=ForbiddenEncoder()) as col:
        assert type(col.indexes.dense).__name__ == "HNSWIndex" and not col.repaired
        _check_exact(col, texts, alive)
    dense_file = [n for n in os.listdir(path) if n.startswith("dense-") and n.endswith(".rci")]
    data = bytearray((path / dense_file[0]).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (path / dense_file[0]).write_bytes(bytes(data))
    with Collection.open(path, encoder=ForbiddenEncoder()) as col:  # rebuilt, not re-encoded
        assert col.repaired and type(col.indexes.dense).__name__ == "HNSWIndex"
        _check_exact(col, texts, alive)


def test_a_flat_file_in_an_hnsw_collection_is_rebuilt_as_a_graph(tmp_path):
    texts, _ = corpus(60, seed=2)
    path = tmp_path / "c"
    with Collection.create(path, encoder=HashEncoder(), chunker="none", dense=FULL_EF) as col:
        col.add(texts, ids=list(range(60)))
    flat_dir = tmp_path / "flat"
    with Collection.create(flat_dir, encoder=HashEncoder(), chunker="none") as flat:
        flat.add(texts, ids=list(range(60)))
    name = next(n for n in os.listdir(path) if n.startswith("dense-"))
    flat_name = next(n for n in os.listdir(flat_dir) if n.startswith("dense-"))
    (path / name).write_bytes((flat_dir / flat_name).read_bytes())
    with Collection.open(path, encoder=ForbiddenEncoder()) as col:
        assert col.repaired and type(col.indexes.dense).__name__ == "HNSWIndex"
        _check_exact(col, texts, list(range(60)))


@pytest.mark.parametrize("dense, error, words", [
    ({"kind": "hnsw", "M": 1}, ValueError, "M"),
    ({"kind": "hnsw", "ef": 0}, ValueError, "ef"),
    ({"kind": "hnsw", "ef_construction": -3}, ValueError, "ef_construction"),
    ({"kind": "hnsw", "dtype": "int4"}, ValueError, "dtype"),
    ({"kind": "hnsw", "nlist": 4}, CollectionError, "nlist"),
    ({"kind": "hnsw", "metric": "hamming"}, ValueError, "metric"),
])
def test_bad_hnsw_options_are_refused_before_anything_is_written(tmp_path, dense, error, words):
    with pytest.raises(error, match=words):
        Collection.create(tmp_path / "c", encoder=HashEncoder(), chunker="none", dense=dense)
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("dtype", ["float16", "int8"])
def test_narrow_storage_collections_return_the_stored_vectors_scores(tmp_path, dtype):
    texts, _ = corpus(200, seed=9)
    cfg = dict(FULL_EF, dtype=dtype)
    with Collection.create(tmp_path / "c", encoder=HashEncoder(), chunker="none", dense=cfg) as col:
        col.add(texts, ids=list(range(200)))
        got = col.search("alpha beta", k=10, mode="dense")
        want_scores, _ = brute_force_dense(HashEncoder(), texts, list(range(200)), "alpha beta", 10)
        atol = 2e-3 if dtype == "float16" else 1e-5  # int8 re-scores with float32 vectors
        np.testing.assert_allclose([m.score for m in got], want_scores, atol=atol)
