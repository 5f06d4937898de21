"""The Collection's contract with its user: what a dropped collection releases, how unknown
ids, damaged databases and bad bulk input are refused."""

from __future__ import annotations

import gc
import os
import weakref

import pytest

from _collection_data import HashEncoder
from ragcore import Collection, CollectionError, CollectionLockedError


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
