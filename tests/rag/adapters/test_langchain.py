"""The LangChain adapters against langchain-core from PyPI: langchain-tests' standard
VectorStore and Embeddings suites, filters, the retriever, and reopening from disk."""

from __future__ import annotations

import gc
import importlib.util
import inspect
import os

import numpy as np
import pytest

pytest.importorskip("langchain_core")
langchain_tests = pytest.importorskip("langchain_tests.integration_tests")
langchain_unit_tests = pytest.importorskip("langchain_tests.unit_tests")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings  # noqa: E402
from pydantic import ValidationError  # noqa: E402

from _collection_data import HashEncoder  # noqa: E402
from ragcore.rag.collection import Collection, CollectionError  # noqa: E402
from ragcore.rag.adapters.langchain import (  # noqa: E402
    LangChainEncoder, RagcoreEmbeddings, RagcoreRetriever, RagcoreVectorStore,
)


class TestRagcoreVectorStoreStandard(langchain_tests.VectorStoreIntegrationTests):
    @pytest.fixture()
    def vectorstore(self, tmp_path):
        with RagcoreVectorStore(self.get_embeddings(), path=tmp_path / "lc") as store:
            yield store


@pytest.fixture(scope="module")
def bundled():
    """One bundled encoder for the module's tests (loading it takes seconds)."""
    from ragcore.encoders import default_encoder

    return default_encoder()


class _SharedEncoder:
    """The standard suites build a model per test; these share one bundled encoder."""

    @pytest.fixture(autouse=True)
    def _encoder(self, bundled):
        self._bundled = bundled

    @property
    def embeddings_class(self):
        return RagcoreEmbeddings

    @property
    def embedding_model_params(self) -> dict:
        return {"encoder": self._bundled}


class TestRagcoreEmbeddingsUnit(_SharedEncoder, langchain_unit_tests.EmbeddingsUnitTests):
    pass


class TestRagcoreEmbeddingsStandard(_SharedEncoder, langchain_tests.EmbeddingsIntegrationTests):
    pass


class TestRagcoreRetrieverStandard(langchain_tests.RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _collection(self, tmp_path):
        with Collection.create(tmp_path / "r", encoder=HashEncoder(), chunker="none") as col:
            col.add([f"cats and dogs, story {i}" for i in range(6)])
            self._col = col
            yield

    @property
    def retriever_constructor(self):
        return RagcoreRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"collection": self._col}

    @property
    def retriever_query_example(self) -> str:
        return "cats"


# The suites' async tests are bare coroutines (its own repository runs pytest-asyncio in auto
# mode); this repository's pytest runs it in strict mode, so they are marked here, in place
# (the suite refuses overridden tests), or skipped where pytest-asyncio is absent.
_ASYNC_MARK = (pytest.mark.asyncio if importlib.util.find_spec("pytest_asyncio") else
               pytest.mark.skip(reason="pytest-asyncio is not installed"))
_SUITES = (langchain_tests.VectorStoreIntegrationTests, langchain_tests.EmbeddingsIntegrationTests,
           langchain_tests.RetrieversIntegrationTests)
for _suite in _SUITES:
    for _name, _test in inspect.getmembers(_suite, inspect.iscoroutinefunction):
        if _name.startswith("test_") and not any(m.name in ("asyncio", "skip") for m in
                                                 getattr(_test, "pytestmark", [])):
            _ASYNC_MARK(_test)


@pytest.fixture
def store(tmp_path):
    s = RagcoreVectorStore.from_texts(
        ["the cat sat on the mat", "dogs chase cats", "a bird in the hand", "cats sleep a lot"],
        DeterministicFakeEmbedding(size=16),
        metadatas=[{"year": 2001, "kind": "a"}, {"year": 2010, "kind": "b"},
                   {"year": 2020, "kind": "a"}, {"year": 2022, "kind": "b"}],
        ids=["1", "2", "3", "4"], path=tmp_path / "s")
    yield s
    s.close()


def test_filter_and_scores(store):
    got = store.similarity_search_with_score("dogs chase cats", k=4, filter={"kind": "b"})
    assert [d.id for d, _ in got][0] == "2" and {d.id for d, _ in got} == {"2", "4"}
    assert got[0][1] == pytest.approx(1.0, abs=1e-5)  # cosine with itself
    by_vector = store.similarity_search_by_vector(
        DeterministicFakeEmbedding(size=16).embed_query("a bird in the hand"), k=1,
        filter={"year": {"$gte": 2015}})
    assert by_vector == [Document(page_content="a bird in the hand",
                                  metadata={"year": 2020, "kind": "a"}, id="3")]
    relevance = store.similarity_search_with_relevance_scores("dogs chase cats", k=1)
    assert relevance[0][1] == pytest.approx(1.0, abs=1e-5)


def test_retrievers(store):
    hybrid = RagcoreRetriever(collection=store.collection, k=2, filter={"year": {"$lt": 2021}})
    docs = hybrid.invoke("cats")
    assert len(docs) == 2 and all(d.metadata["year"] < 2021 for d in docs)
    assert all("score" in d.metadata and "start" in d.metadata for d in docs)
    sparse = RagcoreRetriever(collection=store.collection, k=1, mode="sparse")
    assert sparse.invoke("bird hand")[0].id == "3"
    as_retriever = store.as_retriever(search_kwargs={"k": 1, "filter": {"kind": "a"}})
    assert as_retriever.invoke("the cat sat on the mat")[0].id == "1"


def test_reopen_from_disk(tmp_path):
    emb = DeterministicFakeEmbedding(size=8)
    store = RagcoreVectorStore(emb, path=tmp_path / "p")
    store.add_texts(["alpha", "beta"], ids=["a", "b"])
    store.collection.close()
    again = RagcoreVectorStore(emb, path=tmp_path / "p")
    assert [d.page_content for d in again.get_by_ids(["b", "a"])] == ["beta", "alpha"]
    again.delete()
    assert len(again.collection) == 0
    again.collection.close()


def test_embeddings_default_to_the_collections_bundled_model(bundled, tmp_path):
    emb = RagcoreEmbeddings()
    texts = ["Paris is the capital of France.", "Bananas are yellow."]
    vectors = emb.embed_documents(texts)
    assert np.allclose(vectors, bundled.encode(texts), atol=1e-6)
    assert np.allclose(emb.embed_query(texts[0]), vectors[0], atol=1e-6)
    assert emb.embed_documents([]) == []
    with Collection.create(tmp_path / "c", chunker="none") as col:  # no encoder: the bundled one
        col.add(texts, ids=["p", "b"])
        hit = col.search_by_vector(np.float32(emb.embed_query("French capital")), k=1)
        assert hit[0].id == "p" and hit[0].score == pytest.approx(
            col.search("French capital", k=1, mode="dense")[0].score, abs=1e-5)


def test_a_store_with_another_embeddings_model_is_refused_until_reembedded(tmp_path):
    with RagcoreVectorStore(DeterministicFakeEmbedding(size=8), path=tmp_path / "p") as store:
        store.add_texts(["alpha", "beta"], ids=["a", "b"])
    with pytest.raises(CollectionError, match=r"encoder is DeterministicFakeEmbedding \(16-d\)"
                                              r".*made by DeterministicFakeEmbedding \(8-d\)"):
        RagcoreVectorStore(DeterministicFakeEmbedding(size=16), path=tmp_path / "p")
    with pytest.raises(CollectionError, match="TableEmbeddings.*made by DeterministicFake"):
        RagcoreVectorStore(TableEmbeddings(), path=tmp_path / "p")
    with Collection.open(tmp_path / "p") as col:
        with pytest.raises(CollectionError, match="embedding is DeterministicFakeEmbedding"):
            RagcoreVectorStore(DeterministicFakeEmbedding(size=16), collection=col)
        col.reembed(LangChainEncoder(DeterministicFakeEmbedding(size=16)))
    with RagcoreVectorStore(DeterministicFakeEmbedding(size=16), path=tmp_path / "p") as store:
        assert store.similarity_search("beta", k=1)[0].id == "b"


def test_a_store_over_the_bundled_model_opens_a_collection_it_made(bundled, tmp_path):
    with Collection.create(tmp_path / "c", encoder=bundled, chunker="none") as col:
        col.add(["Paris is the capital of France."], ids=["p"])
    with RagcoreVectorStore(RagcoreEmbeddings(bundled), path=tmp_path / "c") as store:
        assert store.similarity_search("French capital", k=1)[0].id == "p"
        assert len(store.collection._fingerprint["checksum"]) == 64  # the model file's sha256
    with pytest.raises(CollectionError, match="embedding is DeterministicFakeEmbedding .*"
                                              "made by .*model.onnx"):
        with Collection.open(tmp_path / "c") as col:
            RagcoreVectorStore(DeterministicFakeEmbedding(size=384), collection=col)


def test_embeddings_arguments(bundled):
    with pytest.raises(TypeError, match="texts must be a list of str"):
        RagcoreEmbeddings(bundled).embed_documents("one text")
    with pytest.raises(TypeError, match="text must be a str"):
        RagcoreEmbeddings(bundled).embed_query(["a list"])
    with pytest.raises(ValueError, match="precision"):
        RagcoreEmbeddings(bundled, precision="int8")
    with pytest.raises(TypeError, match="encoder must have encode"):
        RagcoreEmbeddings(encoder="all-MiniLM-L6-v2")


def test_close_and_with(tmp_path):
    emb = DeterministicFakeEmbedding(size=8)
    with RagcoreVectorStore(emb, path=tmp_path / "w") as store:
        store.add_texts(["alpha", "beta"], ids=["a", "b"])
    with pytest.raises(CollectionError, match="closed"):
        store.similarity_search("alpha")
    store.close()  # closing again does nothing
    with Collection.open(tmp_path / "w") as col:  # the writer lock was released
        assert col.ids() == ["a", "b"]


def test_from_texts_without_path_leaves_no_directory(tmp_path):
    emb = DeterministicFakeEmbedding(size=8)
    store = RagcoreVectorStore.from_texts(["alpha", "beta"], emb)
    directory = store.collection.path
    assert store.similarity_search("alpha", k=1)[0].page_content == "alpha"
    store.close()
    assert not os.path.exists(directory)
    dropped = RagcoreVectorStore.from_texts(["gamma"], emb).collection.path
    gc.collect()  # the store was never closed: its finalizer removes the directory
    assert not os.path.exists(dropped)
    with pytest.raises(ValueError, match="metadatas"):
        RagcoreVectorStore.from_texts(["a"], emb, metadatas=[{}, {}], path=tmp_path / "bad")
    Collection.open(tmp_path / "bad").close()  # the failed from_texts released the writer lock


def test_path_and_collection_are_exclusive(store, tmp_path):
    with pytest.raises(ValueError, match="path or collection"):
        RagcoreVectorStore(DeterministicFakeEmbedding(size=16), path=tmp_path / "x",
                           collection=store.collection)


@pytest.mark.parametrize("mode", ["hybrid", "dense", "sparse"])
def test_retriever_returns_the_k_asked_for(store, mode):
    for n in (1, 3):
        top_k = RagcoreRetriever(collection=store.collection, top_k=n, mode=mode)
        assert len(top_k.invoke("cats bird")) == n  # three documents hold a term
        assert len(top_k.invoke("cats bird", k=2)) == 2
    searched = store.as_retriever(search_kwargs={"k": 3}).invoke("cats")
    assert len(searched) == 3


def test_retriever_arguments(store):
    col = store.collection
    with pytest.raises(ValidationError, match="top_kk"):
        RagcoreRetriever(collection=col, top_kk=1)
    for bad in (0, True, "3"):
        with pytest.raises(ValidationError, match="k"):
            RagcoreRetriever(collection=col, k=bad)
    with pytest.raises(ValidationError, match="mode"):
        RagcoreRetriever(collection=col, mode="bm25")
    with pytest.raises(ValueError, match="k or top_k"):
        RagcoreRetriever(collection=col).invoke("cats", k=1, top_k=2)
    with pytest.raises(ValidationError, match="search_options: unknown"):
        RagcoreRetriever(collection=col, search_options={"k": 2})
    by_document = RagcoreRetriever(collection=col, k=4, mode="dense",
                                   search_options={"by": "document"})
    assert len({d.id for d in by_document.invoke("cats")}) == 4


class TableEmbeddings(Embeddings):
    """Fixed vectors: two near-duplicates closest to the query, a different one next."""

    VECTORS = {"query": [1.0, 0.0, 0.0], "dup one": [0.95, 0.31, 0.0],
               "dup two": [0.95, 0.32, 0.02], "other": [0.8, -0.6, 0.0], "far": [0.0, 0.0, 1.0]}

    def embed_documents(self, texts):
        return [self.VECTORS[t] for t in texts]

    def embed_query(self, text):
        return self.VECTORS[text]


@pytest.fixture
def table_store():
    texts = ["dup one", "dup two", "other", "far"]
    with RagcoreVectorStore.from_texts(texts, TableEmbeddings(), ids=texts,
                                       metadatas=[{"n": i} for i in range(4)]) as s:
        yield s


def test_mmr_prefers_a_diverse_second_document(table_store):
    def ids(docs):
        return [d.id for d in docs]

    assert ids(table_store.similarity_search("query", k=2)) == ["dup one", "dup two"]
    assert ids(table_store.max_marginal_relevance_search("query", k=2)) == ["dup one", "other"]
    assert ids(table_store.max_marginal_relevance_search("query", k=2, lambda_mult=1.0)) == \
        ["dup one", "dup two"]
    assert ids(table_store.max_marginal_relevance_search("query", k=2, fetch_k=2)) == \
        ["dup one", "dup two"]  # "other" is not among the 2 candidates
    filtered = table_store.max_marginal_relevance_search_by_vector(
        [1.0, 0.0, 0.0], k=2, filter={"n": {"$ne": 0}})
    assert ids(filtered) == ["dup two", "other"]
    retriever = table_store.as_retriever(search_type="mmr", search_kwargs={"k": 3})
    assert ids(retriever.invoke("query")) == ["dup one", "other", "far"]


def test_mmr_arguments(table_store):
    with pytest.raises(ValueError, match="fetch_k"):
        table_store.max_marginal_relevance_search("query", k=5, fetch_k=3)
    with pytest.raises(ValueError, match="lambda_mult"):
        table_store.max_marginal_relevance_search("query", lambda_mult=1.5)
    with pytest.raises(TypeError, match="lambda"):
        table_store.max_marginal_relevance_search("query", lambda_=0.2)
    with pytest.raises(TypeError, match="k must be an integer"):
        table_store.max_marginal_relevance_search("query", k=2.0)
