"""Chroma (embedded, on disk): its HNSW index with ragcore's HNSW settings (collection), and
the ingest pipeline a user would write around it: sentence-transformers encodes, Chroma
stores (ingest; needs sentence-transformers too)."""

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


class Ingest:
    """The passages encoded by sentence-transformers (the same all-MiniLM-L6-v2 weights,
    torch fp32, on `threads` threads, its default batch of 32), then added to a Chroma
    collection with the collection task's settings, texts and ids included."""

    name = "sentence-transformers + chroma"

    def __init__(self, path, threads):
        import chromadb
        from peers.sentence_transformers import load_minilm, torch_threads

        self.threads, self.torch_threads = threads, torch_threads
        torch_threads(threads)
        self.model = load_minilm()
        self.client = chromadb.PersistentClient(
            path=path, settings=chromadb.config.Settings(anonymized_telemetry=False))
        self.col = self.client.create_collection("bench", metadata=Collection.settings)

    def add(self, documents, passages):
        self.torch_threads(self.threads)
        texts = [p for doc in passages for p in doc]
        vectors = self.model.encode(texts, batch_size=32, normalize_embeddings=True,
                                    show_progress_bar=False, convert_to_numpy=True)
        for s in range(0, len(texts), BATCH):
            self.col.add(ids=[str(i) for i in range(s, min(s + BATCH, len(texts)))],
                         documents=texts[s:s + BATCH], embeddings=vectors[s:s + BATCH])

    def close(self):
        del self.col, self.client


TASKS = {"collection": [Collection], "ingest": [Ingest]}
