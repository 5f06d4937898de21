"""The LlamaIndex adapters against llama-index-core from PyPI: the vector store under a
VectorStoreIndex, every query mode, MetadataFilters, deletes by document; the retriever and
the reranking postprocessor with the bundled encoder."""

from __future__ import annotations

import gc
import os

import numpy as np
import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import StorageContext, VectorStoreIndex  # noqa: E402
from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from llama_index.core.schema import Document, QueryBundle, TextNode  # noqa: E402
from llama_index.core.vector_stores.types import (  # noqa: E402
    FilterCondition, FilterOperator, MetadataFilter, MetadataFilters, VectorStoreQuery,
    VectorStoreQueryMode,
)

from _collection_data import HashEncoder  # noqa: E402
from ragcore.rag.collection import Collection  # noqa: E402
from ragcore.rag.adapters.llamaindex import (  # noqa: E402
    RagcoreReranker, RagcoreRetriever, RagcoreVectorStore, to_ragcore_filter,
)

TEXTS = ["alpha beta gamma", "beta gamma delta", "delta epsilon zeta", "eta theta alpha",
         "gamma gamma gamma", "iota kappa lambda"]


class HashEmbedding(BaseEmbedding):
    """LlamaIndex embedding model over the tests' HashEncoder."""

    def _vector(self, text):
        return HashEncoder().encode([text])[0].tolist()

    def _get_query_embedding(self, query):
        return self._vector(query)

    def _get_text_embedding(self, text):
        return self._vector(text)

    async def _aget_query_embedding(self, query):
        return self._vector(query)


@pytest.fixture
def store(tmp_path):
    s = RagcoreVectorStore(path=tmp_path / "li")
    nodes = [TextNode(text=t, id_=f"n{i}", metadata={"year": 2000 + i, "kind": "ab"[i % 2]},
                      embedding=HashEncoder().encode([t])[0].tolist()) for i, t in enumerate(TEXTS)]
    for i, n in enumerate(nodes):
        n.relationships = {}
        n.metadata["doc"] = f"d{i // 2}"
    s.add(nodes)
    yield s
    s.client.close()


def query(text, **kw):
    return VectorStoreQuery(query_embedding=HashEncoder().encode([text])[0].tolist(),
                            query_str=text, **kw)


def test_modes_and_top_k(store):
    dense = store.query(query("alpha beta gamma", similarity_top_k=3))
    assert dense.ids[0] == "n0" and len(dense.ids) == 3
    assert dense.similarities[0] == pytest.approx(1.0, abs=1e-5)
    assert dense.nodes[0].get_content() == "alpha beta gamma"
    assert dense.nodes[0].metadata["year"] == 2000
    sparse = store.query(query("zeta", similarity_top_k=1, mode=VectorStoreQueryMode.SPARSE))
    assert sparse.ids == ["n2"]
    hybrid = store.query(query("gamma", similarity_top_k=2, mode=VectorStoreQueryMode.HYBRID,
                               alpha=0.0))  # alpha 0: BM25 alone decides
    assert hybrid.ids[0] == "n4"
    rrf = store.query(query("gamma", similarity_top_k=6, mode=VectorStoreQueryMode.HYBRID))
    assert set(rrf.ids) == {f"n{i}" for i in range(6)}


def test_metadata_filters(store):
    f = MetadataFilters(filters=[MetadataFilter(key="year", value=2002, operator=FilterOperator.GTE),
                                 MetadataFilter(key="kind", value="a")])
    got = store.query(query("alpha", similarity_top_k=6, filters=f))
    assert sorted(got.ids) == ["n2", "n4"]
    either = MetadataFilters(filters=[MetadataFilter(key="year", value=[2000, 2005],
                                                     operator=FilterOperator.IN),
                                      MetadataFilters(filters=[MetadataFilter(key="kind", value="b")],
                                                      condition=FilterCondition.NOT)],
                             condition=FilterCondition.OR)
    assert sorted(store.query(query("alpha", similarity_top_k=6, filters=either)).ids) == \
        ["n0", "n2", "n4", "n5"]
    with pytest.raises(ValueError, match="text_match"):
        to_ragcore_filter(MetadataFilters(filters=[
            MetadataFilter(key="kind", value="a", operator=FilterOperator.TEXT_MATCH)]))


def test_delete_by_document_and_nodes(tmp_path):
    store = RagcoreVectorStore(path=tmp_path / "v")
    index = VectorStoreIndex.from_documents(
        [Document(text=t, id_=f"doc{i}") for i, t in enumerate(TEXTS)],
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=HashEmbedding())
    retriever = index.as_retriever(similarity_top_k=2)
    assert retriever.retrieve("delta epsilon zeta")[0].node.get_content() == "delta epsilon zeta"
    store.delete("doc2")
    assert all(n.node.get_content() != "delta epsilon zeta"
               for n in index.as_retriever(similarity_top_k=6).retrieve("delta epsilon zeta"))
    assert len(store.client) == 5
    store.clear()
    assert len(store.client) == 0
    store.client.close()


def test_retriever_and_reranker_with_the_bundled_encoder(tmp_path):
    from ragcore import LateInteractionReranker
    from ragcore.rag.collection import Collection

    passages = ["The capital of France is Paris.", "Bananas are yellow fruit.",
                "Paris hosts the Louvre museum.", "The stock market fell today."]
    with Collection.create(tmp_path / "c", chunker="none") as col:
        col.add(passages, ids=list(range(4)), metadata=[{"topic": t} for t in "abac"])
        nodes = RagcoreRetriever(col, similarity_top_k=3).retrieve("museums in Paris")
        assert len(nodes) == 3 and {n.node.text for n in nodes[:2]} == {passages[0], passages[2]}
        filtered = RagcoreRetriever(col, similarity_top_k=3, filter={"topic": "a"},
                                    mode="dense").retrieve("fruit")
        assert {n.node.text for n in filtered} == {passages[0], passages[2]}
        reranker = LateInteractionReranker()
        post = RagcoreReranker(reranker, top_n=2)
        out = post.postprocess_nodes(nodes, QueryBundle("Which museum is in Paris?"))
        want = reranker.score("Which museum is in Paris?", [n.node.text for n in nodes])
        assert len(out) == 2 and out[0].score == pytest.approx(float(np.max(want)), abs=1e-6)
        assert out[0].node.text == passages[2]


def test_nodes_carry_their_source_document(tmp_path):
    store = RagcoreVectorStore(path=tmp_path / "v")
    index = VectorStoreIndex.from_documents(
        [Document(text=t, id_=f"doc{i}") for i, t in enumerate(TEXTS)],
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=HashEmbedding())
    stored = {n.node.node_id: n.node.ref_doc_id for n in
              index.as_retriever(similarity_top_k=6).retrieve("alpha gamma")}
    assert sorted(stored.values()) == [f"doc{i}" for i in range(6)]
    found = RagcoreRetriever(store.client, similarity_top_k=6, mode="sparse").retrieve("alpha")
    assert {n.node.node_id: n.node.ref_doc_id for n in found} == \
        {k: v for k, v in stored.items() if v in ("doc0", "doc3")}
    index.delete_ref_doc("doc0")
    assert [n.node.ref_doc_id for n in
            RagcoreRetriever(store.client, mode="sparse").retrieve("alpha")] == ["doc3"]
    store.client.close()


def test_chunks_of_a_plain_collection_name_their_document(tmp_path):
    long_text = " ".join(f"word{i}" for i in range(400))
    with Collection.create(tmp_path / "c", encoder=HashEncoder()) as col:  # chunks of 200 tokens
        col.add([long_text, "alpha beta"], ids=["long", "short"])
        nodes = RagcoreRetriever(col, similarity_top_k=3, mode="sparse").retrieve("word5 word390")
        assert {n.node.ref_doc_id for n in nodes} == {"long"} and len(nodes) == 2
        assert nodes[0].node.node_id != nodes[1].node.node_id
        node = nodes[0].node
        assert node.get_content() == long_text[node.start_char_idx:node.end_char_idx]
        dense = RagcoreVectorStore(collection=col).query(
            query("alpha beta", similarity_top_k=1))
        assert dense.nodes[0].ref_doc_id == "short" and dense.ids == ["short:0"]
        RagcoreVectorStore(collection=col).delete("long")
        assert col.ids() == ["short"]


def test_close_with_and_temporary_directory(tmp_path):
    with RagcoreVectorStore(path=tmp_path / "w") as store:
        store.add([TextNode(text="alpha", id_="a", embedding=[1.0, 0.0])])
    store.close()  # closing again does nothing
    with Collection.open(tmp_path / "w") as col:  # the writer lock was released
        assert col.ids() == ["a"]
    temporary = RagcoreVectorStore()
    directory = temporary.client.path
    temporary.close()
    assert not os.path.exists(directory)
    dropped = RagcoreVectorStore().client.path
    gc.collect()  # never closed: the finalizer removes the directory
    assert not os.path.exists(dropped)
    with pytest.raises(ValueError, match="chunker"):
        RagcoreVectorStore(path=tmp_path / "x", chunker=None)


def test_retriever_arguments(store):
    col = store.client
    assert len(RagcoreRetriever(col, similarity_top_k=2, mode="sparse").retrieve("gamma")) == 2
    with pytest.raises(TypeError, match="top_k.*similarity_top_k"):
        RagcoreRetriever(col, top_k=2)
    with pytest.raises(ValueError, match="similarity_top_k"):
        RagcoreRetriever(col, similarity_top_k=0)
    with pytest.raises(ValueError, match="mode"):
        RagcoreRetriever(col, mode="bm25")
