"""HybridRetriever: chunk, index (dense + BM25), retrieve k0 candidates from
both, fuse, rerank to k, with every stage timed.

Dense-only, sparse-only and hybrid are modes of one object. A reranker that
raises fails open: the first-stage order is returned and the error is reported
on the result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .._util.arrays import check_choice, check_positive_int
from ..hits import PADDING_ID, Hits
from .defaults import DEFAULT_FUSION, DEFAULT_K0, bm25_options as default_bm25_options
from .fusion import FusionSetting

MODES = ("hybrid", "dense", "sparse")
FUSIONS = ("rrf", "convex", "wsum", "combsum", "combmnz")
STAGES = ("encode", "dense", "sparse", "fuse", "rerank")


@dataclass
class Retrieval:
    """Results of a batch of queries: ids index the retriever's chunks."""

    hits: Hits
    chunks: list                      # per query, the retrieved Chunk objects, best first
    timings: dict                     # stage -> seconds for the whole batch
    rerank_error: str | None = None   # set when the reranker failed and was skipped
    candidates: Hits | None = field(default=None, repr=False)  # first stage, before reranking


def _fusion_setting(fusion):
    """A FusionSetting (from ``fusion.tune``) as given; "rrf" and "convex" as their defaults."""
    if isinstance(fusion, FusionSetting):
        return fusion
    check_choice(fusion, "fusion", FUSIONS)
    return FusionSetting(method=fusion) if fusion in ("rrf", "convex") else fusion


def _fuse(hits_list, fusion, k: int) -> Hits:
    from . import fusion as fusion_module

    if isinstance(fusion, fusion_module.FusionSetting):
        return fusion.fuse(*hits_list, k=k)  # the pipeline lists dense first, then sparse
    return fusion_module.combine(hits_list, method=fusion, k=k)


class HybridRetriever:
    """Two-stage retrieval over chunks.

    Args:
        encoder: a BiEncoder (queries are encoded with it).
        dense_index: a FlatIndex (or anything with ``search(queries, k) -> Hits``)
            whose ids are chunk positions.
        bm25_index: a BM25Index over the same chunk positions.
        chunks: the Chunk objects, position = id in both indexes.
        fusion: a ``fusion.FusionSetting`` such as ``fusion.tune(...).setting``; default
            rag.defaults.DEFAULT_FUSION (convex, z-scores, 0.7 on dense: the package's one
            default, also the Collection's); or "rrf" (r0 = 60), "convex" (alpha 0.5,
            theoretical min-max with the bounds of cosine and BM25), "wsum", "combsum",
            "combmnz".
        k0: candidates taken from each first-stage retriever.
        reranker: None, or anything with ``score(query, passages) -> scores``
            (CrossEncoder, LateInteractionReranker); it reorders the fused k0.
        k: results returned per query.
        mode: "hybrid", "dense" or "sparse".
    """

    def __init__(self, encoder, dense_index, bm25_index, chunks, fusion=DEFAULT_FUSION,
                 k0: int = DEFAULT_K0, reranker=None, k: int = 5, mode: str = "hybrid"):
        self.encoder, self.dense_index, self.bm25_index = encoder, dense_index, bm25_index
        self.chunks = list(chunks)
        self.fusion = _fusion_setting(fusion)
        self.k0 = check_positive_int(k0, "k0")
        self.k = check_positive_int(k, "k")
        self.reranker = reranker
        self.mode = check_choice(mode, "mode", MODES)

    @classmethod
    def from_texts(cls, texts, doc_ids=None, metadata=None, encoder=None, chunker=None,
                   dense_dtype: str = "float32", bm25_options: dict | None = None,
                   embed=None, **options) -> HybridRetriever:
        """Chunks the texts and builds both indexes over the chunks.

        doc_ids: one per text (default 0..n-1). metadata: one dict per text.
        embed: optional function(texts) -> float32 vectors used instead of
        ``encoder.encode`` (e.g. a disk cache around it). bm25_options: BM25Index options
        over rag.defaults.DEFAULT_BM25 (English stopwords and stemming). options: as for
        the constructor (fusion, k0, reranker, k, mode).
        """
        from ..sparse.bm25 import BM25Index
        from .chunking import Chunker
        from ..dense.flat import FlatIndex
        from ..encoders import default_encoder

        texts = list(texts)
        doc_ids = list(range(len(texts))) if doc_ids is None else list(doc_ids)
        if len(doc_ids) != len(texts):
            raise ValueError(f"doc_ids has {len(doc_ids)} entries for {len(texts)} texts")
        metadata = [None] * len(texts) if metadata is None else list(metadata)
        encoder = encoder or default_encoder()
        chunker = chunker or Chunker(encoder)
        chunks = chunker.chunk_documents(zip(doc_ids, texts, metadata))
        if not chunks:
            raise ValueError("texts produced no chunks (are they all empty?)")
        chunk_texts = [c.text for c in chunks]
        vectors = (embed or encoder.encode)(chunk_texts)
        dense = FlatIndex(vectors.shape[1], metric="ip", dtype=dense_dtype)
        dense.add(np.ascontiguousarray(vectors, dtype=np.float32))
        sparse = BM25Index(**default_bm25_options(bm25_options))
        sparse.index(chunk_texts)
        return cls(encoder, dense, sparse, chunks, **options)

    def retrieve(self, query: str, mode: str | None = None) -> Retrieval:
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, got {type(query).__name__}")
        return self.retrieve_batch([query], mode)

    def retrieve_batch(self, queries, mode: str | None = None) -> Retrieval:
        mode = self.mode if mode is None else check_choice(mode, "mode", MODES)
        queries = list(queries)
        timings = dict.fromkeys(STAGES, 0.0)
        first = []
        if mode in ("hybrid", "dense"):
            t = time.perf_counter()
            vectors = self.encoder.encode(queries, warn=False)
            timings["encode"] = time.perf_counter() - t
            t = time.perf_counter()
            first.append(self.dense_index.search(vectors, self.k0))
            timings["dense"] = time.perf_counter() - t
        if mode in ("hybrid", "sparse"):
            t = time.perf_counter()
            first.append(self.bm25_index.search(queries, self.k0))
            timings["sparse"] = time.perf_counter() - t
        t = time.perf_counter()
        candidates = _fuse(first, self.fusion, self.k0) if len(first) > 1 else first[0]
        timings["fuse"] = time.perf_counter() - t
        hits, error = candidates, None
        if self.reranker is not None:
            t = time.perf_counter()
            try:
                hits = self._rerank(queries, candidates)
            except Exception as err:  # fail open: the first stage still answers
                hits, error = candidates, f"{type(err).__name__}: {err}"
            timings["rerank"] = time.perf_counter() - t
        hits = Hits(np.ascontiguousarray(hits.scores[:, : self.k]), np.ascontiguousarray(hits.ids[:, : self.k]))
        chunks = [[self.chunks[i] for i in row if i != PADDING_ID] for row in hits.ids]
        return Retrieval(hits, chunks, timings, error, candidates)

    def _rerank(self, queries, candidates: Hits) -> Hits:
        scores = np.full(candidates.ids.shape, -np.inf, dtype=np.float32)
        ids = np.full(candidates.ids.shape, PADDING_ID, dtype=np.int64)
        for row, (query, cand) in enumerate(zip(queries, candidates.ids)):
            cand = cand[cand != PADDING_ID]
            if len(cand) == 0:
                continue
            s = np.asarray(self.reranker.score(query, [self.chunks[i].text for i in cand]),
                           dtype=np.float32)
            if s.shape != cand.shape or not np.isfinite(s).all():
                raise ValueError(f"the reranker returned {s.shape} scores (finite: "
                                 f"{np.isfinite(s).all()}) for {len(cand)} passages")
            order = np.lexsort((cand, -s.astype(np.float64)))  # ties: smaller chunk id first
            scores[row, : len(cand)], ids[row, : len(cand)] = s[order], cand[order]
        return Hits(scores, ids)
