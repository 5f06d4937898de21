"""Chunking: offsets point at the right text, sentences stay whole, the window
formula for a plain token stream, overlap, and the max_length guard."""

from __future__ import annotations

import math

import pytest

from ragcore.rag.chunking import Chunker, sentence_spans

pytest.importorskip("tokenizers")


@pytest.fixture(scope="module")
def tokenizer():
    from ragcore.encoders._text import TextTokenizer
    from ragcore.encoders.models import INT8_NAME, resolve

    return TextTokenizer(resolve(INT8_NAME).tokenizer_path, 256)


TEXT = ("Python's json module parses JSON. It also writes JSON! Does it handle NaN? "
        "By default it does.\n\nA new paragraph starts here without punctuation\n\n"
        "Ünïcödé text, emoji 🚀 and more words follow in this sentence.")


def test_offsets_point_at_the_text(tokenizer):
    chunks = Chunker(tokenizer, chunk_size=12, overlap=4).chunk(TEXT, "doc", {"source": "json"})
    assert len(chunks) > 2
    for c in chunks:
        assert c.text == TEXT[c.start:c.end]
        assert c.doc_id == "doc" and c.metadata == {"source": "json"}
        assert c.n_tokens == tokenizer.count(c.text) <= 12
    assert chunks[0].start == 0 and chunks[-1].end == len(TEXT.rstrip())


def test_sentences_are_not_cut(tokenizer):
    sentences = [TEXT[a:b] for a, b in sentence_spans(TEXT)]
    for c in Chunker(tokenizer, chunk_size=30, overlap=8).chunk(TEXT, "doc"):
        inside = [s for s in sentences if s in c.text]
        assert "".join(inside).replace(" ", "").replace("\n", "") == \
            c.text.replace(" ", "").replace("\n", ""), c.text


@pytest.mark.parametrize("length, size, overlap", [(100, 20, 5), (21, 20, 0), (57, 10, 9), (20, 20, 3),
                                                   (7, 20, 3)])
def test_plain_token_stream_window_count(tokenizer, length, size, overlap):
    text = " ".join(["word"] * length)  # no sentence boundary: one long token stream
    chunks = Chunker(tokenizer, chunk_size=size, overlap=overlap).chunk(text, 0)
    want = 1 if length <= size else math.ceil((length - size) / (size - overlap)) + 1
    assert len(chunks) == want
    assert all(c.n_tokens <= size for c in chunks) and chunks[-1].end == len(text)
    for a, b in zip(chunks, chunks[1:]):  # consecutive windows share exactly `overlap` tokens
        shared = text[b.start:a.end] if b.start < a.end else ""
        assert tokenizer.count(shared) == overlap


def test_consecutive_chunks_share_whole_sentences_within_overlap(tokenizer):
    text = " ".join(f"Sentence number {i} is here." for i in range(30))
    chunks = Chunker(tokenizer, chunk_size=25, overlap=8).chunk(text, 0)
    for a, b in zip(chunks, chunks[1:]):
        assert b.start > a.start
        if b.start < a.end:
            assert tokenizer.count(text[b.start:a.end]) <= 8


def test_chunk_size_above_the_encoder_limit_is_refused(tokenizer):
    with pytest.raises(ValueError, match="exceeds what the encoder sees"):
        Chunker(tokenizer, chunk_size=255)
    Chunker(tokenizer, chunk_size=254)  # 256 minus [CLS] and [SEP]
    with pytest.raises(ValueError, match="overlap"):
        Chunker(tokenizer, chunk_size=10, overlap=10)
    with pytest.raises(TypeError, match="text must be a str"):
        Chunker(tokenizer).chunk(None, 0)


def test_chunk_documents_and_empty_text(tokenizer):
    chunker = Chunker(tokenizer, chunk_size=50, overlap=0)
    chunks = chunker.chunk_documents([("a", "One sentence here."), ("b", "Two. Sentences.", {"k": 1})])
    assert [c.doc_id for c in chunks] == ["a", "b"] and chunks[1].metadata == {"k": 1}
    assert chunker.chunk("   ", "empty") == []
