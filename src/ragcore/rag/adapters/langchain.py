"""LangChain adapters over a ragcore Collection (they need the ``langchain`` extra,
``pip install 'langchain-core>=0.3'``).

- ``RagcoreEmbeddings``: a langchain_core Embeddings over a ragcore bi-encoder (by default
  the bundled all-MiniLM-L6-v2, run locally through onnxruntime).
- ``RagcoreVectorStore``: a langchain_core VectorStore (add_texts, add_documents,
  similarity_search[_with_score | _by_vector], max_marginal_relevance_search[_by_vector],
  delete, get_by_ids, from_texts, filter=, as_retriever() with search_type "similarity",
  "similarity_score_threshold" or "mmr", close() / ``with``). Adding an id that exists
  replaces that document (LangChain's rule). Without a path its collection is temporary.
- ``RagcoreRetriever``: a BaseRetriever running the collection's hybrid (or dense, or
  sparse) search; k (or top_k) chunks per query.

Filters are ragcore's metadata filters (Mongo-style dicts: {"year": {"$gte": 2020}}).
"""

from __future__ import annotations

import numbers
import uuid
from typing import Any, Iterable, Literal, Sequence

import numpy as np
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from pydantic import AliasChoices, ConfigDict, Field, field_validator

from ..._util.arrays import check_positive_int
from ..collection import Collection
from ..collection.fingerprint import of as fingerprint_of
from ..mmr import mmr
from ._directory import ClosesCollection, open_or_create, temporary

_SEARCH_OPTIONS = ("fusion", "rerank", "k0", "by")  # Collection.search's other options


class RagcoreEmbeddings(Embeddings):
    """LangChain Embeddings over a ragcore bi-encoder, run locally (no service, no key).

    Vectors are lists of floats; the bundled model's are L2-normalised (cosine equals the
    inner product). Texts longer than the model's max_length are cut, with a warning.

    Args:
        encoder: a ragcore BiEncoder, or anything with ``encode(list of str) -> [n, dim]``
            (and, for models that embed queries differently, ``encode_queries``); default:
            the bundled all-MiniLM-L6-v2 (``ragcore.encoders.default_encoder``), the model
            a Collection uses when given no encoder.
        precision: the bundled model's precision ("fp32", "auto", "int8", "int8-ffn-fp32",
            "fp16", "int8-bundled"; see default_encoder); only without encoder.
    """

    def __init__(self, encoder=None, precision: str | None = None):
        if encoder is None:
            from ...encoders import default_encoder

            encoder = default_encoder() if precision is None else default_encoder(precision)
        elif precision is not None:
            raise ValueError("precision chooses the bundled model's precision; it cannot be "
                             "combined with encoder")
        elif isinstance(encoder, (str, bytes)) or not callable(getattr(encoder, "encode", None)):
            raise TypeError(f"encoder must have encode(list of str) (a ragcore BiEncoder; for a "
                            f"model file: BiEncoder(path)), got {type(encoder).__name__}")
        self.encoder = encoder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order; an empty list gives []."""
        if isinstance(texts, str):
            raise TypeError("texts must be a list of str, got one str; use embed_query")
        texts = list(texts)
        return np.asarray(self.encoder.encode(texts), dtype=np.float32).tolist() if texts else []

    def embed_query(self, text: str) -> list[float]:
        """The query's vector (through the encoder's encode_queries where it has one)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        encode = getattr(self.encoder, "encode_queries", self.encoder.encode)
        return np.asarray(encode([text]), dtype=np.float32)[0].tolist()

    def __repr__(self) -> str:
        return f"RagcoreEmbeddings({self.encoder!r})"


class LangChainEncoder:
    """A LangChain Embeddings model as a ragcore encoder.

    Its fingerprint (what a Collection records of the model that made its vectors, and
    compares when opened): a RagcoreEmbeddings gives its encoder's; another Embeddings its
    class name and its model name (attribute model, model_name or model_id), and its dim is
    its attribute dimensions or size where it has one: nothing is embedded to learn it (it
    may be a paid service); the collection's first vectors record it otherwise.
    """

    _MODEL_NAMES = ("model", "model_name", "model_id")
    _DIMENSIONS = ("dimensions", "size")

    def __init__(self, embedding: Embeddings):
        self.embedding = embedding

    @property
    def fingerprint(self):
        if isinstance(self.embedding, RagcoreEmbeddings):
            return fingerprint_of(self.embedding.encoder)
        name = next((v for v in (getattr(self.embedding, a, None) for a in self._MODEL_NAMES)
                     if isinstance(v, str) and v), None)
        return type(self.embedding).__name__ + (f"({name})" if name else "")

    @property
    def dim(self):
        for attribute in self._DIMENSIONS:
            value = getattr(self.embedding, attribute, None)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        return None

    def encode(self, texts):
        return np.asarray(self.embedding.embed_documents(list(texts)), dtype=np.float32)

    def encode_queries(self, texts):
        return np.asarray([self.embedding.embed_query(t) for t in texts], dtype=np.float32)

    def __repr__(self) -> str:
        return f"LangChainEncoder({type(self.embedding).__name__})"


class RagcoreVectorStore(ClosesCollection, VectorStore):
    """A LangChain VectorStore kept in a ragcore Collection.

    Close it (``close()``, or ``with RagcoreVectorStore(...) as store:``) to write the index
    files and release the collection's writer lock.

    Args:
        embedding: the LangChain Embeddings model (RagcoreEmbeddings: ragcore's bundled one).
        path: the collection directory (opened if it holds one, else created). None (the
            default): a temporary collection, as Chroma's in-memory default: its directory
            is removed when the store is closed or garbage-collected; pass a path to keep it.
        collection: an open Collection to use instead of path (its encoder is replaced
            by embedding for queries and adds); the store's close() closes it.

    A collection (at path, or given) whose vectors another model made is refused, naming
    both (see LangChainEncoder for what identifies a model); to change models, re-embed
    it first: ``Collection.open(path).reembed(LangChainEncoder(embedding))``.
        create_options: Collection.create options (dense, bm25, metadata_schema, chunker;
            default chunker "none": each LangChain document is one chunk).
    """

    def __init__(self, embedding: Embeddings, path=None, collection: Collection | None = None,
                 **create_options):
        if collection is not None and path is not None:
            raise ValueError("pass path or collection, not both")
        self._embedding = embedding
        encoder = LangChainEncoder(embedding)
        options = {"chunker": "none", "dense": {"kind": "flat", "metric": "cosine"},
                   **create_options}
        if collection is not None:  # refused if embedding is not the model of its vectors
            collection._use_encoder(encoder, "embedding")
            self._discard = collection.close
        elif path is not None:
            collection = open_or_create(path, encoder, options)
            self._discard = collection.close
        else:
            collection, self._discard = temporary(self, encoder, options, "ragcore-langchain-")
        self.collection = collection

    @property
    def embeddings(self) -> Embeddings:
        return self._embedding

    # ---- writing -------------------------------------------------------------

    def add_texts(self, texts: Iterable[str], metadatas: list[dict] | None = None, *,
                  ids: list[str] | None = None, **kwargs: Any) -> list[str]:
        texts = list(texts)
        if metadatas is not None and len(metadatas) != len(texts):
            raise ValueError(f"metadatas has {len(metadatas)} entries for {len(texts)} texts")
        ids = list(ids) if ids is not None else [None] * len(texts)
        if len(ids) != len(texts):
            raise ValueError(f"ids has {len(ids)} entries for {len(texts)} texts")
        ids = [str(i) if i is not None else uuid.uuid4().hex for i in ids]
        if not texts:
            return []
        return self.collection.upsert(texts, ids, metadata=metadatas)

    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        ids = kwargs.pop("ids", None)
        if ids is None:
            ids = [doc.id for doc in documents]
        return self.add_texts([d.page_content for d in documents],
                              [dict(d.metadata) for d in documents], ids=ids, **kwargs)

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Deletes these ids (unknown ones are ignored); None deletes every document."""
        ids = self.collection.ids() if ids is None else [str(i) for i in ids]
        self.collection.delete(ids, missing_ok=True)
        return True

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        return [Document(page_content=d.text, metadata=d.metadata, id=d.id)
                for d in self.collection.get([str(i) for i in ids])]

    # ---- search --------------------------------------------------------------

    def similarity_search(self, query: str, k: int = 4, filter: dict | None = None,
                          **kwargs: Any) -> list[Document]:
        return [doc for doc, _ in self.similarity_search_with_score(query, k, filter, **kwargs)]

    def similarity_search_with_score(self, query: str, k: int = 4, filter: dict | None = None,
                                     mode: str = "dense", **kwargs: Any):
        """(Document, score) pairs, best first: the dense similarity (cosine by default)
        for mode="dense", or the hybrid / BM25 score for mode="hybrid" / "sparse"."""
        if len(self.collection) == 0:
            return []
        results = self.collection.search(query, k=k, mode=mode, filter=filter, by="document",
                                         **kwargs)
        return [(_document(m), m.score) for m in results]

    def similarity_search_by_vector(self, embedding: list[float], k: int = 4,
                                    filter: dict | None = None, **kwargs: Any) -> list[Document]:
        if len(self.collection) == 0:
            return []
        vector = np.asarray(embedding, dtype=np.float32)
        return [_document(m) for m in self.collection.search_by_vector(vector, k=k, filter=filter,
                                                                        by="document")]

    def max_marginal_relevance_search(self, query: str, k: int = 4, fetch_k: int = 20,
                                      lambda_mult: float = 0.5, filter: dict | None = None,
                                      **kwargs: Any) -> list[Document]:
        """k documents chosen by maximal marginal relevance (ragcore.rag.mmr) among the
        fetch_k most similar to the query (dense search, filter applied), in the order
        chosen. lambda_mult: 1 ranks by relevance alone, 0 by diversity alone."""
        return self.max_marginal_relevance_search_by_vector(
            self._embedding.embed_query(query), k, fetch_k, lambda_mult, filter=filter, **kwargs)

    def max_marginal_relevance_search_by_vector(self, embedding: list[float], k: int = 4,
                                                fetch_k: int = 20, lambda_mult: float = 0.5,
                                                filter: dict | None = None,
                                                **kwargs: Any) -> list[Document]:
        """max_marginal_relevance_search with the query's vector. The candidates' vectors
        are embedded again with this store's embedding model (the Collection does not hand
        out its stored vectors)."""
        _check_mmr_options(k, fetch_k, lambda_mult, kwargs)
        if len(self.collection) == 0:
            return []
        vector = np.asarray(embedding, dtype=np.float32)
        candidates = self.collection.search_by_vector(vector, k=fetch_k, filter=filter,
                                                      by="document")
        if not candidates:
            return []
        vectors = self._embedding.embed_documents([m.text for m in candidates])
        return [_document(candidates[i]) for i in mmr(vector, vectors, lambda_=lambda_mult, k=k)]

    def _select_relevance_score_fn(self):
        # Cosine similarity in [-1, 1] to a relevance in [0, 1].
        return lambda score: (score + 1.0) / 2.0

    @classmethod
    def from_texts(cls, texts: list[str], embedding: Embeddings, metadatas: list[dict] | None = None,
                   *, ids: list[str] | None = None, path=None, **kwargs: Any) -> RagcoreVectorStore:
        """A store holding texts. Without path the collection is temporary (removed when
        the store is closed or garbage-collected); kwargs go to RagcoreVectorStore."""
        store = cls(embedding, path=path, **kwargs)
        try:
            store.add_texts(texts, metadatas, ids=ids)
        except BaseException:
            store.close()  # a bad argument must not leave the writer lock held
            raise
        return store


class RagcoreRetriever(BaseRetriever):
    """LangChain retriever over a Collection's hybrid search (or mode="dense" / "sparse").

    Returns k chunks, best first, each a Document with its score and span (start, end,
    chunk) in its metadata; fewer when fewer chunks match (a BM25 match needs a query term,
    and a filter may allow fewer).

    Args:
        collection: the ragcore Collection.
        k (or top_k): chunks per query (default 4); ``invoke(query, k=n)`` for one query.
        mode: "hybrid" (default), "dense" or "sparse".
        filter: a ragcore metadata filter.
        search_options: more Collection.search options (fusion, rerank, k0, by).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    collection: Any
    k: int = Field(4, gt=0, strict=True, validation_alias=AliasChoices("k", "top_k"))
    mode: Literal["hybrid", "dense", "sparse"] = "hybrid"
    filter: dict | None = None
    search_options: dict = {}

    @field_validator("search_options")
    @classmethod
    def _known_options(cls, options: dict) -> dict:
        unknown = sorted(set(options) - set(_SEARCH_OPTIONS))
        if unknown:
            raise ValueError(f"search_options: unknown {unknown}; Collection.search takes "
                             f"{', '.join(_SEARCH_OPTIONS)} here (k, mode and filter are fields)")
        return options

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None, top_k: int | None = None
                                ) -> list[Document]:
        if k is not None and top_k is not None:
            raise ValueError("pass k or top_k, not both")
        k = top_k if k is None else k
        results = self.collection.search(query, k=self.k if k is None else k, mode=self.mode,
                                         filter=self.filter, **self.search_options)
        return [_document(m, with_span=True) for m in results]


def _check_mmr_options(k, fetch_k, lambda_mult, unknown: dict) -> None:
    if unknown:
        raise TypeError(f"max_marginal_relevance_search got unknown arguments {sorted(unknown)} "
                        "(it takes k, fetch_k, lambda_mult, filter)")
    k, fetch_k = check_positive_int(k, "k"), check_positive_int(fetch_k, "fetch_k")
    if fetch_k < k:
        raise ValueError(f"fetch_k ({fetch_k}) must be at least k ({k}): MMR picks k of the "
                         "fetch_k candidates")
    if isinstance(lambda_mult, bool) or not isinstance(lambda_mult, numbers.Real) \
            or not 0.0 <= lambda_mult <= 1.0:
        raise ValueError(f"lambda_mult must be a number in [0, 1], got {lambda_mult!r}")


def _document(match, with_span: bool = False) -> Document:
    metadata = dict(match.metadata)
    if with_span:
        metadata.update({"score": match.score, "start": match.start, "end": match.end,
                         "chunk": match.position})
    return Document(page_content=match.text, metadata=metadata, id=str(match.id))
