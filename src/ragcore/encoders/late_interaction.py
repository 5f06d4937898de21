"""ColBERT-style late interaction over a BiEncoder's token vectors."""

from __future__ import annotations

import numpy as np

from .._arrays import check_positive_int
from ._text import check_texts


def maxsim(query_tokens: np.ndarray, passage_tokens: np.ndarray) -> float:
    """Sum over query tokens of the best cosine with any passage token."""
    return float((query_tokens @ passage_tokens.T).max(axis=1).sum())


class LateInteractionReranker:
    """Reranks passages by MaxSim between the query's and each passage's token
    embeddings (all non-padding tokens, L2-normalised), computed with the given
    BiEncoder (by default ragcore's bundled one). Whether it ranks better than
    the first stage is measured in the evaluation, not assumed here.
    """

    def __init__(self, encoder=None):
        if encoder is None:
            from ..models import default_encoder

            encoder = default_encoder()
        self.encoder = encoder

    def score(self, query: str, passages) -> np.ndarray:
        passages = check_texts(passages, "passages")
        (q,) = self.encoder.encode_tokens(check_texts([query], "query"))
        tokens = self.encoder.encode_tokens(passages) if passages else []
        return np.array([maxsim(q, p) for p in tokens], dtype=np.float32)

    def rank(self, query: str, passages, top_k: int | None = None) -> list[tuple[int, float]]:
        """(passage index, score) pairs, best first; equal scores by index ascending."""
        scores = self.score(query, passages)
        order = np.lexsort((np.arange(len(scores)), -scores.astype(np.float64)))
        if top_k is not None:
            order = order[: check_positive_int(top_k, "top_k")]
        return [(int(i), float(scores[i])) for i in order]
