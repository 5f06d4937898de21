"""The Zipfian BM25 corpus of bench/bm25.py and bench/gpu_bm25.py (numpy only, so that
the GPU machine, which lacks the CPU benchmark's dependencies, can build it too)."""

from __future__ import annotations

import numpy as np


def zipf_corpus(n: int, vocab: int, n_queries: int, seed: int = 0) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    words = np.array([f"w{r}" for r in range(vocab)], dtype=object)
    p = 1.0 / np.arange(1, vocab + 1)
    cdf = np.cumsum(p / p.sum())
    lengths = rng.integers(60, 201, size=n)
    texts, chunk = [], 50_000
    for start in range(0, n, chunk):
        lens = lengths[start : start + chunk]
        ranks = np.minimum(np.searchsorted(cdf, rng.random(int(lens.sum()))), vocab - 1)
        flat, pos = words[ranks], 0
        for length in lens:
            texts.append(" ".join(flat[pos : pos + length]))
            pos += length
    q = query_word_weights(vocab)
    queries = []
    for _ in range(n_queries):
        size = int(rng.integers(2, 7))
        queries.append(" ".join(words[rng.choice(vocab, size=size, replace=False, p=q)]))
    return texts, queries


def query_word_weights(vocab: int) -> np.ndarray:
    """How often each word rank is drawn into a query: p ~ 1/rank^0.8 (flatter than the
    corpus's 1/rank, so queries mix common and rarer words)."""
    q = 1.0 / np.arange(1, vocab + 1) ** 0.8
    return q / q.sum()
