"""The body of a ShardedCollection replica actor: one Collection on its own directory.

A plain class (tests may use it without Ray); ShardedCollection wraps it with ray.remote.
Ray runs one call at a time on an actor, so a search's candidates and the rows it returns
come from the same state, and writes never interleave with them.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile

from ..rag.collection import Collection
from ..rag.collection import store

_WRITES = ("add", "upsert", "delete")


class CollectionHost:
    """Holds one replica's Collection (created or opened on ``path``)."""

    def __init__(self, path: str, create: bool, options: dict, encoder=None, chunker=None):
        self._path = path
        if create:
            os.makedirs(path, exist_ok=True)  # on the actor's machine
            self._collection = Collection.create(path, encoder=encoder, chunker=chunker,
                                                 **options)
        else:
            self._collection = Collection.open(path, encoder=encoder, chunker=chunker)
        self._encoder, self._chunker = encoder, chunker

    def ready(self) -> int:
        return self._collection.change

    def pid(self) -> int:
        return os.getpid()

    def bundled_precision(self) -> str | None:
        """The precision of the bundled model this replica's vectors were made with, or None
        when they were made with another encoder."""
        from ..encoders.defaults import bundled_precision

        return bundled_precision(self._collection._fingerprint)

    # ---- writes: each returns the change number it committed ------------------

    def write(self, op: str, args: tuple, kwargs: dict) -> int:
        if op not in _WRITES:
            raise ValueError(f"unknown write {op!r}")
        getattr(self._collection, op)(*args, **kwargs)
        return self._collection.change

    def check_write(self, texts, ids, metadata, embeddings) -> list:
        return self._collection.check_write(texts, ids, metadata, embeddings)

    def existing(self, ids: list) -> list:
        found = {d.id for d in self._collection.get(ids)}
        return [i for i in ids if i in found]

    # ---- reads --------------------------------------------------------------

    def count(self, filter=None) -> int:
        return self._collection.count(filter)

    def get(self, ids: list) -> list:
        return self._collection.get(ids)

    def ids(self, filter=None) -> list:
        return self._collection.ids(filter)

    def first_phase(self, queries, width: int, mode: str, filter, vectors, statistics=None):
        """Dense candidates with their rows (metadata as stored JSON: the driver decodes the
        rows it keeps) (mode != "sparse"); then, with statistics, the
        BM25 candidates scored under them (the whole search in one call), else this
        shard's BM25 statistics of the queries (mode != "dense"), for a second round."""
        dense = stats = sparse = None
        if mode != "sparse":
            dense = self._collection.candidates(queries, width, "dense", filter, vectors,
                                                decode_metadata=False)
        if mode != "dense":
            if statistics is None:
                stats = self._collection.bm25_statistics(queries)
            else:
                sparse = self.sparse(queries, width, filter, statistics)
        return dense, stats, sparse

    def sparse(self, queries, width: int, filter, statistics):
        """BM25 candidates scored under the global statistics, with their rows."""
        return self._collection.candidates(queries, width, "sparse", filter,
                                           statistics=statistics, decode_metadata=False)

    # ---- catching up --------------------------------------------------------

    def snapshot(self) -> bytes:
        """The database, copied consistently (SQLite's backup), for a replica that must
        start over from this one."""
        self._collection.flush()
        source = sqlite3.connect(os.path.join(self._path, store.DB_NAME))
        with tempfile.TemporaryDirectory() as tmp:
            target_path = os.path.join(tmp, store.DB_NAME)
            target = sqlite3.connect(target_path)
            try:
                source.backup(target)
            finally:
                target.close()
                source.close()
            with open(target_path, "rb") as f:
                return f.read()

    def restore(self, database: bytes) -> int:
        """Replaces this replica's state with another's database; the index files are
        rebuilt from it on open."""
        self._collection.close()
        for name in os.listdir(self._path):
            full = os.path.join(self._path, name)
            if os.path.isdir(full):
                shutil.rmtree(full)
            elif name != "writer.lock":
                os.unlink(full)
        with open(os.path.join(self._path, store.DB_NAME), "wb") as f:
            f.write(database)
            f.flush()
            os.fsync(f.fileno())
        self._collection = Collection.open(self._path, encoder=self._encoder,
                                           chunker=self._chunker)
        return self._collection.change

    def close(self) -> None:
        self._collection.close()
