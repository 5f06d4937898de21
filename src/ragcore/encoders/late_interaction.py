"""ColBERT-style late interaction over a BiEncoder's token vectors."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from ._text import check_texts, ranked


def maxsim(query_tokens: np.ndarray, passage_tokens: np.ndarray) -> float:
    """Sum over query tokens of the best cosine with any passage token."""
    return float((query_tokens @ passage_tokens.T).max(axis=1).sum())


class LateInteractionReranker:
    """Reranks passages by MaxSim between the query's and each passage's token
    embeddings (all non-padding tokens, L2-normalised), computed with the given
    BiEncoder (by default ragcore's bundled one). Whether it ranks better than
    the first stage is measured in the evaluation, not assumed here.
    """

    def __init__(self, encoder=None, cache_size: int = 20_000):
        if encoder is None:
            from .defaults import default_encoder

            encoder = default_encoder()
        self.encoder = encoder
        # Passages recur across queries (the same chunks are candidates again and
        # again): their token vectors are kept, as float16, up to cache_size passages.
        self.cache_size = cache_size
        self._cache: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def score(self, query: str, passages) -> np.ndarray:
        passages = check_texts(passages, "passages")
        (q,) = self.encoder.encode_tokens(check_texts([query], "query"))
        tokens = self._passage_tokens(passages)
        return np.array([maxsim(q, p.astype(np.float32)) for p in tokens], dtype=np.float32)

    def _passage_tokens(self, passages: list) -> list:
        with self._lock:
            missing = [p for p in dict.fromkeys(passages) if p not in self._cache]
        fresh = dict(zip(missing, self.encoder.encode_tokens(missing))) if missing else {}
        with self._lock:
            for text, tokens in fresh.items():
                self._cache[text] = tokens.astype(np.float16)
            out = [fresh[p].astype(np.float16) if p in fresh else self._cache[p] for p in passages]
            for p in passages:
                if p in self._cache:
                    self._cache.move_to_end(p)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return out

    def rank(self, query: str, passages, top_k: int | None = None) -> list[tuple[int, float]]:
        """(passage index, score) pairs, best first; equal scores by index ascending."""
        return ranked(self.score(query, passages), top_k)
