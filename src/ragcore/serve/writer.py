"""The write side of the service: the one writable Collection (the single-writer rule).
Its answers are plain dicts, so they cross a Ray handle unchanged: ``{"ids": [...]}`` /
``{"deleted": n}``, or ``{"error": ..., "field": ..., "status": ...}`` for a refusal."""

from __future__ import annotations

import numpy as np

from ..errors import CollectionCorruptError, FilterError, RagcoreError, ShardError

_FIELDS = ("ids", "metadata", "embeddings", "texts")


def open_writable(path, encoder=None):
    """path's Collection, or its ShardedCollection (a directory with the sharded manifest:
    its shard actors start on the Ray this process is connected to, or a local one)."""
    from ..distributed import ShardedCollection, is_sharded_collection
    from ..rag.collection import Collection

    if is_sharded_collection(path):
        return ShardedCollection.open(path, encoder=encoder)
    return Collection.open(path, encoder=encoder)


class Writer:
    """collection: an open Collection or ShardedCollection to write (left open by close);
    by default path's, opened here."""

    def __init__(self, path, encoder=None, collection=None):
        self._owned = collection is None
        self.collection = open_writable(path, encoder) if collection is None else collection

    def add(self, texts, ids=None, metadata=None, embeddings=None, upsert=False) -> dict:
        try:
            vectors = None if embeddings is None else np.asarray(embeddings, dtype=np.float32)
            write = self.collection.upsert if upsert else self.collection.add
            return {"ids": write(texts, ids=ids, metadata=metadata, embeddings=vectors)}
        except Exception as err:  # noqa: BLE001 (sorted into a refusal or re-raised)
            return _refusal(err, "texts")

    def delete(self, ids, missing_ok=False) -> dict:
        try:
            return {"deleted": self.collection.delete(ids, missing_ok=missing_ok)}
        except Exception as err:  # noqa: BLE001
            return _refusal(err, "ids")

    def close(self) -> None:
        if self._owned:
            self.collection.close()


def _refusal(err: Exception, default_field: str) -> dict:
    if isinstance(err, (CollectionCorruptError, ShardError)):  # retry later
        return {"error": str(err), "field": "collection", "status": 503}
    if isinstance(err, FilterError) or not isinstance(err, (RagcoreError, ValueError, TypeError)):
        raise err
    message = str(err)
    field = next((f for f in _FIELDS if f in message), default_field)
    return {"error": message, "field": field, "status": 422}
