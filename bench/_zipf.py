"""The Zipfian BM25 corpus of bench/tasks/bm25.py, bench/gpu_bm25.py and the BM25 calibration
(numpy only, so that the GPU machine, which lacks the CPU benchmark's dependencies, can build it
too)."""

from __future__ import annotations

import numpy as np


def zipf_corpus(n: int, vocab: int, n_queries: int, seed: int = 0) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    words = np.array([f"w{r}" for r in range(vocab)], dtype=object)
    texts = [" ".join(words[ranks]) for ranks in _doc_ranks(rng, n, vocab)]
    q = query_word_weights(vocab)
    queries = []
    for _ in range(n_queries):
        size = int(rng.integers(2, 7))
        queries.append(" ".join(words[rng.choice(vocab, size=size, replace=False, p=q)]))
    return texts, queries


def zipf_token_ids(n: int, vocab: int, seed: int = 0) -> list[np.ndarray]:
    """The documents of zipf_corpus(n, vocab, ..., seed) as int32 word ranks (document i's
    word j is f"w{ids[i][j]}"): for peers that index token ids, without a tokenizer."""
    return [ranks.astype(np.int32) for ranks in _doc_ranks(np.random.default_rng(seed), n, vocab)]


def _doc_ranks(rng, n: int, vocab: int):
    """Each document's word ranks (p ~ 1/rank, 60-200 words), in order."""
    p = 1.0 / np.arange(1, vocab + 1)
    cdf = np.cumsum(p / p.sum())
    lengths = rng.integers(60, 201, size=n)
    chunk = 50_000
    for start in range(0, n, chunk):
        lens = lengths[start : start + chunk]
        ranks = np.minimum(np.searchsorted(cdf, rng.random(int(lens.sum()))), vocab - 1)
        ends = np.cumsum(lens)
        for end, length in zip(ends, lens):
            yield ranks[end - length : end]


def query_word_weights(vocab: int) -> np.ndarray:
    """How often each word rank is drawn into a query: p ~ 1/rank^0.8 (flatter than the
    corpus's 1/rank, so queries mix common and rarer words)."""
    q = 1.0 / np.arange(1, vocab + 1) ** 0.8
    return q / q.sum()
