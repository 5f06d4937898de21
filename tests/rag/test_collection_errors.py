"""Every bad input to a Collection is a clear error, and nothing is written."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from _collection_data import HashEncoder, corpus
from ragcore import FilterError
from ragcore import CollectionError, CollectionLockedError
from ragcore.rag.collection import Collection


@pytest.fixture
def col(tmp_path):
    texts, metadata = corpus(30)
    c = Collection.create(tmp_path / "c", encoder=HashEncoder(), chunker="none")
    c.add(texts, ids=list(range(30)), metadata=metadata)
    yield c
    c.close()


def state(c):
    conn = sqlite3.connect(os.path.join(c.path, "collection.sqlite"))
    try:
        return (conn.execute("SELECT value FROM meta WHERE key = 'change'").fetchone()[0],
                conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0],
                conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0],
                conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
    finally:
        conn.close()


@pytest.mark.parametrize("flt, message", [
    ({"year": {"$regex": "x"}}, "unknown filter operator '\\$regex'"),
    ({"$nor": [{"year": 1}]}, "unknown filter operator '\\$nor'"),
    ({"colour": "red"}, "unknown filter field 'colour'"),
    ({"year": "2001"}, "field holds int values"),
    ({"year": {"$gt": True}}, "takes a number or a str"),
    ({"lang": {"$in": "en"}}, "takes a list"),
    ({"lang": {"$exists": 1}}, "takes True or False"),
    ({"lang": {"$eq": ["en"]}}, "got a list"),
    ({"$and": {"year": 1}}, "non-empty list"),
    ({"year": {}}, "empty operator dict"),
    (["year"], "filter must be a dict"),
])
def test_bad_filters(col, flt, message):
    with pytest.raises(FilterError, match=message):
        col.search("alpha", filter=flt)
    with pytest.raises(FilterError, match=message):
        col.count(flt)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(texts=["a b", "c d"], ids=[1, "x"]), TypeError, "mixes int and str"),
    (dict(texts=["a b"], ids=[1.5]), TypeError, "must be a str or an int"),
    (dict(texts=["a b"], ids=[True]), TypeError, "must be a str or an int"),
    (dict(texts=["a b"], ids=["x"]), TypeError, "this collection's ids are int"),
    (dict(texts=["a b", "c d"], ids=[100, 100]), CollectionError, "more than once"),
    (dict(texts=["a b"], ids=[3]), CollectionError, "already in the collection"),
    (dict(texts=["a b"], ids=[100, 101]), CollectionError, "2 entries for 1 texts"),
    (dict(texts=["a b"], ids=[100], metadata=[{"x": object()}]), TypeError, "JSON-serialisable"),
    (dict(texts=["a b"], ids=[100], metadata=[{"x": float("nan")}]), TypeError,
     "JSON-serialisable"),
    (dict(texts=["a b"], ids=[100], metadata=[{1: 2}]), CollectionError, "key 1"),
    (dict(texts=["a b"], ids=[100], metadata=[{"$x": 2}]), CollectionError, "starting with"),
    (dict(texts=["a b"], ids=[100], metadata=["x"]), TypeError, "must be a dict"),
    (dict(texts=["a b"], ids=[100], metadata={"x": 1}), TypeError, "list of dicts"),
    (dict(texts="a b", ids=[100]), TypeError, "wrap one text"),
    (dict(texts=["a b", 3], ids=[100, 101]), TypeError, "texts\\[1\\] must be a str"),
    (dict(texts=["a b", "  "], ids=[100, 101]), CollectionError, "empty"),
])
def test_bad_adds_write_nothing(col, kwargs, error, message):
    before = state(col)
    with pytest.raises(error, match=message):
        col.add(**kwargs)
    assert state(col) == before and len(col) == 30


def test_bad_deletes_and_upserts_write_nothing(col):
    before = state(col)
    with pytest.raises(CollectionError, match="not in the collection: \\[999\\]"):
        col.delete([1, 999])
    with pytest.raises(CollectionError, match="upsert needs ids"):
        col.upsert(["x y"], None)
    with pytest.raises(TypeError, match="JSON"):
        col.upsert(["x y", "z"], [1, 2], metadata=[{}, {"a": {1, 2}}])
    assert state(col) == before and len(col.get([1, 2])) == 2
    assert col.delete([999], missing_ok=True) == 0


@pytest.mark.parametrize("query, kwargs, error, message", [
    (3, {}, TypeError, "query must be a str"),
    (b"alpha", {}, TypeError, "query must be a str"),
    (["alpha", 3], {}, TypeError, "query\\[1\\] must be a str"),
    ([], {}, CollectionError, "empty list"),
    ("alpha", {"k": 0}, ValueError, "k must be >= 1"),
    ("alpha", {"k": -3}, ValueError, "k must be >= 1"),
    ("alpha", {"k": 2.5}, TypeError, "k must be an integer"),
    ("alpha", {"mode": "fast"}, ValueError, "mode"),
    ("alpha", {"fusion": "max"}, ValueError, "fusion"),
    ("alpha", {"by": "page"}, ValueError, "by"),
])
def test_bad_searches(col, query, kwargs, error, message):
    with pytest.raises(error, match=message):
        col.search(query, **kwargs)


def test_opening_what_is_not_a_collection(tmp_path):
    with pytest.raises(CollectionError, match="no such directory"):
        Collection.open(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CollectionError, match="not a ragcore collection"):
        Collection.open(tmp_path / "empty")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "collection.sqlite").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(CollectionError, match="not a ragcore collection"):
        Collection.open(tmp_path / "junk", readonly=True)
    (tmp_path / "other").mkdir()
    sqlite3.connect(tmp_path / "other" / "collection.sqlite").execute("CREATE TABLE t (x)")
    with pytest.raises(CollectionError, match="not a ragcore collection"):
        Collection.open(tmp_path / "other", readonly=True)


def test_a_newer_format_is_refused(tmp_path):
    with Collection.create(tmp_path / "c", encoder=HashEncoder(), chunker="none") as c:
        c.add(["alpha"], ids=[1])
    conn = sqlite3.connect(tmp_path / "c" / "collection.sqlite")
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'format_version'")
    conn.commit()
    conn.close()
    with pytest.raises(CollectionError, match="newer ragcore \\(collection format 99"):
        Collection.open(tmp_path / "c")


def test_create_refuses_existing_or_unwritable_paths(tmp_path, monkeypatch):
    with Collection.create(tmp_path / "c", encoder=HashEncoder()):
        pass
    with pytest.raises(CollectionError, match="already a collection"):
        Collection.create(tmp_path / "c")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x.txt").write_text("x")
    with pytest.raises(CollectionError, match="not empty"):
        Collection.create(tmp_path / "full")
    with pytest.raises(ValueError, match="dense"):
        Collection.create(tmp_path / "d", dense="annoy")
    with pytest.raises(ValueError, match="variant"):
        Collection.create(tmp_path / "d", bm25={"variant": "nope"})
    with pytest.raises(ValueError, match="metadata_schema"):
        Collection.create(tmp_path / "d", metadata_schema={"year": "date"})
    assert not (tmp_path / "d").exists()
    # Without write permission (the tests may run as root, who bypasses the mode bits).
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(PermissionError, match="no write permission"):
        Collection.create(tmp_path / "e")
    with pytest.raises(PermissionError, match="readonly=True"):
        Collection.open(tmp_path / "c")
    assert not (tmp_path / "e").exists()


def test_second_writer_is_refused_and_readonly_cannot_write(tmp_path):
    with Collection.create(tmp_path / "c", encoder=HashEncoder(), chunker="none") as c:
        c.add(["alpha beta"], ids=[1])
        with pytest.raises(CollectionLockedError, match="another writer"):
            Collection.open(tmp_path / "c")
        with Collection.open(tmp_path / "c", readonly=True, encoder=HashEncoder()) as r:
            with pytest.raises(CollectionError, match="readonly"):
                r.add(["x"], ids=[2])
            with pytest.raises(CollectionError, match="readonly"):
                r.delete([1])
            assert [m.id for m in r.search("alpha", k=1)] == [1]
        c.add(["gamma"], ids=[2])
    with Collection.open(tmp_path / "c", encoder=HashEncoder()) as c:  # the lock was released
        assert len(c) == 2


def test_custom_encoder_must_be_given_again(tmp_path):
    with Collection.create(tmp_path / "c", encoder=HashEncoder(), chunker="none") as c:
        c.add(["alpha beta"], ids=[1])
    with Collection.open(tmp_path / "c") as c:
        assert [m.id for m in c.search("alpha", mode="sparse")] == [1]
        with pytest.raises(CollectionError, match="pass it again"):
            c.search("alpha", mode="dense")
    settings = json.loads(sqlite3.connect(tmp_path / "c" / "collection.sqlite").execute(
        "SELECT value FROM meta WHERE key = 'settings'").fetchone()[0])
    assert settings["encoder"] == "HashEncoder(dim=24)"


def test_closed_collection(col):
    col.close()
    with pytest.raises(CollectionError, match="closed"):
        col.search("alpha")
