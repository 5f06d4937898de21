"""The demo build's encoding path: one encode call over the corpus with a progress
callback gives the bits of the old path (256 texts per call), the callback sees the
running count in order, and chunking every document in one tokenizer call gives the
chunks of one call per document."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from ragcore.encoders import BiEncoder, models  # noqa: E402
from ragcore.encoders.build import derived  # noqa: E402
from ragcore.encoders._parallel import map_in_order  # noqa: E402
from ragcore.rag.chunking import Chunker  # noqa: E402


@pytest.fixture(scope="module")
def fp32_encoders(tmp_path_factory):
    """(one-thread, two-thread) encoders of the fused fp32 graph, derived into a fresh cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAGCORE_CACHE", str(tmp_path_factory.mktemp("build_cache")))
        path = derived.ensure(models.FUSED_NAME)
    return (BiEncoder(path, providers="cpu", threads=1), BiEncoder(path, providers="cpu", threads=2))


@pytest.fixture(scope="module")
def corpus():
    """Chunks of 100 real documents as the demo makes them (stdlib_docs, Chunker(200, 40))."""
    from ragcore.cli.datasets import stdlib_docs

    data = stdlib_docs(max_docs=100, seed=0)
    return data, [c.text for c in Chunker(None, 200, 40).chunk_documents(
        (d.doc_id, t) for d, t in zip(data.documents, data.texts()))]


def test_one_call_gives_the_bits_of_calls_by_slices(fp32_encoders, corpus):
    """The old build cut the corpus into calls of 256 texts; slices of 32 here (a
    smaller corpus, the same claim: the grouping of texts does not change a bit)."""
    from ragcore.cli.embedding_cache import EmbeddingCache

    texts = corpus[1]
    assert len(texts) > 64  # the old path really made several calls
    for encoder in fp32_encoders:
        before = np.concatenate([encoder.encode(texts[i:i + 32], warn=False)
                                 for i in range(0, len(texts), 32)])
        seen = []
        now = encoder.encode(texts, warn=False, progress=seen.append)
        np.testing.assert_array_equal(now, before)
        assert seen == sorted(seen) and seen[-1] == len(texts) and len(seen) > 1
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        cached = EmbeddingCache(fp32_encoders[1], directory, show_progress=False).encode(texts)
    np.testing.assert_array_equal(cached, before)


@settings(max_examples=10, deadline=None)
@given(picks=st.lists(st.integers(0, 100), min_size=1, max_size=40), workers=st.integers(1, 3))
def test_progress_counts_every_text_once_in_order(fp32_encoders, corpus, picks, workers):
    texts = [corpus[1][i % len(corpus[1])] for i in picks]
    encoder = fp32_encoders[workers > 1]
    seen = []
    out = encoder.encode(texts, warn=False, progress=seen.append)
    np.testing.assert_array_equal(out, encoder.encode(texts, warn=False))
    assert seen == sorted(seen) and seen[-1] == len(texts) and seen[0] > 0


@given(items=st.lists(st.integers(-50, 50), max_size=30), workers=st.integers(1, 4))
def test_on_result_is_called_in_order_on_the_calling_thread(items, workers):
    calls, caller = [], threading.get_ident()

    def record(item, result):
        assert threading.get_ident() == caller
        calls.append((item, result))

    results = map_in_order(lambda x: x * 3, items, workers, record)
    assert results == [x * 3 for x in items] and calls == list(zip(items, results))


def test_chunk_documents_equals_one_document_at_a_time(corpus):
    data, _ = corpus
    chunker = Chunker(None, 120, 30)
    docs = [(d.doc_id, t, {"i": i}) for i, (d, t) in enumerate(zip(data.documents, data.texts()))]
    one_by_one = [c for doc_id, text, meta in docs for c in chunker.chunk(text, doc_id, meta)]
    assert chunker.chunk_documents(docs) == one_by_one and len(one_by_one) > len(docs)


def test_chunk_documents_names_a_text_that_is_not_a_str():
    with pytest.raises(TypeError, match="document 'b'"):
        Chunker(None, 50, 10).chunk_documents([("a", "fine text."), ("b", 3)])
