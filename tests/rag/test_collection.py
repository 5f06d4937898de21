"""Collection: add / upsert / delete / get / count, search in every mode with filters pushed
into the scans (checked against brute force), tombstones, the content-hash embedding store,
and reopening (index files missing, damaged or stale are repaired without re-encoding)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from _collection_data import (ForbiddenEncoder, HashEncoder, assert_same_ranking,
                              brute_force_dense, corpus, queries)
from ragcore import BM25Index
import ragcore.rag.collection.indexes as indexes_module
from ragcore.rag.collection.indexes import MANIFEST
from ragcore.rag.collection import Collection


@pytest.fixture
def filled(tmp_path):
    texts, metadata = corpus(300, seed=3)
    enc = HashEncoder()
    col = Collection.create(tmp_path / "c", encoder=enc, chunker="none")
    col.add(texts, ids=list(range(300)), metadata=metadata)
    yield col, texts, metadata, enc
    col.close()


@pytest.mark.parametrize("flt", [None, {"year": {"$gte": 2020}}, {"lang": "fr"},
                                 {"$or": [{"public": True}, {"score": {"$lt": 0.1}}]},
                                 {"year": 2001}])
def test_dense_search_is_exact_with_and_without_filters(filled, flt):
    col, texts, metadata, enc = filled
    allowed = [i for i in range(len(texts)) if matches(metadata[i], flt)]
    for q in queries(12, seed=5):
        got = col.search(q, k=10, mode="dense", filter=flt)
        want_scores, want_ids = brute_force_dense(enc, texts, allowed, q, 10)
        assert_same_ranking(np.array([m.score for m in got]), np.array([m.id for m in got]),
                            want_scores, want_ids)
        for m in got:
            assert matches(m.metadata, flt) and m.metadata == metadata[m.id]
            assert texts[m.id][m.start:m.end] == m.text


@pytest.mark.parametrize("flt", [None, {"lang": {"$in": ["en", "de"]}}, {"year": {"$lt": 1995}}])
def test_sparse_search_equals_bm25_over_all_then_filter(filled, flt):
    col, texts, metadata, _ = filled
    bm25 = BM25Index()
    bm25.add(texts)
    allowed = np.array([i for i in range(len(texts)) if matches(metadata[i], flt)])
    for q in queries(12, seed=6):
        got = col.search(q, k=10, mode="sparse", filter=flt)
        # Only documents holding a query word are BM25 results.
        held = allowed[[not set(q.split()).isdisjoint(texts[i].split()) for i in allowed]]
        scores = bm25.get_scores(q)[held]
        order = np.lexsort((held, -scores.astype(np.float64)))[:10]
        assert [m.id for m in got] == held[order].tolist()
        np.testing.assert_array_equal([np.float32(m.score) for m in got], scores[order])


def test_hybrid_fuses_both_lists_and_fusion_passes_through(filled):
    col, *_ = filled
    calls = []

    def first_list_only(lists, k):
        calls.append(len(lists))
        return lists[0]

    q = "alpha beta"
    hybrid = col.search(q, k=5, fusion=first_list_only)
    dense = col.search(q, k=5, mode="dense", k0=50)
    assert calls == [2] and [m.chunk_id for m in hybrid] == [m.chunk_id for m in dense]
    wsum = col.search(q, k=5, fusion={"method": "wsum", "norm": "minmax"})
    rrf = col.search(q, k=5)
    assert len(wsum) == len(rrf) == 5
    assert set(rrf.timings) >= {"filter", "encode", "dense", "sparse", "fuse", "fetch"}
    batch = col.search([q, "gamma"], k=3)
    assert [m.chunk_id for m in batch[0]] == [m.chunk_id for m in col.search(q, k=3)]


def test_a_tuned_fusion_setting_is_accepted(filled):
    """A FusionSetting (what fusion.tune returns) fuses dense then sparse: alpha 1 keeps the
    dense order, alpha 0 the BM25 order."""
    from ragcore.rag.fusion import FusionSetting
    col, *_ = filled
    q = "alpha beta"
    dense = col.search(q, k=5, mode="dense", k0=50)
    sparse = col.search(q, k=5, mode="sparse", k0=50)
    assert [m.chunk_id for m in dense] != [m.chunk_id for m in sparse]
    only_dense = col.search(q, k=5, fusion=FusionSetting("convex", alpha=1.0, norm="minmax"))
    only_sparse = col.search(q, k=5, fusion=FusionSetting("convex", alpha=0.0, norm="minmax"))
    assert [m.chunk_id for m in only_dense] == [m.chunk_id for m in dense]
    assert [m.chunk_id for m in only_sparse] == [m.chunk_id for m in sparse]


def test_a_selective_filter_still_returns_k_and_only_allowed(filled):
    col, texts, metadata, enc = filled
    target = [i for i in range(len(texts)) if metadata[i]["year"] == 2001]
    with_alpha = [i for i in target if "alpha" in texts[i].split()]
    assert 0 < len(with_alpha) < len(target) < 20
    for mode, want in (("dense", target), ("sparse", with_alpha), ("hybrid", target)):
        got = col.search("alpha", k=50, mode=mode, filter={"year": 2001})
        assert sorted(m.id for m in got) == sorted(want)
    # Above the exact-scoring threshold the native filtered scan answers: the same results.
    flt = {"year": {"$gte": 2000}}
    exact = col.search("beta gamma", k=10, mode="dense", filter=flt)
    old = indexes_module._EXACT_ALLOW_MAX
    indexes_module._EXACT_ALLOW_MAX = 0
    try:
        scanned = col.search("beta gamma", k=10, mode="dense", filter=flt)
    finally:
        indexes_module._EXACT_ALLOW_MAX = old
    np.testing.assert_allclose([m.score for m in exact], [m.score for m in scanned], atol=1e-6)


def test_deleted_documents_never_appear_even_before_compaction(filled):
    col, texts, _, _ = filled
    q = "alpha beta gamma"
    top = [m.id for m in col.search(q, k=20, mode="dense")]
    col.delete(top[:10])
    assert len(col.indexes.tombstones) > 0  # still in the dense index, skipped
    for mode in ("dense", "sparse", "hybrid"):
        got = [m.id for m in col.search(q, k=40, mode=mode)]
        assert not set(got) & set(top[:10]) and len(got) == 40
    assert [m.id for m in col.search(q, k=10, mode="dense")] == top[10:20]
    assert len(col) == 290 and col.get(top[:10]) == []
    col.compact()
    assert not col.indexes.tombstones
    assert [m.id for m in col.search(q, k=10, mode="dense")] == top[10:20]


def test_many_deletes_drop_tombstones_physically(tmp_path, monkeypatch):
    monkeypatch.setattr(indexes_module, "_MAX_TOMBSTONES", 5)
    texts, metadata = corpus(60)
    with Collection.create(tmp_path / "c", encoder=HashEncoder(), chunker="none") as col:
        col.add(texts, ids=list(range(60)), metadata=metadata)
        col.delete(list(range(0, 60, 2)))
        assert len(col.indexes.dense) == 30 and not col.indexes.tombstones
        assert all(m.id % 2 for m in col.search("alpha", k=30, mode="dense"))


def test_upsert_replaces_and_text_is_never_encoded_twice(tmp_path):
    enc = HashEncoder()
    with Collection.create(tmp_path / "c", encoder=enc, chunker="none") as col:
        col.add(["alpha beta", "gamma delta", "alpha beta"], ids=["a", "b", "c"])
        assert enc.encoded == ["alpha beta", "gamma delta"]  # "c" reuses "a"'s embedding
        col.upsert(["gamma delta", "new text here"], ids=["a", "z"],
                   metadata=[{"v": 2}, None])
        assert enc.encoded[2:] == ["new text here"]
        assert [(d.id, d.text, d.metadata) for d in col.get(["a", "z", "nope"])] == \
            [("a", "gamma delta", {"v": 2}), ("z", "new text here", {})]
        assert len(col) == 4
        top = col.search("gamma delta", k=4, mode="sparse")
        assert {m.id for m in top[:2]} == {"a", "b"}
    with Collection.open(tmp_path / "c", encoder=enc) as col:
        col.add(["gamma delta"], ids=["d"])
    assert enc.encoded[3:] == []


def test_the_real_chunker_keeps_offsets(tmp_path):
    text = ("The first sentence is here. " * 30 + "\n\n" + "Another paragraph follows. " * 30)
    with Collection.create(tmp_path / "c", encoder=HashEncoder()) as col:
        col.add([text], ids=[7], metadata=[{"kind": "long"}])
        got = col.search("paragraph follows", k=10, mode="sparse")
        assert len({m.position for m in got}) == len(got) > 1
        for m in got:
            assert text[m.start:m.end] == m.text and m.id == 7
        assert len(col.search("paragraph", k=10, by="document")) == 1


def reference_results(col, qs, k):
    out = []
    for q in qs:
        for mode in ("dense", "sparse"):
            out.append([(m.id, m.position, round(m.score, 5)) for m in col.search(q, k=k, mode=mode)])
    return out


def test_reopen_repairs_missing_damaged_and_stale_files_without_encoding(tmp_path):
    texts, metadata = corpus(200, seed=8)
    path = tmp_path / "c"
    with Collection.create(path, encoder=HashEncoder(), chunker="none") as col:
        col.add(texts[:150], ids=list(range(150)), metadata=metadata[:150])
        col.flush()
        col.add(texts[150:], ids=list(range(150, 200)), metadata=metadata[150:])
        col.delete([3, 4, 5])
        want = reference_results(col, queries(8), 10)
    # Stale: the files reflect an older change number than the database.
    manifest = (path / MANIFEST).read_text()
    with Collection.open(path, encoder=ForbiddenEncoder()) as col:
        assert reference_results(col, queries(8), 10) == want
    stale_names = [n for n in os.listdir(path) if n.endswith(".rci")]
    for n in stale_names:
        os.unlink(path / n)
    (path / MANIFEST).write_text(manifest)
    with Collection.open(path, encoder=ForbiddenEncoder()) as col:  # files missing
        assert col.repaired and reference_results(col, queries(8), 10) == want
    for n in os.listdir(path):  # damaged: flip a byte in each index file
        if n.endswith(".rci"):
            data = bytearray((path / n).read_bytes())
            data[len(data) // 2] ^= 0xFF
            (path / n).write_bytes(bytes(data))
    with Collection.open(path, encoder=ForbiddenEncoder()) as col:
        assert col.repaired and reference_results(col, queries(8), 10) == want
    (path / MANIFEST).write_text("{not json")
    with Collection.open(path, encoder=ForbiddenEncoder()) as col:
        assert col.repaired and reference_results(col, queries(8), 10) == want
    with Collection.open(path, encoder=ForbiddenEncoder()) as col:
        assert not col.repaired  # the repair was written back
    # A collection freshly built from the surviving documents answers the same.
    keep = [i for i in range(200) if i not in (3, 4, 5)]
    with Collection.create(tmp_path / "fresh", encoder=HashEncoder(), chunker="none") as fresh:
        fresh.add([texts[i] for i in keep], ids=keep, metadata=[metadata[i] for i in keep])
        assert reference_results(fresh, queries(8), 10) == want


def test_ivf_collection_trains_assigns_and_retrains(tmp_path):
    texts, metadata = corpus(400, seed=2)
    cfg = {"kind": "ivf", "nlist": 4, "nprobe": 4}
    with Collection.create(tmp_path / "c", encoder=HashEncoder(), chunker="none", dense=cfg) as col:
        col.add(texts[:100], ids=list(range(100)), metadata=metadata[:100])
        assert type(col.indexes.dense).__name__ == "FlatIndex"  # too few to train
        col.add(texts[100:200], ids=list(range(100, 200)), metadata=metadata[100:200])
        assert type(col.indexes.dense).__name__ == "IVFIndex"
        col.add(texts[200:], ids=list(range(200, 400)), metadata=metadata[200:])
        assert col.indexes.ivf_drifted()
        col.compact()
        assert not col.indexes.ivf_drifted() and len(col.indexes.dense) == 400
        enc = HashEncoder()
        for q in queries(5):  # nprobe = nlist: exact
            got = col.search(q, k=5, mode="dense")
            want_scores, _ = brute_force_dense(enc, texts, list(range(400)), q, 5)
            np.testing.assert_allclose([m.score for m in got], want_scores, atol=1e-5)
    with Collection.open(tmp_path / "c", encoder=HashEncoder()) as col:
        assert type(col.indexes.dense).__name__ == "IVFIndex" and not col.repaired


def test_count_and_len(filled):
    col, _, metadata, _ = filled
    assert len(col) == 300 == col.count()
    assert col.count({"public": True}) == sum(m["public"] for m in metadata)
    assert col.count({"lang": {"$exists": False}}) == sum("lang" not in m for m in metadata)


def test_generated_ids(tmp_path):
    with Collection.create(tmp_path / "c", encoder=HashEncoder(), chunker="none") as col:
        ids = col.add(["alpha", "beta"])
        assert all(isinstance(i, str) and len(i) == 32 for i in ids)
    with Collection.create(tmp_path / "d", encoder=HashEncoder(), chunker="none") as col:
        col.add(["alpha"], ids=[41])
        assert col.add(["beta", "gamma"]) == [42, 43]


# ---- the filter language, against a plain Python evaluation --------------------------


def matches(meta: dict, flt) -> bool:
    """MongoDB's semantics of the filter language (ragcore.rag.collection.filters)."""
    if flt is None:
        return True
    return all(_key(meta, key, cond) for key, cond in flt.items())


def _key(meta, key, cond) -> bool:
    if key == "$and":
        return all(matches(meta, c) for c in cond)
    if key == "$or":
        return any(matches(meta, c) for c in cond)
    if key == "$not":
        return not matches(meta, cond)
    ops = cond if isinstance(cond, dict) else {"$eq": cond}
    return all(_op(meta, key, op, v) for op, v in ops.items())


def _op(meta, key, op, v) -> bool:
    present = key in meta and meta[key] is not None
    x = meta.get(key)
    if op == "$exists":
        return (key in meta) == v
    if op == "$eq":
        return (not present) if v is None else present and x == v and type(x) is type(v) or \
            (present and isinstance(x, (int, float)) and not isinstance(x, bool) and
             isinstance(v, (int, float)) and not isinstance(v, bool) and x == v)
    if op == "$ne":
        return not _op(meta, key, "$eq", v)
    if op == "$in":
        return any(_op(meta, key, "$eq", e) for e in v)
    if op == "$nin":
        return not _op(meta, key, "$in", v)
    if not present or isinstance(x, str) != isinstance(v, str) or isinstance(x, bool):
        return False
    return {"$gt": x > v, "$gte": x >= v, "$lt": x < v, "$lte": x <= v}[op]


FILTERS = [
    {"year": 2001}, {"year": {"$ne": 2001}}, {"year": {"$gt": 2010, "$lte": 2020}},
    {"score": {"$gte": 0.5}}, {"score": {"$lt": 0.25}}, {"lang": "en"}, {"lang": {"$ne": "en"}},
    {"lang": {"$in": ["fr", "de"]}}, {"lang": {"$nin": ["fr", "de"]}}, {"lang": {"$in": []}},
    {"lang": {"$exists": True}}, {"lang": {"$exists": False}}, {"public": True},
    {"public": {"$ne": True}}, {"lang": None}, {"lang": {"$ne": None}},
    {"lang": {"$in": ["en", None]}}, {"lang": {"$nin": ["en", None]}},
    {"lang": {"$gt": "de"}}, {"year": {"$in": [1990, 2000.0]}},
    {"$and": [{"year": {"$gte": 2000}}, {"lang": "fr"}]},
    {"$or": [{"lang": "de"}, {"public": False}]},
    {"$not": {"lang": "en"}}, {"$not": {"$or": [{"year": {"$lt": 2000}}, {"public": True}]}},
    {"year": {"$gte": 2000}, "lang": {"$exists": True}, "$not": {"score": {"$gt": 0.9}}},
]


@pytest.mark.parametrize("flt", FILTERS, ids=[str(f) for f in FILTERS])
def test_filters_select_what_the_python_evaluation_selects(filled, flt):
    col, texts, metadata, _ = filled
    want = [i for i, m in enumerate(metadata) if matches(m, flt)]
    assert col.count(flt) == len(want)
    assert sorted(m.id for m in col.search("alpha", k=300, mode="dense", filter=flt)) == want
    sparse = col.search("alpha", k=300, mode="sparse", filter=flt)
    assert sorted(m.id for m in sparse) == [i for i in want if "alpha" in texts[i].split()]


def test_declared_fields_are_indexed_and_type_checked(tmp_path):
    with Collection.create(tmp_path / "c", encoder=HashEncoder(), chunker="none",
                           metadata_schema={"year": "int", "lang": "str"}) as col:
        with pytest.raises(TypeError, match="year"):
            col.add(["alpha"], ids=[1], metadata=[{"year": "2001"}])
        assert len(col) == 0
        col.add(["alpha"], ids=[1], metadata=[{"year": 2001}])
        plan = col._conn.execute(
            "EXPLAIN QUERY PLAN SELECT rowid FROM documents WHERE "
            "json_extract(metadata, '$.\"year\"') = 2001").fetchall()
        assert any("field_" in str(row) for row in plan)
        assert col.count({"lang": {"$exists": False}}) == 1  # declared, never set: known


def test_cached_allow_sets_follow_every_write(filled):
    col, *_ = filled
    flt = {"lang": "xx"}
    col.add(["alpha omega"], ids=[1000], metadata=[{"lang": "xx"}])
    assert [m.id for m in col.search("alpha", k=5, filter=flt)] == [1000]
    col.add(["alpha beta omega"], ids=[1001], metadata=[{"lang": "xx"}])
    assert sorted(m.id for m in col.search("alpha", k=5, filter=flt)) == [1000, 1001]
    col.delete([1000])
    assert [m.id for m in col.search("alpha", k=5, filter=flt, mode="dense")] == [1001]
    col.upsert(["alpha"], ids=[1001], metadata=[{"lang": "en"}])
    assert col.search("alpha", k=5, filter=flt) == []


class WordOverlapReranker:
    """Scores a passage by how many query words it holds (ties: the search keeps chunk ids
    ascending)."""

    def __init__(self):
        self.calls = 0

    def score(self, query, passages):
        self.calls += 1
        words = set(query.split())
        return np.array([len(words & set(p.split())) for p in passages], dtype=np.float32)


def test_rerank_reorders_the_fused_candidates(filled):
    col, texts, _, _ = filled
    reranker = WordOverlapReranker()
    q = "alpha beta gamma delta"
    got = col.search(q, k=5, k0=40, rerank=reranker)
    first_stage = col.search(q, k=40)
    assert reranker.calls == 1 and got.timings["rerank"] > 0
    overlap = [len(set(q.split()) & set(texts[m.id].split())) for m in got]
    assert [m.score for m in got] == sorted([m.score for m in got], reverse=True)
    assert overlap == [int(m.score) for m in got]
    best_possible = sorted((len(set(q.split()) & set(m.text.split())) for m in first_stage),
                           reverse=True)[:5]
    assert overlap == best_possible


def test_a_word_no_document_holds_adds_nothing_to_hybrid(filled):
    # BM25 filler (documents without the word at score 0) once reached RRF, which ranked it
    # like real matches; now the sparse list is empty and hybrid is the dense ranking.
    col, *_ = filled
    assert len(col.search("zstandard", k=10, mode="sparse")) == 0
    dense = col.search("zstandard", k=10, mode="dense")
    hybrid = col.search("zstandard", k=10, mode="hybrid")
    assert len(dense) == 10 and [m.id for m in hybrid] == [m.id for m in dense]
    mixed = col.search("zstandard alpha", k=10, mode="sparse")
    assert len(mixed) > 0 and all("alpha" in m.text.split() for m in mixed)


def test_index_files_of_an_older_flush_copied_over_the_current_ones_are_rebuilt(tmp_path):
    # The manifest names files by the change number they reflect; a file with the right
    # name but an older flush's content (a restore from backup, a careless copy) would
    # answer without the newer chunks and with deleted ones. Its ids do not match the
    # digest the manifest recorded, so it is rebuilt from the database.
    texts, metadata = corpus(200, seed=9)
    path = tmp_path / "c"
    with Collection.create(path, encoder=HashEncoder(), chunker="none") as col:
        col.add(texts[:120], ids=list(range(120)), metadata=metadata[:120])
        col.flush()
        old = {n.split("-")[0]: (path / n).read_bytes() for n in os.listdir(path) if n.endswith(".rci")}
        col.add(texts[120:], ids=list(range(120, 200)), metadata=metadata[120:])
        col.delete([7, 8])
        want = reference_results(col, queries(8), 10)
    assert set(old) == {"dense", "bm25"}
    for n in os.listdir(path):
        if n.endswith(".rci"):
            (path / n).write_bytes(old[n.split("-")[0]])
    with Collection.open(path, encoder=ForbiddenEncoder()) as col:
        assert col.repaired and reference_results(col, queries(8), 10) == want
        col.verify()  # raises when the indexes and the database disagree
        got = {m.id for m in col.search("alpha beta gamma", k=300, mode="sparse")}
        assert not got & {7, 8} and got & set(range(120, 200))
