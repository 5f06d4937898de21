"""A Collection changed behind its back with valid SQL or by editing its files: every change
ends in a CollectionCorruptError naming the database and what to do, or is repaired from
the database; never a wrong answer or another exception."""

from __future__ import annotations

import json
import os
import sqlite3

import numpy as np
import pytest

from _collection_data import WORDS, HashEncoder, corpus
from ragcore import Collection, CollectionCorruptError, CollectionError


def _made(path, n: int = 20, ids=None, chunker="none") -> str:
    texts, metadata = corpus(n, seed=5, words=20)
    with Collection.create(path, encoder=HashEncoder(), chunker=chunker,
                           metadata_schema={"year": "int"}) as col:
        col.add(texts, ids=ids or list(range(n)), metadata=metadata)
    return os.path.join(path, "collection.sqlite")


def _sql(db: str, *statements) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    for statement in statements:
        if ";" in statement.strip().rstrip(";"):
            conn.executescript(statement)
        else:
            conn.execute(statement)
    conn.close()


def _refused_at_open(path, db: str, *words) -> str:
    for readonly in (True, False):
        with pytest.raises(CollectionCorruptError) as err:
            Collection.open(path, readonly=readonly, encoder=HashEncoder())
        message = str(err.value)
        assert message.startswith(f"{db}: ") and "restore the collection's directory" in message
        for word in words:
            assert word in message
    return message


_NO_UNIQUE = ("CREATE TABLE d2 (rowid INTEGER PRIMARY KEY AUTOINCREMENT, user_id NOT NULL, "
              "text TEXT NOT NULL, metadata TEXT NOT NULL); INSERT INTO d2 SELECT * FROM "
              "documents; DROP TABLE documents; ALTER TABLE d2 RENAME TO documents; "
              "UPDATE documents SET user_id = 1 WHERE user_id = 2;")


@pytest.mark.parametrize("statement, words", [
    ("DROP TABLE fields", ["the table fields is missing"]),
    ("DROP TABLE meta", ["the table meta is missing"]),
    ("ALTER TABLE embeddings RENAME TO e2", ["the table embeddings is missing"]),
    ("ALTER TABLE chunks RENAME COLUMN start TO s", ["the table chunks is not as ragcore"]),
    (_NO_UNIQUE, ["the table documents is not as ragcore"]),
    ("CREATE TRIGGER t AFTER INSERT ON chunks BEGIN DELETE FROM chunks; END", ["triggers"]),
    ("UPDATE meta SET value = 'abc' WHERE key = 'format_version'", ["does not read back"]),
    ("UPDATE meta SET value = '0' WHERE key = 'format_version'", ["format version is '0'"]),
    ("UPDATE meta SET value = '1.5' WHERE key = 'change'", ["change is '1.5'"]),
    ("DELETE FROM meta WHERE key = 'change'", ["change is missing"]),
    ("UPDATE meta SET value = '0' WHERE key = 'dim'", ["dim is 0"]),
    ("UPDATE meta SET value = '12' WHERE key = 'dim'", ["not 12 float32 values"]),
    ("UPDATE meta SET value = 'float' WHERE key = 'id_type'", ["id_type is 'float'"]),
    ("UPDATE meta SET value = 'str' WHERE key = 'id_type'", ["not of the collection's id type"]),
    ("UPDATE meta SET value = '[1]' WHERE key = 'settings'", ["settings are not valid"]),
    ("UPDATE meta SET value = json_set(value, '$.dense.dtype', 'abc') WHERE key = 'settings'",
     ["settings are not valid"]),
    ("UPDATE meta SET value = json_set(value, '$.chunker', 5) WHERE key = 'settings'",
     ["settings are not valid"]),
    ("UPDATE meta SET value = '-1' WHERE key = 'fingerprint'", ["fingerprint is not valid"]),
    # found by bench/fuzz.py: a checksum that is not text raised TypeError in the message
    ("UPDATE meta SET value = json_set(value, '$.checksum', 5) WHERE key = 'fingerprint'",
     ["fingerprint is not valid"]),
    ("UPDATE meta SET value = json_set(value, '$.normalized', 'yes') WHERE key = 'fingerprint'",
     ["fingerprint is not valid"]),
    ("UPDATE fields SET types = '5'", ["the fields table holds"]),
    ("UPDATE fields SET types = '[[]]'", ["the fields table holds"]),
    ("UPDATE embeddings SET vector = x'0000'", ["not 24 float32 values"]),
    ("UPDATE sqlite_sequence SET seq = 9223372036854775807 WHERE name = 'chunks'",
     ["the id sequence of 'chunks' is 9223372036854775807"]),
    ("UPDATE sqlite_sequence SET seq = 'x'", ["the id sequence of"]),
    ("UPDATE chunks SET chunk_id = -5 WHERE chunk_id = 3", ["a stored chunk id is negative"]),
    # found by bench/fuzz.py: the indexes refused the id with a ValueError
    ("UPDATE chunks SET chunk_id = 9223372036854775807 WHERE chunk_id = 3",
     ["a stored chunk id is 2**63 - 1"]),
])
def test_a_changed_schema_or_meta_value_is_refused_at_open(tmp_path, statement, words):
    db = _made(tmp_path / "c")
    _sql(db, statement)
    _refused_at_open(tmp_path / "c", db, *words)


@pytest.mark.parametrize("statement, read, words", [
    ("UPDATE chunks SET end = end + 5 WHERE chunk_id = 3", "search", "chunk 3 (offsets"),
    ("UPDATE chunks SET start = -1 WHERE chunk_id = 3", "search", "chunk 3 (offsets -1"),
    ("UPDATE chunks SET start = 'x' WHERE chunk_id = 3", "search", "chunk 3 (offsets 'x'"),
    ("UPDATE documents SET text = 'omega omega' WHERE user_id = 2", "search", "chunk 3"),
    ("UPDATE documents SET user_id = '7x' WHERE user_id = 7", "ids", "'7x' is not of the"),
    ("UPDATE documents SET user_id = 7.5 WHERE user_id = 7", "search", "7.5 is not of the"),
    ("UPDATE documents SET metadata = '[1, 2]' WHERE user_id = 2", "get", "not a JSON object"),
    ("UPDATE documents SET metadata = '5' WHERE user_id = 2", "search", "not a JSON object"),
])
def test_a_changed_row_is_refused_where_it_is_read(tmp_path, statement, read, words):
    db = _made(tmp_path / "c")
    _sql(db, statement)
    with Collection.open(tmp_path / "c", encoder=HashEncoder()) as col:
        calls = {"search": lambda: col.search("alpha beta gamma omega", k=20, mode="sparse"),
                 "ids": col.ids, "get": lambda: col.get([2])}
        with pytest.raises(CollectionCorruptError) as err:
            calls[read]()
        assert str(err.value).startswith(f"{db}: ") and words in str(err.value)


def test_a_full_database_is_a_collection_error_and_rolls_back(tmp_path):
    db = _made(tmp_path / "c")
    with Collection.open(tmp_path / "c", encoder=HashEncoder()) as col:
        _sql(db, "UPDATE sqlite_sequence SET seq = 9223372036854775807 WHERE name = 'documents'")
        with pytest.raises(CollectionError, match="cannot write .*free disk space") as err:
            col.add(["alpha"], ids=[100])
        assert str(err.value).startswith(db)
        assert col.count() == 20 and col.get([100]) == []


def test_a_document_whose_text_holds_a_nul_keeps_its_chunk_offsets(tmp_path):
    # SQLite's substr stops at a NUL: such rows are compared again in Python.
    with Collection.create(tmp_path / "c", encoder=HashEncoder(), chunker="none") as col:
        col.add(["alpha\x00 beta gamma", "delta"], ids=[1, 2])
        (match,) = col.search("gamma", k=1, mode="sparse")
        assert match.text == "alpha\x00 beta gamma" and (match.start, match.end) == (0, 17)


def test_chunks_added_behind_the_files_back_are_indexed_at_open(tmp_path):
    db = _made(tmp_path / "c")
    _sql(db, "INSERT INTO documents (user_id, text, metadata) VALUES (99, 'zulu yankee', '{}')",
         "INSERT INTO chunks (doc_rowid, position, start, end, text, hash) SELECT "
         "(SELECT rowid FROM documents WHERE user_id = 99), 0, 0, 11, 'zulu yankee', hash "
         "FROM chunks WHERE chunk_id = 1")
    with Collection.open(tmp_path / "c", encoder=HashEncoder()) as col:
        assert col.repaired
        assert [m.id for m in col.search("zulu", k=3, mode="sparse")] == [99]
        col.verify()  # raises if the indexes and the database disagree


@pytest.mark.parametrize("text", [
    "[]", "5", '"x"', "null", "{}",
    '{"format_version": 1, "change": 1.5, "bm25": "bm25-1.rci"}',
    '{"format_version": true, "change": 1, "bm25": "bm25-1.rci"}',
    '{"format_version": 1, "change": 1, "bm25": "../collection.sqlite"}',
    '{"format_version": 1, "change": 1, "bm25": "bm25-1.rci", "dense": 5}',
    '{"format_version": 1, "change": 1, "bm25": "bm\\u000025-1.rci"}',
    '{"format_version": 1, "change": 1, "bm25": "bm25-1.rci", "bm25_ids": []}',
    "no dense",
])
def test_a_manifest_not_as_written_is_ignored_and_the_indexes_rebuilt(tmp_path, text):
    _made(tmp_path / "c")
    with Collection.open(tmp_path / "c", encoder=HashEncoder()) as col:
        want = [(m.id, m.chunk_id) for m in col.search("alpha beta", k=10)]
    if text == "no dense":  # a manifest as written, but naming no dense file
        with open(tmp_path / "c" / "indexes.json") as f:
            text = json.dumps({**json.load(f), "dense": None})
    with open(tmp_path / "c" / "indexes.json", "w") as f:
        f.write(text)
    with Collection.open(tmp_path / "c", encoder=HashEncoder()) as col:
        assert col.repaired
        assert [(m.id, m.chunk_id) for m in col.search("alpha beta", k=10)] == want
        col.verify()
    with open(tmp_path / "c" / "indexes.json") as f:
        assert isinstance(json.load(f), dict)  # written again


def test_a_foreign_database_with_collection_tables_but_no_meta_is_damage(tmp_path):
    db = _made(tmp_path / "c")
    _sql(db, "DROP TABLE meta")
    with pytest.raises(CollectionCorruptError):
        Collection.open(tmp_path / "c", readonly=True)
    (tmp_path / "other").mkdir()
    _sql(str(tmp_path / "other" / "collection.sqlite"), "CREATE TABLE documents (x)")
    with pytest.raises(CollectionError, match="not a ragcore collection") as err:
        Collection.open(tmp_path / "other", readonly=True)
    assert not isinstance(err.value, CollectionCorruptError)


@pytest.mark.parametrize("statement, words", [
    ("UPDATE chunks SET hash = x'00' WHERE chunk_id = 4", "not 24 float32 values"),
    ("UPDATE chunks SET text = x'35' WHERE chunk_id = 4", "chunk's text is not text"),
])
def test_a_chunk_the_indexes_are_rebuilt_with_is_checked(tmp_path, statement, words):
    # Without the manifest the indexes are rebuilt from every chunk: none is left out.
    db = _made(tmp_path / "c")
    _sql(db, statement)
    os.unlink(tmp_path / "c" / "indexes.json")
    with pytest.raises(CollectionCorruptError, match=words):
        Collection.open(tmp_path / "c", encoder=HashEncoder())


@pytest.mark.parametrize("path, value", [("$.schema", None), ("$.dense.dtype", None)])
def test_settings_an_older_collection_lacks_take_their_defaults(tmp_path, path, value):
    db = _made(tmp_path / "c")
    _sql(db, f"UPDATE meta SET value = json_remove(value, '{path}') WHERE key = 'settings'")
    with Collection.open(tmp_path / "c", encoder=HashEncoder()) as col:
        assert col._settings["dense"]["dtype"] == "float32"
        assert len(col.search("alpha", k=3, mode="dense")) == 3


@pytest.mark.parametrize("statement", [
    "UPDATE meta SET value = '0' WHERE key = 'dim'",
    "UPDATE meta SET value = '[]' WHERE key = 'settings'",
    "UPDATE meta SET value = 'float' WHERE key = 'id_type'",
])
def test_a_reader_following_a_change_checks_the_meta_values_again(tmp_path, statement):
    db = _made(tmp_path / "c")
    with Collection.open(tmp_path / "c", readonly=True, encoder=HashEncoder()) as reader:
        assert len(reader.search("alpha", k=2, mode="sparse")) == 2
        _sql(db, statement, "UPDATE meta SET value = value + 1 WHERE key = 'change'")
        with pytest.raises(CollectionCorruptError) as err:
            reader.search("alpha", k=2, mode="sparse")
        assert str(err.value).startswith(f"{db}: ")


@pytest.mark.parametrize("statement, words", [
    ("UPDATE documents SET metadata = '[1, 2]' WHERE user_id = 2", "not a JSON object"),
    ("UPDATE documents SET user_id = 7.5 WHERE user_id = 7", "7.5 is not of the"),
])
def test_candidates_refuse_what_search_refuses(tmp_path, statement, words):
    # candidates is what a sharded collection merges: its rows are checked as search's are.
    db = _made(tmp_path / "c")
    _sql(db, statement)
    with Collection.open(tmp_path / "c", encoder=HashEncoder()) as col:
        with pytest.raises(CollectionCorruptError, match=words):
            col.candidates([" ".join(WORDS)], 20, "sparse")


def test_an_empty_stored_id_in_a_collection_of_str_ids_is_refused(tmp_path):
    db = _made(tmp_path / "c", ids=[f"d{i}" for i in range(20)])
    _sql(db, "UPDATE documents SET user_id = '' WHERE user_id = 'd7'")
    with Collection.open(tmp_path / "c", encoder=HashEncoder()) as col:
        with pytest.raises(CollectionCorruptError, match="a stored document id '' is not"):
            col.ids()


def test_generated_ids_past_the_largest_int_id_are_refused_naming_the_collection(tmp_path):
    with Collection.create(tmp_path / "c", encoder=HashEncoder(), chunker="none") as col:
        col.add(["alpha"], ids=[2**63 - 2])
        assert col.add(["beta"]) == [2**63 - 1]
        with pytest.raises(CollectionError, match="would not fit in 64 bits; pass ids=") as err:
            col.add(["gamma"])
        assert str(err.value).startswith(str(tmp_path / "c")) and col.count() == 2


def test_stored_chunker_settings_the_tokenizer_refuses_are_damage(tmp_path):
    db = _made(tmp_path / "c", chunker=None)
    _sql(db, "UPDATE meta SET value = json_set(value, '$.chunker.chunk_size', 1000000) "
             "WHERE key = 'settings'")
    with Collection.open(tmp_path / "c", encoder=HashEncoder()) as col:
        with pytest.raises(CollectionCorruptError, match="stored chunker settings are refused"):
            col.add(["alpha beta"], ids=[100])


def test_an_ivf_storage_the_flat_stage_cannot_hold_is_refused(tmp_path):
    # An IVF collection is flat until it trains: its dtype must suit both.
    with pytest.raises(ValueError, match="dense: unknown dtype 'sq8'"):
        Collection.create(tmp_path / "new", encoder=HashEncoder(),
                          dense={"kind": "ivf", "dtype": "sq8"})
    db = _made(tmp_path / "c")
    _sql(db, "UPDATE meta SET value = json_set(value, '$.dense', json('{\"kind\": \"ivf\", "
             "\"dtype\": \"sq8\"}')) WHERE key = 'settings'")
    _refused_at_open(tmp_path / "c", db, "settings are not valid")


def test_a_header_with_an_unknown_schema_format_is_damage(tmp_path):
    db = _made(tmp_path / "c")
    with open(db, "r+b") as f:
        f.seek(44)  # the schema format number (1 to 4)
        f.write((9).to_bytes(4, "big"))
    _refused_at_open(tmp_path / "c", db, "unsupported file format")


@pytest.mark.parametrize("table, column", [
    ("chunks", "chunk_id"), ("chunks", "doc_rowid"), ("chunks", "position"), ("chunks", "start"),
    ("chunks", "end"), ("documents", "rowid"), ("documents", "user_id")])
@pytest.mark.parametrize("value", [-1, 0, 2**31, 2**62, 2**63 - 1, -2**63])
def test_an_integer_column_at_a_bound_is_answered_or_refused(tmp_path, table, column, value):
    """One row's integer set to a boundary value (how the fuzzer found chunk id 2**63 - 1):
    open, searches, get, add and delete either all work or one raises CollectionCorruptError
    naming the database (any other exception fails the test); a chunk id no index can hold
    is always refused."""
    db = _made(tmp_path / "c")
    key = "chunk_id" if table == "chunks" else "rowid"
    try:
        _sql(db, f"UPDATE {table} SET {column} = {value} WHERE {key} = (SELECT {key} FROM "
                 f"{table} ORDER BY {key} LIMIT 1 OFFSET 3)")
    except sqlite3.IntegrityError:  # a UNIQUE or PRIMARY KEY value already taken
        pytest.skip("SQLite refused the value")
    try:
        with Collection.open(tmp_path / "c", encoder=HashEncoder()) as col:
            col.search("alpha beta gamma omega", k=20, mode="hybrid")
            col.search("alpha beta", k=20, mode="dense", filter={"year": {"$gte": 0}})
            col.get([0, 1, 2])
            col.add(["alpha omega"], ids=[100])
            assert col.delete([100]) == 1
        outcome = "answered"
    except CollectionCorruptError as err:
        assert str(err).startswith(f"{db}: ")
        outcome = "refused"
    if column == "chunk_id" and value in (-1, 2**63 - 1, -2**63):
        assert outcome == "refused"


def test_a_filter_allowing_chunks_the_dense_index_lacks_is_damage(tmp_path, monkeypatch):
    """Found by bench/fuzz.py (a page of the database overwritten): the filter's chunk ids,
    read from SQLite, held one the in-memory dense index lacks, and scoring the allowed
    vectors raised IndexError."""
    from ragcore.rag.collection import store

    db = _made(tmp_path / "c")
    real = store.filtered_chunk_ids
    monkeypatch.setattr(store, "filtered_chunk_ids",
                        lambda *a: np.append(real(*a), 10_000).astype(np.int64))
    with Collection.open(tmp_path / "c", encoder=HashEncoder()) as col:
        with pytest.raises(CollectionCorruptError) as err:
            col.search("alpha beta", k=5, mode="dense", filter={"year": {"$gte": 0}})
    assert str(err.value).startswith(f"{db}: ") and "the dense index lacks" in str(err.value)


def test_text_sqlite_returns_that_is_not_utf8_is_damage(tmp_path):
    """Found by bench/fuzz.py (page 0, the schema, overwritten): Python's sqlite3 raised
    UnicodeDecodeError itself, past the guard that turns SQLite's errors into ragcore's."""
    from ragcore.rag.collection import store

    db = _made(tmp_path / "c")
    conn = store.connect(db, readonly=True)

    def undecodable():
        raise UnicodeDecodeError("utf-8", b"\xf8", 0, 1, "invalid start byte")

    with pytest.raises(CollectionCorruptError, match="not UTF-8"):
        store._guarded(conn, undecodable)
    conn.close()


def test_a_malformed_schema_is_damage(tmp_path):
    """A schema entry whose text is cut short (sqlite reports it as SQLITE_CORRUPT). The
    fuzzer's case (page 0 overwritten), which sqlite reported as SQLITE_TOOBIG with the same
    "malformed database schema" message and the guard let through as sqlite3.DataError, is
    kept in tests/fuzz/crashers/collection-schema_text_too_big (test_kept_collections)."""
    db = _made(tmp_path / "c")
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute("UPDATE sqlite_master SET sql = 'CREATE TABLE embeddings (hash BLOB \"' "
                 "WHERE name = 'embeddings'")
    conn.commit()
    conn.close()
    _refused_at_open(tmp_path / "c", db, "malformed database schema")
