"""Qdrant's local mode (qdrant-client, on disk, no server): exact scan in Python (collection)."""

from __future__ import annotations

LIBRARY, DISTRIBUTION = "qdrant_client", "qdrant-client"
BATCH = 1000


class Collection:
    name = "qdrant local"

    def __init__(self, path):
        from qdrant_client import QdrantClient, models

        self.path, self.models = path, models
        self.client = QdrantClient(path=path)
        self.dim = None

    def add(self, ids, texts, vectors, buckets):
        m = self.models
        if self.dim is None:
            self.dim = vectors.shape[1]
            self.client.create_collection(
                "bench", vectors_config=m.VectorParams(size=self.dim, distance=m.Distance.DOT))
        for s in range(0, len(ids), BATCH):
            self.client.upsert("bench", points=m.Batch(
                ids=[int(i) for i in ids[s:s + BATCH]], vectors=vectors[s:s + BATCH].tolist(),
                payloads=[{"text": t, "bucket": int(b)}
                          for t, b in zip(texts[s:s + BATCH], buckets[s:s + BATCH])]))

    def reopen(self):
        from qdrant_client import QdrantClient

        self.client.close()
        self.client = QdrantClient(path=self.path)

    def search(self, q, k, below):
        m = self.models
        flt = None if below is None else m.Filter(must=[m.FieldCondition(
            key="bucket", range=m.Range(lt=below))])
        got = self.client.query_points("bench", query=q.tolist(), limit=k, query_filter=flt)
        return [int(p.id) for p in got.points]


TASKS = {"collection": [Collection]}
