"""Sentence-aware chunking that counts tokens of the encoder's tokenizer.

Chunks keep their document id and character offsets into the source text, so
evidence labelled as character spans stays valid whatever the chunking.

- Whole sentences are packed into a chunk while it holds at most chunk_size
  tokens; a chunk never cuts a sentence, unless that sentence alone is longer
  than chunk_size: it is then cut into windows of chunk_size tokens that step
  by chunk_size - overlap, so a stream of L tokens gives
  ceil((L - C) / (C - O)) + 1 chunks (L > C).
- Consecutive chunks share up to `overlap` tokens of whole sentences.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from .._util.arrays import check_positive_int

# A sentence ends at . ! or ? followed by white space, or at a blank line.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")


@dataclass(frozen=True)
class Chunk:
    """A piece of a document: text == source[start:end]."""

    doc_id: object
    start: int
    end: int
    text: str
    n_tokens: int
    metadata: dict = field(default_factory=dict)

    @property
    def span(self) -> tuple:
        """(doc_id, start, end): the form evidence spans are compared in."""
        return (self.doc_id, self.start, self.end)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of text (white space between them excluded)."""
    spans, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        if match.start() > start:
            spans.append((start, match.start()))
        start = match.end()
    if start < len(text) and text[start:].strip():
        spans.append((start, len(text.rstrip())))
    return spans


@functools.lru_cache(maxsize=1)
def _default_tokenizer():
    # Read once per process: the bundled file does not change, parsing it takes tens of
    # milliseconds (each Chunker() and each open collection that adds paid it), and a
    # TextTokenizer may be shared (it changes its truncation only under its lock).
    from ..encoders import TextTokenizer
    from ..encoders.models import DEFAULT_NAME, resolve

    spec = resolve(DEFAULT_NAME)
    return TextTokenizer(spec.tokenizer_path, spec.max_length)


class Chunker:
    """Splits documents into chunks of at most chunk_size tokens.

    Args:
        tokenizer: a BiEncoder (its tokenizer and max_length are used), a
            ragcore TextTokenizer, or None for the bundled encoder's tokenizer.
        chunk_size: tokens per chunk, without the model's special tokens. It is
            refused when the encoder could not see a whole chunk (above its
            max_length minus its special tokens): silent truncation at encoding
            time is what this prevents.
        overlap: tokens of whole sentences repeated from the previous chunk.
    """

    def __init__(self, tokenizer=None, chunk_size: int = 200, overlap: int = 40):
        tokenizer = tokenizer if tokenizer is not None else _default_tokenizer()
        self.tokenizer = getattr(tokenizer, "tokenizer", tokenizer)  # a BiEncoder's
        self.chunk_size = check_positive_int(chunk_size, "chunk_size")
        if isinstance(overlap, bool) or not isinstance(overlap, int) or not 0 <= overlap < chunk_size:
            raise ValueError(f"overlap must be an integer with 0 <= overlap < chunk_size={chunk_size}, "
                             f"got {overlap!r}")
        self.overlap = overlap
        limit = self.tokenizer.max_length - self.tokenizer.special_tokens
        if chunk_size > limit:
            raise ValueError(
                f"chunk_size={chunk_size} tokens exceeds what the encoder sees: max_length "
                f"{self.tokenizer.max_length} minus {self.tokenizer.special_tokens} special tokens "
                f"= {limit}; longer chunks would be cut silently when encoded")

    def chunk(self, text: str, doc_id=None, metadata: dict | None = None) -> list[Chunk]:
        """The chunks of one document, in order."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return self._chunk(text, self.tokenizer.token_spans(text), doc_id, metadata)

    def _chunk(self, text: str, tokens, doc_id, metadata) -> list[Chunk]:
        sentences = self._sentences_as_token_ranges(text, tokens)
        meta = dict(metadata or {})
        out = []
        for first, last in self._windows(sentences):  # token index ranges [first, last)
            start, end = tokens[first][0], tokens[last - 1][1]
            out.append(Chunk(doc_id, start, end, text[start:end], last - first, meta))
        return out

    def chunk_documents(self, documents) -> list[Chunk]:
        """Chunks of (doc_id, text) or (doc_id, text, metadata) tuples, in order."""
        items = [tuple(item) for item in documents]
        for doc_id, text, *_ in items:
            if not isinstance(text, str):
                raise TypeError(f"text of document {doc_id!r} must be a str, got {type(text).__name__}")
        # every document tokenized in one call: the build's chunking ran one call per document
        texts = [item[1] for item in items]
        batched = getattr(self.tokenizer, "token_spans_of", None)
        spans = batched(texts) if batched and texts else [self.tokenizer.token_spans(t) for t in texts]
        out = []
        for (doc_id, text, *rest), tokens in zip(items, spans):
            out += self._chunk(text, tokens, doc_id, rest[0] if rest else None)
        return out

    @staticmethod
    def _sentences_as_token_ranges(text, tokens) -> list[tuple[int, int]]:
        """Each sentence as the range of token indices [first, last) inside it."""
        ranges, t = [], 0
        for _, end in sentence_spans(text):
            first = t
            while t < len(tokens) and tokens[t][0] < end:
                t += 1
            if t > first:
                ranges.append((first, t))
        if t < len(tokens):  # tokens after the last sentence end (none in practice)
            ranges.append((t, len(tokens)))
        return ranges

    def _windows(self, sentences):
        """Token ranges of the chunks: whole sentences packed greedily; a long sentence
        cut into overlapping windows."""
        size, step = self.chunk_size, self.chunk_size - self.overlap
        i, emitted = 0, -1  # emitted: the last sentence already in a chunk
        while i < len(sentences):
            first, last = sentences[i]
            if last - first > size:  # one sentence longer than a chunk: a plain token stream
                start = first
                while True:
                    yield start, min(start + size, last)
                    if start + size >= last:
                        break
                    start += step
                emitted = i
                i += 1
                continue
            j = i
            while j + 1 < len(sentences) and sentences[j + 1][1] - first <= size:
                j += 1
            if j <= emitted:  # only overlap would fit before a long sentence: skip it
                i = emitted + 1
                continue
            yield first, sentences[j][1]
            emitted = j
            if j + 1 >= len(sentences):
                return
            i = self._next_start(sentences, i, j)

    def _next_start(self, sentences, i: int, j: int) -> int:
        """First sentence of the next chunk: back from j while the shared sentences
        hold at most `overlap` tokens, always moving forward."""
        k = j + 1
        while k - 1 > i and sentences[j][1] - sentences[k - 1][0] <= self.overlap:
            k -= 1
        return k
