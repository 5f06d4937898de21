"""ragcore's own adapters: FlatIndex, BM25Index, BiEncoder, Collection; HNSWIndex and IVFIndex
(ann) are those of ragcore bench ann (ragcore.cli.bench.peers)."""

from __future__ import annotations

import numpy as np

from ragcore.cli.bench.peers import (RagcoreHNSW, RagcoreIVF, RagcoreIVFBf16Compute,
                                     RagcoreIVFPq4, RagcoreIVFRabitq)

LIBRARY, DISTRIBUTION = "ragcore", "ragcore-engine"


class Exact:
    name = "ragcore"

    def __init__(self, threads, dtype="float32", compute="float32"):
        self.threads, self.dtype, self.compute = threads, dtype, compute

    def build(self, x):
        import ragcore

        self.index = ragcore.FlatIndex(x.shape[1], "ip", self.dtype, compute=self.compute)
        self.index.add(x)

    def search(self, q, k):
        return self.index.search(q, k, n_threads=self.threads).ids


class ExactBf16(Exact):
    name = "ragcore bf16"

    def __init__(self, threads):
        super().__init__(threads, "bfloat16")


class ExactBf16Compute(Exact):
    """bfloat16 storage and products (AMX or AVX512_BF16; the scalar level elsewhere)."""
    name = "ragcore bf16 compute"

    def __init__(self, threads):
        super().__init__(threads, "bfloat16", "bfloat16")

    def build(self, x):
        super().build(x)
        level = self.index.compute_level
        self.name = f"ragcore bf16 compute ({level})"
        self.unavailable = level == "scalar"  # correct but slow: not a system to time


class Bm25:
    name = "ragcore"

    def __init__(self, threads, workdir):
        self.threads = threads

    def build(self, texts):
        import ragcore

        self.index = ragcore.BM25Index(k1=1.2, b=0.75, variant="lucene_legacy",
                                       lucene_norms=True, stopwords=None)
        self.index.index(texts, n_threads=self.threads, show_progress=False)

    def search(self, queries, k):
        return self.index.search(queries, k, n_threads=self.threads).ids


class Encode:
    name = "ragcore BiEncoder int8"
    precision = "int8"

    def __init__(self, threads):
        from ragcore.encoders.defaults import default_encoder

        self.model = default_encoder(self.precision, threads=threads)

    def encode(self, texts, batch):
        out = [np.asarray(self.model.encode(texts[i:i + batch], warn=False))
               for i in range(0, len(texts), batch)]
        return np.concatenate(out)


class EncodeFp32(Encode):
    name, precision = "ragcore BiEncoder fp32", "fp32"


class _GivenEmbeddings:
    def encode(self, texts):
        raise RuntimeError("the benchmark gives every vector")


class Collection:
    name, dense = "ragcore", "flat"

    def __init__(self, path):
        from ragcore.rag.collection import Collection as C

        self.path, self._cls = path, C
        self.col = C.create(path, encoder=_GivenEmbeddings(), chunker="none", dense=self.dense,
                            metadata_schema={"bucket": "int"})

    def add(self, ids, texts, vectors, buckets):
        self.col.add(texts, ids=[int(i) for i in ids],
                     metadata=[{"bucket": int(b)} for b in buckets], embeddings=vectors)

    def reopen(self):
        self.col.close()
        self.col = self._cls.open(self.path, encoder=_GivenEmbeddings())

    def search(self, q, k, below):
        flt = None if below is None else {"bucket": {"$lt": below}}
        return [int(m.id) for m in self.col.search_by_vector(q, k=k, filter=flt)]


class CollectionHnsw(Collection):
    name, dense = "ragcore hnsw", "hnsw"


class Ingest:
    """Collection.add of whole documents with the defaults: its chunker and the bundled
    encoder at its default precision (default_encoder()), on `threads` cores."""

    name, precision = "ragcore Collection", None

    def __init__(self, path, threads):
        from ragcore.rag.collection import Collection as C

        from ragcore.encoders.defaults import default_encoder

        # the encoder a Collection loads when given none, loaded here so that the timing
        # leaves out the model's loading, as it does for the peers
        encoder = default_encoder(threads=threads) if self.precision is None else \
            default_encoder(self.precision, threads=threads)
        encoder.encode(["warm up " * 100] * 2)  # two model calls: the per-core sessions load
        self.col = C.create(path, encoder=encoder)

    def add(self, documents, passages):
        self.col.add(documents)

    def close(self):
        self.col.close()


class IngestFp32(Ingest):
    """The same with the fused fp32 model (the bundled default before int8 where it holds)."""

    name, precision = "ragcore Collection fp32", "fp32"


TASKS = {"exact": [Exact, ExactBf16, ExactBf16Compute],
         "ann": [RagcoreHNSW, RagcoreIVF, RagcoreIVFBf16Compute, RagcoreIVFRabitq,
                RagcoreIVFPq4], "bm25": [Bm25],
         "encode": [Encode, EncodeFp32], "collection": [Collection, CollectionHnsw],
         "ingest": [Ingest, IngestFp32]}
