"""The Collection's seam for sharded collections: check_write (a write's checks without
writing), candidates (one retriever's top k and the rows of its chunks), bm25_statistics and
the change number."""

from __future__ import annotations

import pytest

from _collection_data import HashEncoder, corpus
from ragcore import CollectionError
from ragcore.rag.collection import Collection
from ragcore.sparse import combine_statistics


@pytest.fixture
def filled(tmp_path):
    texts, metadata = corpus(60)
    c = Collection.create(tmp_path / "c", encoder=HashEncoder(), metadata_schema={"year": "int"})
    c.add(texts, ids=list(range(60)), metadata=metadata)
    yield c
    c.close()


def test_check_write_raises_what_add_raises_and_writes_nothing(filled):
    change = filled.change
    assert filled.check_write(["alpha beta", "gamma"], [3, 100]) == [3]
    for bad in ([{"year": "1999"}], [{"year": 1999}, {}]):
        with pytest.raises((TypeError, CollectionError)) as check:
            filled.check_write(["alpha beta"], [101], metadata=bad)
        with pytest.raises(type(check.value)) as add:
            filled.add(["alpha beta"], ids=[101], metadata=bad)
        assert str(check.value) == str(add.value)
    with pytest.raises(CollectionError, match="ids has 1 entries for 2 texts"):
        filled.check_write(["a b", "c d"], [102])
    assert filled.change == change and len(filled) == 60


def test_candidates_are_the_search_of_one_retriever_with_its_rows(filled):
    queries = ["alpha beta gamma", "omega psi"]
    for modality in ("dense", "sparse"):
        hits, rows = filled.candidates(queries, 7, modality, filter={"year": {"$gte": 2000}})
        results = filled.search(queries, k=7, mode=modality, filter={"year": {"$gte": 2000}})
        for r, result in enumerate(results):
            assert [m.chunk_id for m in result] == [c for c in hits.ids[r] if c >= 0]
            for m in result:
                assert rows[m.chunk_id] == (m.id, m.position, m.start, m.end, m.text, m.metadata)
                assert m.metadata["year"] >= 2000
    _, raw = filled.candidates(queries, 3, "sparse", decode_metadata=False)
    assert all(isinstance(row[5], str) for row in raw.values())


def test_bm25_statistics_scored_back_give_the_same_candidates(filled):
    queries = ["alpha beta gamma", "omega psi"]
    stats = combine_statistics([filled.bm25_statistics(queries)])
    assert stats.n_docs == len(filled.indexes.bm25)
    plain, _ = filled.candidates(queries, 10, "sparse")
    given, _ = filled.candidates(queries, 10, "sparse", statistics=stats)
    assert (plain.ids == given.ids).all() and (plain.scores == given.scores).all()


def test_every_write_raises_the_change_number_by_one(filled):
    start = filled.change
    filled.add(["new text here"], ids=[500])
    filled.upsert(["replaced text"], ids=[500])
    filled.delete([500])
    assert filled.change == start + 3
