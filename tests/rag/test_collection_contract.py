"""The Collection's contract with its user: what a dropped collection releases, how unknown
ids, damaged databases and bad bulk input are refused."""

from __future__ import annotations

import gc
import os
import sqlite3
import weakref
from types import SimpleNamespace

import pytest

from _collection_data import HashEncoder, corpus
from ragcore import Collection, CollectionCorruptError, CollectionError, CollectionLockedError


def _small(path, n: int = 3) -> Collection:
    col = Collection.create(path, encoder=HashEncoder(), chunker="none")
    col.add([f"alpha beta {i}" for i in range(n)], ids=list(range(n)))
    return col


# ---- the writer lock ---------------------------------------------------------------


def test_a_collection_dropped_without_close_releases_its_writer_lock(tmp_path):
    col = _small(tmp_path / "c")
    alive = weakref.ref(col)
    del col
    gc.collect()
    assert alive() is None  # nothing, the lock's finalizer included, keeps it alive
    with Collection.open(tmp_path / "c", encoder=HashEncoder()) as col:
        assert [d.text for d in col.get([0, 2])] == ["alpha beta 0", "alpha beta 2"]


def test_a_dropped_collection_is_freed_without_waiting_for_the_cycle_collector(tmp_path):
    col = _small(tmp_path / "c")
    alive = weakref.ref(col)
    gc.disable()
    try:
        del col
        assert alive() is None
        Collection.open(tmp_path / "c", encoder=HashEncoder()).close()
    finally:
        gc.enable()


def test_a_forked_child_dropping_its_copy_keeps_the_parents_lock(tmp_path):
    col = _small(tmp_path / "c")
    pid = os.fork()
    if pid == 0:  # the child shares the lock's open file; dropping its copy must not unlock
        del col
        gc.collect()
        os._exit(0)
    assert os.waitpid(pid, 0)[1] == 0
    with pytest.raises(CollectionLockedError, match="another writer"):
        Collection.open(tmp_path / "c")
    col.close()


def test_close_is_idempotent_and_releases_the_lock(tmp_path):
    col = _small(tmp_path / "c")
    with pytest.raises(CollectionLockedError, match="another writer"):
        Collection.open(tmp_path / "c")
    col.close()
    col.close()
    with pytest.raises(CollectionError, match="closed"):
        col.count()
    again = Collection.open(tmp_path / "c", encoder=HashEncoder())
    col.close()  # closing the old object again must not release the new holder's lock
    with pytest.raises(CollectionLockedError, match="another writer"):
        Collection.open(tmp_path / "c")
    again.close()


def test_with_closes_and_releases(tmp_path):
    with _small(tmp_path / "c") as col:
        assert len(col) == 3
        with pytest.raises(CollectionLockedError):
            Collection.open(tmp_path / "c")
    with pytest.raises(CollectionError, match="closed"):
        col.search("alpha")
    with Collection.open(tmp_path / "c", encoder=HashEncoder()) as col:
        assert col.ids() == [0, 1, 2]


def test_with_releases_the_lock_when_the_body_raises(tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        with _small(tmp_path / "c"):
            raise RuntimeError("boom")
    Collection.open(tmp_path / "c", encoder=HashEncoder()).close()


# ---- unknown ids -------------------------------------------------------------------


def test_deleting_unknown_ids_names_them_and_deletes_nothing(tmp_path):
    with _small(tmp_path / "c") as col:
        with pytest.raises(CollectionError, match=r"2 of the ids are not in the collection: "
                           r"\[7, 9\]; nothing deleted.*missing_ok=True") as err:
            col.delete([0, 7, 1, 9])
        assert not isinstance(err.value, KeyError)
        assert col.ids() == [0, 1, 2]
        assert col.delete([0, 7, 1, 9], missing_ok=True) == 2
        assert col.ids() == [2]


def test_many_unknown_ids_are_listed_up_to_twenty_then_counted(tmp_path):
    with _small(tmp_path / "c") as col:
        unknown = list(range(100, 125))
        listed = ", ".join(map(str, unknown[:20]))
        with pytest.raises(CollectionError, match=rf"25 of the ids .*\[{listed}, \.\.\. and 5 "
                           r"more\]"):
            col.delete(unknown + [1])
        assert len(col) == 3


def test_unknown_ids_of_the_other_type_are_unknown_ids(tmp_path):
    with _small(tmp_path / "c") as col:
        with pytest.raises(CollectionError, match=r"not in the collection: \['0'\]"):
            col.delete(["0"])
        assert col.get(["0"]) == col.get([5]) == []  # get returns those that exist (documented)


# ---- a damaged database ------------------------------------------------------------


def _db(path) -> str:
    return os.path.join(path, "collection.sqlite")


def _closed_collection(path, n: int = 200) -> str:
    texts, metadata = corpus(n, words=30)
    with Collection.create(path, encoder=HashEncoder(), chunker="none") as col:
        col.add(texts, ids=list(range(n)), metadata=metadata)
    return _db(path)


def _overwrite_page_of(db: str, table: str) -> None:
    """Fills the root page of table with a byte pattern (the rest of the file stays sound)."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    conn.close()
    with open(db, "r+b") as f:
        f.seek(page * (root - 1))
        f.write(bytes(range(256)) * (page // 256))


def _tamper(db: str, *statements) -> None:
    conn = sqlite3.connect(db)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()


def _truncate(db):
    with open(db, "r+b") as f:
        f.truncate(os.path.getsize(db) // 2)


def _overwrite_header(db):
    with open(db, "r+b") as f:
        f.write(bytes(range(100)))


@pytest.mark.parametrize("readonly", [False, True])
@pytest.mark.parametrize("damage", [_truncate, _overwrite_header])
def test_a_damaged_database_is_refused_at_open(tmp_path, damage, readonly):
    db = _closed_collection(tmp_path / "c")
    damage(db)
    for _ in range(2):  # a refused writer open releases the lock: the second is refused alike
        with pytest.raises(CollectionCorruptError) as err:
            Collection.open(tmp_path / "c", readonly=readonly, encoder=HashEncoder())
        assert str(err.value).startswith(f"{db}: ")
        assert "restore the collection's directory from a backup" in str(err.value)
        assert not isinstance(err.value, sqlite3.Error)


@pytest.mark.parametrize("readonly", [False, True])
def test_a_damaged_page_is_refused_at_the_first_read_that_touches_it(tmp_path, readonly):
    # open reads the first document (its id's type); the damaged page is met there.
    db = _closed_collection(tmp_path / "c", n=30)
    _overwrite_page_of(db, "documents")
    with pytest.raises(CollectionCorruptError, match="database is damaged.*malformed"):
        Collection.open(tmp_path / "c", readonly=readonly, encoder=HashEncoder())


@pytest.mark.parametrize("readonly", [False, True])
def test_a_page_damaged_while_open_is_refused_at_the_first_read_that_touches_it(tmp_path,
                                                                                  readonly):
    db = _closed_collection(tmp_path / "c", n=30)
    with Collection.open(tmp_path / "c", readonly=readonly, encoder=HashEncoder()) as col:
        col._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        _overwrite_page_of(db, "documents")
        for read in (lambda: col.get([1]), lambda: col.search("alpha"), lambda: col.ids()):
            with pytest.raises(CollectionCorruptError, match="database is damaged.*malformed"):
                read()
        with pytest.raises(CollectionCorruptError, match="integrity_check|malformed"):
            col.verify()


@pytest.mark.parametrize("statement, read, message", [
    ("UPDATE documents SET text = CAST(x'fffe41' AS TEXT) WHERE user_id = 1",
     lambda col: col.get([1]), "Could not decode to UTF-8"),
    ("UPDATE documents SET metadata = '{\"year\": 19' WHERE user_id = 1",
     lambda col: col.get([1]), "does not read back"),
    ("UPDATE documents SET metadata = '{\"year\": 19' WHERE user_id = 1",
     lambda col: col.count({"year": {"$gt": 2000}}), "malformed JSON"),
    ("UPDATE embeddings SET vector = x'00'",
     lambda col: col.rebuild(), "not 24 float32 values"),
])
def test_damaged_values_inside_sound_pages_are_refused(tmp_path, statement, read, message):
    _tamper(_closed_collection(tmp_path / "c", n=30), statement)
    with pytest.raises(CollectionCorruptError, match=message):  # at open or at the read
        with Collection.open(tmp_path / "c", encoder=HashEncoder()) as col:
            read(col)


def test_chunks_deleted_behind_the_files_back_are_dropped_from_the_indexes_at_open(tmp_path):
    # The change number is the files', but the digest of the chunk ids is not.
    _tamper(_closed_collection(tmp_path / "c", n=30), "DELETE FROM chunks WHERE chunk_id = 1")
    with Collection.open(tmp_path / "c", encoder=HashEncoder()) as col:
        assert col.repaired
        text = col.get([0])[0].text
        assert 0 not in [m.id for m in col.search(text, mode="sparse")]
        col.verify()  # raises if anything is wrong


def test_chunks_the_index_holds_but_the_database_lost_are_damage(tmp_path):
    db = _closed_collection(tmp_path / "c", n=30)
    with Collection.open(tmp_path / "c", encoder=HashEncoder()) as col:
        _tamper(db, "DELETE FROM chunks WHERE chunk_id = 1")  # while it is open
        text = col.get([0])[0].text
        with pytest.raises(CollectionCorruptError, match=r"chunks that the database lacks "
                           r"\(chunk ids \[1\]\)"):
            col.search(text, mode="sparse")
        with pytest.raises(CollectionCorruptError, match="the BM25 index holds 1 chunks the "
                           "database lacks.*rebuild\\(\\) remakes them"):
            col.verify()
        col.rebuild()
        col.verify()  # raises if anything is still wrong
        assert 0 not in [m.id for m in col.search(text, mode="sparse")]


def test_a_sound_collection_verifies_and_a_foreign_database_is_not_called_damaged(tmp_path):
    _closed_collection(tmp_path / "c", n=30)
    with Collection.open(tmp_path / "c", readonly=True, encoder=HashEncoder()) as col:
        col.verify()  # raises if anything is wrong
    (tmp_path / "other").mkdir()
    _tamper(_db(tmp_path / "other"), "CREATE TABLE t (x)")
    with pytest.raises(CollectionError, match="not a ragcore collection") as err:
        Collection.open(tmp_path / "other", readonly=True)
    assert not isinstance(err.value, CollectionCorruptError)


# ---- bad rows in bulk input ----------------------------------------------------------


def test_every_bad_text_is_named_and_nothing_is_written(tmp_path):
    with _small(tmp_path / "c") as col:
        with pytest.raises(TypeError) as err:
            col.add(["fine", 3, "  ", None, "", "also fine"], ids=list(range(10, 16)))
        message = str(err.value)
        assert message.startswith("texts: 4 of 6 entries are bad: ")
        for part in ("texts[1] must be a str, got int", "texts[2] is empty",
                     "texts[3] must be a str, got NoneType", "texts[4] is empty"):
            assert part in message
        assert "texts[0]" not in message and "texts[5]" not in message
        assert message.endswith("fix or drop them and call again (nothing was written)")
        assert len(col) == 3


def test_bad_texts_of_one_kind_keep_their_error_class(tmp_path):
    with _small(tmp_path / "c") as col:
        with pytest.raises(CollectionError, match=r"texts: 2 of 3 .*texts\[0\] is empty.*"
                           r"texts\[2\] is empty"):
            col.add(["", "fine", "\n"], ids=[10, 11, 12])


def test_many_bad_rows_are_named_up_to_twenty_then_counted(tmp_path):
    with _small(tmp_path / "c") as col:
        with pytest.raises(CollectionError) as err:
            col.upsert([""] * 25, ids=list(range(10, 35)))
        message = str(err.value)
        assert "25 of 25 entries" in message and "texts[19] is empty" in message
        assert "texts[20]" not in message and "; and 5 more;" in message
        assert len(col) == 3


def test_every_bad_metadata_row_is_named(tmp_path):
    with _small(tmp_path / "c") as col:
        with pytest.raises(TypeError) as err:
            col.add(["a", "b", "c", "d"], ids=[10, 11, 12, 13],
                    metadata=[{"x": object()}, {}, "x", {"$a": 1}])
        message = str(err.value)
        assert message.startswith("metadata: 3 of 4 entries are bad: ")
        assert "metadata[0] is not JSON-serialisable" in message
        assert "metadata[2] must be a dict, got str" in message
        assert "metadata[3]: key '$a'" in message and "metadata[1]" not in message
        assert len(col) == 3


def test_every_bad_id_is_named(tmp_path):
    with _small(tmp_path / "c") as col:
        with pytest.raises(TypeError) as err:
            col.add(["a", "b", "c", "d"], ids=[10, 1.5, True, 2**70])
        message = str(err.value)
        assert message.startswith("ids: 3 of 4 entries are bad: ")
        assert "ids[1] must be a str or an int, got float" in message
        assert "ids[2] must be a str or an int, got bool" in message
        assert "ids[3] = 1180591620717411303424 does not fit in 64 bits" in message
        with pytest.raises(CollectionError, match=r"ids: 2 ids appear more than once: \[5, 6\]"):
            col.add(["a"] * 5, ids=[5, 5, 6, 6, 7])
        with pytest.raises(CollectionError, match=r"ids: 2 already in the collection: \[2, 0\]; "
                           "use upsert"):
            col.add(["a", "b", "c"], ids=[2, 9, 0])
        assert len(col) == 3


class _WordChunker:
    """One chunk per text that has a letter; none for the others."""

    def chunk(self, text):
        return [SimpleNamespace(start=0, end=len(text), text=text)] if \
            any(c.isalpha() for c in text) else []


def test_every_text_that_gives_no_chunks_is_named(tmp_path):
    with Collection.create(tmp_path / "c", encoder=HashEncoder(), chunker=_WordChunker()) as col:
        with pytest.raises(CollectionError, match=r"texts: 2 of 3 entries are bad: texts\[0\] "
                           r"gave no chunks .*; texts\[2\] gave no chunks"):
            col.add(["...", "alpha beta", "!!"], ids=[1, 2, 3])
        assert len(col) == 0
