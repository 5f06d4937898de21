"""Corpora and queries for the BM25 tests: small hypothesis corpora over a tiny
vocabulary (so terms repeat and tie), and larger Zipfian ones whose lists span
many 128-posting blocks."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ragcore import BM25Index
from ragcore.hits import Hits
from ragcore.reference import bm25_matches, bm25_top_matches

WORDS = ["w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7"]
VARIANTS = ("lucene", "lucene_legacy", "okapi", "robertson", "atire", "bm25l", "bm25+")

words = st.sampled_from(WORDS)
docs = st.lists(words, max_size=12)
corpora = st.lists(docs, min_size=1, max_size=30)
queries = st.lists(st.one_of(words, st.just("absent")), min_size=0, max_size=5)


def zipf_corpus(n_docs: int, vocab: int = 400, seed: int = 0, max_len: int = 40):
    """Token lists with Zipfian term frequencies and random lengths."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, vocab + 1) ** 1.1
    p /= p.sum()
    lengths = rng.integers(0, max_len, size=n_docs)
    flat = rng.choice(vocab, size=int(lengths.sum()), p=p)
    out, start = [], 0
    for n in lengths:
        out.append([f"t{i}" for i in flat[start : start + n]])
        start += n
    return out


def zipf_queries(n: int, vocab: int = 400, seed: int = 1):
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, vocab + 1) ** 0.8
    p /= p.sum()
    return [[f"t{i}" for i in rng.choice(vocab, size=rng.integers(1, 7), p=p)] for _ in range(n)]


def build(corpus, variant="lucene", ids=None, **kw) -> BM25Index:
    index = BM25Index(variant=variant, stopwords=None, **kw)
    index.add(corpus, ids=ids)
    return index


def build_shuffled(corpus, variant, seed: int, n_removed: int) -> BM25Index:
    """An index whose ids do not ascend with insertion order, after removing up to
    n_removed documents (never all of them)."""
    rng = np.random.default_rng(seed)
    ids = rng.permutation(10 * len(corpus))[: len(corpus)]  # as shuffled_docs draws them
    index = build(corpus, variant, ids=ids)
    removed = rng.choice(ids, size=min(n_removed, len(ids) - 1), replace=False)
    if len(removed):
        index.remove(removed)
    return index


def shuffled_docs(corpus, seed: int) -> dict:
    """id -> tokens of the index build_shuffled(corpus, ..., seed, ...) makes."""
    ids = np.random.default_rng(seed).permutation(10 * len(corpus))[: len(corpus)]
    return dict(zip(ids.tolist(), corpus))


def top_k_of_matches(index: BM25Index, docs_of, query, k: int, keep=None) -> Hits:
    """What search must return for one token-list query: the top k by get_scores (each
    document's exhaustive sum) among the live documents holding a token of the query
    (reference.bm25_matches: the only BM25 results), and, with `keep` (a boolean mask over
    index.ids), only among those it keeps. docs_of maps an id to its tokens (a list indexed
    by id, or a dict)."""
    ids = index.ids
    held = bm25_matches([docs_of[int(i)] for i in ids], query)
    if keep is not None:
        held &= np.asarray(keep, dtype=bool)
    return bm25_top_matches(index.get_scores(query), held, ids, k)
