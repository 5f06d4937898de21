"""Text input checks and HuggingFace `tokenizers` batches for the ONNX encoders."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np


def check_texts(texts, name: str = "texts") -> list[str]:
    """texts as a list of non-empty strings, or a clear error naming the bad item."""
    if isinstance(texts, str):
        raise TypeError(f"{name} must be a list of strings, got one str; wrap it in a list")
    try:
        items = list(texts)
    except TypeError:
        raise TypeError(f"{name} must be a list of strings, got {type(texts).__name__}") from None
    for i, text in enumerate(items):
        if not isinstance(text, str):
            raise TypeError(f"{name}[{i}] must be a str, got {type(text).__name__}")
        if not text.strip():
            raise ValueError(f"{name}[{i}] is empty or only whitespace; there is nothing to encode")
    return items


def ranked(scores: np.ndarray, top_k) -> list[tuple[int, float]]:
    """(index, score) pairs, best first; equal scores by index ascending."""
    from .._util.arrays import check_positive_int

    order = np.lexsort((np.arange(len(scores)), -np.asarray(scores, dtype=np.float64)))
    if top_k is not None:
        order = order[: check_positive_int(top_k, "top_k")]
    return [(int(i), float(scores[i])) for i in order]


@dataclass
class TokenBatch:
    """Padded model inputs for a batch, and how many of its texts were cut."""

    input_ids: np.ndarray       # int64 [batch, length]
    attention_mask: np.ndarray  # int64 [batch, length]
    token_type_ids: np.ndarray  # int64 [batch, length]
    truncated: np.ndarray       # bool [batch]

    def rows(self, start: int, stop: int) -> "TokenBatch":
        """Texts start..stop-1 of the batch, still padded to the batch's width."""
        return TokenBatch(*(getattr(self, name)[start:stop] for name in
                            ("input_ids", "attention_mask", "token_type_ids", "truncated")))


class TextTokenizer:
    """A tokenizer.json with padding off and truncation at max_length.

    Bundled tokenizer files may fix padding and truncation (all-MiniLM-L6-v2's pads
    and cuts at 128); both are reset here so that only max_length applies.
    """

    def __init__(self, path, max_length: int):
        from tokenizers import Tokenizer

        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"tokenizer_path: {path} does not exist (expected a tokenizer.json)")
        try:
            self._tok = Tokenizer.from_file(str(path))
        except Exception as err:  # tokenizers raises a plain Exception on bad JSON
            raise ValueError(f"tokenizer_path: {path} is not a HuggingFace tokenizer.json ({err})") from None
        self.path = path
        self.max_length = max_length
        self._tok.no_padding()
        self._tok.enable_truncation(max_length)
        self.pad_id = self._pad_id()
        self._lock = threading.Lock()  # encode_pairs switches the truncation strategy

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)

    def _pad_id(self) -> int:
        for token in ("[PAD]", "<pad>"):
            token_id = self._tok.token_to_id(token)
            if token_id is not None:
                return token_id
        return 0

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Character (start, end) of every token of text: no special tokens, no truncation."""
        return self.token_spans_of([text])[0]

    def token_spans_of(self, texts: list[str]) -> list[list[tuple[int, int]]]:
        """token_spans of each text, in one tokenizer call (its own threads, in Rust)."""
        with self._lock:
            self._tok.no_truncation()
            try:
                encodings = self._tok.encode_batch(texts, add_special_tokens=False)
            finally:
                self._tok.enable_truncation(self.max_length)
        return [[span for span in e.offsets if span[1] > span[0]] for e in encodings]

    def count(self, text: str) -> int:
        """Tokens of text (no special tokens, no truncation)."""
        return len(self.token_spans(text))

    @property
    def special_tokens(self) -> int:
        """Tokens the model adds around one text ([CLS] and [SEP] for BERT)."""
        return self._tok.post_processor.num_special_tokens_to_add(False) if self._tok.post_processor else 0

    def tokenize(self, texts: list[str]) -> list:
        """One tokenizers Encoding per text, truncated at max_length, not padded."""
        with self._lock:
            return self._tok.encode_batch(texts)

    def encode(self, texts: list[str]) -> TokenBatch:
        return self.pad(self.tokenize(texts))

    def encode_pairs(self, queries: list[str], passages: list[str]) -> TokenBatch:
        """[CLS] query [SEP] passage [SEP]; the passage is cut first, the query only if
        it alone does not fit."""
        pairs = list(zip(queries, passages))
        with self._lock:
            return self.pad(self._encode_pairs_locked(pairs))

    def _encode_pairs_locked(self, pairs):
        self._tok.enable_truncation(self.max_length, strategy="only_second")
        try:
            encodings = []
            for pair in pairs:
                try:
                    encodings.append(self._tok.encode(*pair))
                except Exception:  # the query alone is too long for only_second
                    self._tok.enable_truncation(self.max_length, strategy="longest_first")
                    encodings.append(self._tok.encode(*pair))
                    self._tok.enable_truncation(self.max_length, strategy="only_second")
        finally:
            self._tok.enable_truncation(self.max_length)
        return encodings

    def pad(self, encodings) -> TokenBatch:
        """Pads encodings to the longest of them."""
        width = max(len(e.ids) for e in encodings)
        shape = (len(encodings), width)
        ids = np.full(shape, self.pad_id, dtype=np.int64)
        mask = np.zeros(shape, dtype=np.int64)
        types = np.zeros(shape, dtype=np.int64)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n] = e.ids
            mask[row, :n] = 1
            types[row, :n] = e.type_ids
        truncated = np.array([len(e.overflowing) > 0 for e in encodings], dtype=bool)
        return TokenBatch(ids, mask, types, truncated)
