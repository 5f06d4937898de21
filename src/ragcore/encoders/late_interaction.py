"""ColBERT-style late interaction over a BiEncoder's token vectors."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from ._text import check_texts, ranked


def maxsim(query_tokens: np.ndarray, passage_tokens: np.ndarray) -> float:
    """Sum over query tokens of the best cosine with any passage token."""
    return float((query_tokens @ passage_tokens.T).max(axis=1).sum())


def maxsim_many(query_tokens: np.ndarray, passages: list) -> np.ndarray:
    """maxsim of the query against every passage, with one matrix product over all
    their tokens (no per-passage loop); float32 [len(passages)]."""
    if not passages:
        return np.zeros(0, dtype=np.float32)
    sizes = np.array([len(p) for p in passages])
    sims = query_tokens @ np.concatenate(passages).astype(np.float32).T  # [q tokens, all tokens]
    best = np.maximum.reduceat(sims, np.concatenate([[0], np.cumsum(sizes)[:-1]]), axis=1)
    return best.sum(axis=0).astype(np.float32)


class LateInteractionReranker:
    """Reranks passages by MaxSim between the query's and each passage's token
    embeddings (all non-padding tokens, L2-normalised), computed with the given
    BiEncoder (by default ragcore's bundled one). Whether it ranks better than
    the first stage is measured in the evaluation, not assumed here.
    """

    def __init__(self, encoder=None, cache_size: int = 20_000):
        if isinstance(cache_size, bool) or not isinstance(cache_size, (int, np.integer)):
            raise TypeError(f"cache_size must be an integer, got {type(cache_size).__name__}")
        if cache_size < 0:
            raise ValueError(f"cache_size must be >= 0 (0 keeps nothing), got {cache_size}")
        if encoder is None:
            from .defaults import default_encoder

            encoder = default_encoder()
        self.encoder = encoder
        # Passages recur across queries (the same chunks are candidates again and
        # again): their token vectors are kept, as float16, up to cache_size passages
        # (least recently used dropped first); a call encodes only the query and
        # the passages not kept. hits / misses count passages found / encoded.
        self.cache_size = int(cache_size)
        self.hits = self.misses = 0
        self._cache: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def score(self, query: str, passages) -> np.ndarray:
        passages = check_texts(passages, "passages")
        (q,) = self.encoder.encode_tokens(check_texts([query], "query"))
        return maxsim_many(q, self._passage_tokens(passages))

    def _passage_tokens(self, passages: list) -> list:
        """float16 token vectors of each passage: kept ones, the rest encoded (once
        each, outside the lock) and kept."""
        unique = list(dict.fromkeys(passages))
        with self._lock:
            known = {p: self._cache[p] for p in unique if p in self._cache}
        missing = [p for p in unique if p not in known]
        fresh = {} if not missing else {
            text: tokens.astype(np.float16)
            for text, tokens in zip(missing, self.encoder.encode_tokens(missing))}
        with self._lock:
            self.misses += len(missing)
            self.hits += len(passages) - len(missing)
            for text in unique:
                self._cache[text] = known.get(text, fresh.get(text))
                self._cache.move_to_end(text)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        known.update(fresh)
        return [known[p] for p in passages]

    def rank(self, query: str, passages, top_k: int | None = None) -> list[tuple[int, float]]:
        """(passage index, score) pairs, best first; equal scores by index ascending."""
        return ranked(self.score(query, passages), top_k)
