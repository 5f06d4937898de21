"""Chroma (embedded, on disk): its HNSW index with ragcore's HNSW settings (collection)."""

from __future__ import annotations

LIBRARY, DISTRIBUTION = "chromadb", "chromadb"
BATCH = 5000  # below Chroma's largest batch


class Collection:
    name = "chroma"
    settings = {"hnsw:space": "ip", "hnsw:M": 16, "hnsw:construction_ef": 200,
                "hnsw:search_ef": 64}

    def __init__(self, path):
        import chromadb

        self.path, self.chromadb = path, chromadb
        self.client = chromadb.PersistentClient(path=path, settings=self.no_telemetry())
        self.col = self.client.create_collection("bench", metadata=self.settings)

    def no_telemetry(self):
        return self.chromadb.config.Settings(anonymized_telemetry=False)

    def add(self, ids, texts, vectors, buckets):
        for s in range(0, len(ids), BATCH):
            self.col.add(ids=[str(i) for i in ids[s:s + BATCH]], documents=texts[s:s + BATCH],
                         embeddings=vectors[s:s + BATCH],
                         metadatas=[{"bucket": int(b)} for b in buckets[s:s + BATCH]])

    def reopen(self):
        del self.col, self.client
        self.client = self.chromadb.PersistentClient(path=self.path, settings=self.no_telemetry())
        self.col = self.client.get_collection("bench")

    def search(self, q, k, below):
        where = None if below is None else {"bucket": {"$lt": below}}
        got = self.col.query(query_embeddings=[q], n_results=k, where=where, include=[])
        return [int(i) for i in got["ids"][0]]


TASKS = {"collection": [Collection]}
