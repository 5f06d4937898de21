"""indexes.json: the summary of chunk ids that SQLite computes equals the one numpy computes
from the index's ids, and a manifest without it (an older one) falls back to the digest."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
from hypothesis import given, settings, strategies as st

from _collection_data import HashEncoder, corpus
from ragcore import Collection
from ragcore.rag.collection import manifest


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**62), unique=True, max_size=60))
def test_the_summary_sqlite_computes_is_the_one_numpy_computes(ids):
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE chunks (chunk_id INTEGER PRIMARY KEY)")
    conn.executemany("INSERT INTO chunks VALUES (?)", [(i,) for i in ids])
    got = list(conn.execute(manifest.summary_sql("chunks", "chunk_id")).fetchone())
    assert got == manifest.ids_summary(np.array(ids, dtype=np.int64))


@given(st.lists(st.integers(0, 2**40), unique=True, min_size=1, max_size=30), st.data())
@settings(max_examples=60, deadline=None)
def test_one_id_removed_or_moved_changes_the_summary(ids, data):
    before = manifest.ids_summary(ids)
    i = data.draw(st.integers(0, len(ids) - 1))
    assert manifest.ids_summary(ids[:i] + ids[i + 1:]) != before
    # The summary sees ids modulo 2**31 - 1: a move by a multiple of it goes unseen.
    moved = data.draw(st.integers(0, 2**40).filter(
        lambda v: v not in ids and (v - ids[i]) % (2**31 - 1)))
    assert manifest.ids_summary(ids[:i] + [moved] + ids[i + 1:]) != before


def test_a_manifest_without_the_summary_compares_the_digest_of_every_id(tmp_path):
    texts, metadata = corpus(20, seed=2)
    with Collection.create(tmp_path / "c", encoder=HashEncoder(), chunker="none") as col:
        col.add(texts, ids=list(range(20)), metadata=metadata)
    path = tmp_path / "c" / "indexes.json"
    written = json.loads(path.read_text())
    assert written["chunks"] == manifest.ids_summary(np.arange(1, 21))
    del written["chunks"]
    path.write_text(json.dumps(written))
    conn = sqlite3.connect(tmp_path / "c" / "collection.sqlite")
    conn.execute("DELETE FROM chunks WHERE chunk_id = 5")
    conn.commit()
    conn.close()
    with Collection.open(tmp_path / "c", encoder=HashEncoder()) as col:
        assert col.repaired
        col.verify()  # raises if the indexes hold the deleted chunk
