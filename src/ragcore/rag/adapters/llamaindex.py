"""LlamaIndex adapters over a ragcore Collection (they need the ``llamaindex`` extra,
``pip install 'llama-index-core>=0.12'``).

- ``RagcoreVectorStore``: a BasePydanticVectorStore (close() / ``with``; without a path
  its collection is temporary). ``add`` stores nodes with the
  embeddings LlamaIndex computed (nothing is encoded again); ``query`` honours
  VectorStoreQuery's similarity_top_k, filters (MetadataFilters: ==, !=, >, >=, <, <=,
  in, nin, is_empty; conditions and / or / not, nested), and mode DEFAULT (dense),
  SPARSE (BM25) or HYBRID (alpha * dense + (1 - alpha) * BM25 after min-max
  normalisation; without alpha, the package's default fusion, rag.defaults).
- ``RagcoreRetriever``: a BaseRetriever over the collection's own search (it encodes
  the query with the collection's encoder).
- ``RagcoreReranker``: a BaseNodePostprocessor around a ragcore reranker (CrossEncoder,
  LateInteractionReranker: anything with ``score(query, passages)``).

Nodes returned carry their source document's id (``ref_doc_id``): the one they were stored
with, or, for a document added to the Collection directly, that document's id; ``delete``
takes either.
"""

from __future__ import annotations

from typing import Any, List, Optional

import numpy as np
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import (
    BaseNode, MetadataMode, NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode,
)
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore, FilterCondition, FilterOperator, MetadataFilters, VectorStoreQuery,
    VectorStoreQueryMode, VectorStoreQueryResult,
)
from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict

from ..._util.arrays import check_choice, check_positive_int
from ..collection import Collection, FilterError
from ._directory import ClosesCollection, open_or_create, temporary

_RANGE = {FilterOperator.GT: "$gt", FilterOperator.GTE: "$gte", FilterOperator.LT: "$lt",
          FilterOperator.LTE: "$lte", FilterOperator.NE: "$ne", FilterOperator.IN: "$in",
          FilterOperator.NIN: "$nin"}
_NODE_CONTENT = "_node_content"  # the key under which node_to_metadata_dict stores a node
_SEARCH_OPTIONS = ("fusion", "rerank", "k0", "by")  # Collection.search's other options
_MODES = {VectorStoreQueryMode.DEFAULT: "dense", VectorStoreQueryMode.SPARSE: "sparse",
          VectorStoreQueryMode.HYBRID: "hybrid"}


def to_ragcore_filter(filters: Optional[MetadataFilters]):
    """A LlamaIndex MetadataFilters as a ragcore filter dict (None for no filter)."""
    if filters is None or not filters.filters:
        return None
    parts = []
    for f in filters.filters:
        if isinstance(f, MetadataFilters):
            parts.append(to_ragcore_filter(f) or {})
        elif f.operator == FilterOperator.EQ:
            parts.append({f.key: f.value})
        elif f.operator in _RANGE:
            parts.append({f.key: {_RANGE[f.operator]: f.value}})
        elif f.operator == FilterOperator.IS_EMPTY:
            parts.append({"$or": [{f.key: {"$exists": False}}, {f.key: None}]})
        else:
            raise ValueError(f"filters: operator {f.operator.value!r} on {f.key!r} is not "
                             "supported by ragcore's filters (==, !=, >, >=, <, <=, in, nin, "
                             "is_empty)")
    condition = filters.condition or FilterCondition.AND
    if condition == FilterCondition.OR:
        return {"$or": parts}
    joined = {"$and": parts}
    return {"$not": joined} if condition == FilterCondition.NOT else joined


class RagcoreVectorStore(ClosesCollection, BasePydanticVectorStore):
    """LlamaIndex vector store kept in a ragcore Collection (one chunk per node).

    Close it (``close()``, or ``with RagcoreVectorStore(...) as store:``) to write the index
    files and release the collection's writer lock.

    Args:
        path: the collection directory (opened if it holds one, else created). None (the
            default): a temporary collection, as SimpleVectorStore's in-memory default: its
            directory is removed when the store is closed or garbage-collected.
        collection: an open Collection (created with chunker="none") instead of path; the
            store's close() closes it.
        create_options: Collection.create options (dense, bm25, metadata_schema).
    """

    stores_text: bool = True
    is_embedding_query: bool = True
    _collection: Collection = PrivateAttr()
    _discard: Any = PrivateAttr()

    def __init__(self, path=None, collection: Collection | None = None, **create_options):
        super().__init__()
        if collection is not None and path is not None:
            raise ValueError("pass path or collection, not both")
        if "chunker" in create_options:
            raise ValueError("chunker: this store keeps each node as one chunk (LlamaIndex's "
                             "node parsers do the splitting)")
        options = {"dense": {"kind": "flat", "metric": "cosine"}, **create_options,
                   "chunker": "none"}
        if collection is not None:
            self._discard = collection.close
        elif path is not None:
            collection = open_or_create(path, _NoEncoder(), options)
            self._discard = collection.close
        else:
            collection, self._discard = temporary(self, _NoEncoder(), options,
                                                  "ragcore-llamaindex-")
        self._collection = collection

    @property
    def client(self) -> Collection:
        return self._collection

    def add(self, nodes: List[BaseNode], **add_kwargs: Any) -> List[str]:
        if not nodes:
            return []
        ids = [n.node_id for n in nodes]
        texts = [n.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]
        metadata = [node_to_metadata_dict(n, remove_text=True, flat_metadata=False) for n in nodes]
        embeddings = [n.embedding for n in nodes]
        if any(e is None for e in embeddings):
            raise ValueError("add: every node needs its embedding (LlamaIndex computes them "
                             "before calling add)")
        self._collection.upsert(texts, ids, metadata=metadata,
                                embeddings=np.asarray(embeddings, dtype=np.float32))
        return ids

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Deletes every node of the source document ref_doc_id: the nodes stored with
        that ref_doc_id, and the document of that id if it was added to the Collection
        directly (its chunks' nodes name it as their source)."""
        try:
            ids = self._collection.ids(filter={"ref_doc_id": ref_doc_id})
        except FilterError:  # no node has a ref_doc_id yet
            ids = []
        ids += [d.id for d in self._collection.get([ref_doc_id])
                if _NODE_CONTENT not in d.metadata]
        self._collection.delete(ids, missing_ok=True)

    def delete_nodes(self, node_ids: Optional[List[str]] = None, filters=None, **kwargs) -> None:
        if node_ids is None and filters is None:
            return
        ids = set(self._collection.ids(filter=to_ragcore_filter(filters))) if filters else None
        if node_ids is not None:
            ids = set(node_ids) if ids is None else ids & set(node_ids)
        self._collection.delete(sorted(ids), missing_ok=True)

    def clear(self) -> None:
        self._collection.delete(self._collection.ids(), missing_ok=True)

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        if query.mode not in _MODES:
            raise ValueError(f"query.mode {query.mode.value!r} is not supported; use DEFAULT, "
                             "SPARSE or HYBRID")
        mode = _MODES[query.mode]
        flt = to_ragcore_filter(query.filters)
        if query.doc_ids:
            flt = {"$and": [flt or {}, {"ref_doc_id": {"$in": list(query.doc_ids)}}]}
        k = query.hybrid_top_k if mode == "hybrid" and query.hybrid_top_k else query.similarity_top_k
        if len(self._collection) == 0:
            return VectorStoreQueryResult(nodes=[], similarities=[], ids=[])
        if mode != "dense" and not query.query_str:
            raise ValueError(f"query: mode {query.mode.value!r} needs query_str")
        if mode != "sparse" and query.query_embedding is None:
            raise ValueError(f"query: mode {query.mode.value!r} needs query_embedding")
        fusion = None  # the Collection's, the package's one default (rag.defaults)
        if mode == "hybrid" and query.alpha is not None:
            fusion = {"method": "wsum", "norm": "minmax",
                      "weights": [float(query.alpha), 1.0 - float(query.alpha)]}
        vector = None if query.query_embedding is None else \
            np.asarray(query.query_embedding, dtype=np.float32)
        results = self._collection.search(query.query_str or "", k=k, mode=mode, filter=flt,
                                          fusion=fusion, query_vector=vector)
        nodes = [node_of(m) for m in results]
        return VectorStoreQueryResult(nodes=nodes, similarities=[m.score for m in results],
                                      ids=[n.node_id for n in nodes])


class RagcoreRetriever(BaseRetriever):
    """LlamaIndex retriever over a Collection's search (hybrid by default).

    Args:
        collection: the ragcore Collection.
        similarity_top_k: nodes per query (default 4); fewer when fewer chunks match (a
            BM25 match needs a query term, and a filter may allow fewer).
        mode: "hybrid", "dense" or "sparse".
        filter: a ragcore metadata filter.
        search_options: more Collection.search options (fusion, rerank, k0, by).
    """

    def __init__(self, collection: Collection, similarity_top_k: int = 4, mode: str = "hybrid",
                 filter: dict | None = None, **search_options):
        unknown = sorted(set(search_options) - set(_SEARCH_OPTIONS))
        if unknown:
            raise TypeError(f"RagcoreRetriever got unknown arguments {unknown}: the number of "
                            "nodes is similarity_top_k; the search options are "
                            f"{', '.join(_SEARCH_OPTIONS)}")
        super().__init__()
        self._collection = collection
        self._k = check_positive_int(similarity_top_k, "similarity_top_k")
        self._mode = check_choice(mode, "mode", tuple(_MODES.values()))
        self._filter = filter
        self._options = search_options

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        results = self._collection.search(query_bundle.query_str, k=self._k, mode=self._mode,
                                          filter=self._filter, **self._options)
        return [NodeWithScore(node=node_of(m), score=m.score) for m in results]


def node_of(match) -> BaseNode:
    """The LlamaIndex node of a search match, its ref_doc_id the source document's id.

    A node stored through RagcoreVectorStore comes back as it was stored (its id, its
    source document). A chunk of a document added to the Collection directly becomes a
    TextNode "<document id>:<chunk position>" with its character span, whose source
    document is that ragcore document.
    """
    if _NODE_CONTENT in match.metadata:
        return metadata_dict_to_node(match.metadata, text=match.text)
    return TextNode(text=match.text, id_=f"{match.id}:{match.position}",
                    metadata=dict(match.metadata), start_char_idx=match.start,
                    end_char_idx=match.end,
                    relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=str(match.id))})


class RagcoreReranker(BaseNodePostprocessor):
    """Reorders retrieved nodes with a ragcore reranker and keeps the top_n."""

    top_n: int = 5
    _reranker: Any = PrivateAttr()

    def __init__(self, reranker, top_n: int = 5, **kwargs: Any):
        super().__init__(top_n=top_n, **kwargs)
        if not hasattr(reranker, "score"):
            raise TypeError("reranker must have score(query, passages) (a ragcore CrossEncoder "
                            "or LateInteractionReranker)")
        self._reranker = reranker

    @classmethod
    def class_name(cls) -> str:
        return "RagcoreReranker"

    def _postprocess_nodes(self, nodes: List[NodeWithScore],
                           query_bundle: Optional[QueryBundle] = None) -> List[NodeWithScore]:
        if query_bundle is None:
            raise ValueError("RagcoreReranker needs the query (query_bundle)")
        if not nodes:
            return []
        texts = [n.node.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]
        scores = np.asarray(self._reranker.score(query_bundle.query_str, texts), dtype=np.float64)
        order = sorted(range(len(nodes)), key=lambda i: (-scores[i], i))[: self.top_n]
        return [NodeWithScore(node=nodes[i].node, score=float(scores[i])) for i in order]


class _NoEncoder:
    """Nodes arrive with their embeddings and queries with theirs; nothing is encoded here."""

    def encode(self, texts):
        raise ValueError("this LlamaIndex store encodes nothing: pass nodes with embeddings "
                         "and queries with query_embedding")

    def __repr__(self) -> str:
        return "LlamaIndex embeddings"
