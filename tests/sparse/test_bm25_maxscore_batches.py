"""MaxScore's plain loop, which collects candidates in batches of 64 and probes each
non-essential list for a whole batch (maxscore_query.h, `batched_loop`), against the top-k
of all scores.

The corpora mix lists of every kind the loop meets: frequent terms (doc bits, probed with a
popcount), medium ones (no doc bits, probed by moving a cursor) and rare ones of high idf,
so that a query has essential lists of thousands of postings (many batches, cut short at
every block region), non-essential lists of both kinds, and a threshold that rises while a
batch is pending (its pushes move the essential split). Every query has a term without
doc bits, so none takes the all-frequent shortcuts. Ids and scores must be identical.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st


from _bm25_corpora import VARIANTS, build, top_k_of_matches
from _hits_check import assert_hits_equal

FREQUENT = ("f0", "f1", "f2")      # in 5-60% of the documents: doc bits
MEDIUM = ("m0", "m1", "m2", "m3")  # in 0.3-1.2%: below 1/64, no doc bits
RARE = ("r0", "r1")                # in a few documents


def mixed_corpus(rng, n: int) -> list[list[str]]:
    dens = {t: p for t, p in zip(FREQUENT, rng.uniform(0.05, 0.6, len(FREQUENT)))}
    dens.update({t: p for t, p in zip(MEDIUM, rng.uniform(0.003, 0.012, len(MEDIUM)))})
    dens.update({t: 6.0 / n for t in RARE})
    corpus = []
    for _ in range(n):
        # filler lengths spread widely, so the parts of one list differ
        doc = [f"x{int(w)}" for w in rng.integers(0, 300, size=int(rng.integers(0, 90)))]
        for term, p in dens.items():
            if rng.random() < p:
                doc += [term] * int(rng.integers(1, 4))
        corpus.append(doc or ["x0"])
    return corpus


def mixed_queries(rng, n_queries: int) -> list[list[str]]:
    qs = []
    for _ in range(n_queries):
        q = list(rng.choice(MEDIUM, size=int(rng.integers(1, 3)), replace=False))
        q += list(rng.choice(FREQUENT, size=int(rng.integers(0, 4)), replace=False))
        if rng.random() < 0.5:
            q.append(str(rng.choice(RARE)))
        if rng.random() < 0.3:
            q.append(q[0])  # a repeated word: weight 2
        qs.append(q)
    return qs


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(2000, 9000),
       variant=st.sampled_from(VARIANTS), k=st.integers(1, 80), removed=st.floats(0.0, 0.2))
def test_batched_maxscore_equals_the_top_k_of_all_scores(seed, n, variant, k, removed):
    rng = np.random.default_rng(seed)
    corpus = mixed_corpus(rng, n)
    index = build(corpus, variant=variant)
    gone = np.flatnonzero(rng.random(n) < removed)
    if 0 < len(gone) < n:
        index.remove(gone)
    qs = mixed_queries(rng, 8)
    for q in qs:
        want = top_k_of_matches(index, corpus, q, k)
        assert_hits_equal(index.search([q], k, n_threads=1, algorithm="maxscore"), want)
    assert_hits_equal(index.search(qs, k, n_threads=2, algorithm="maxscore"),
                      index.search(qs, k, n_threads=1, algorithm="exhaustive"))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31), fraction=st.floats(0.02, 0.9), k=st.integers(1, 30))
def test_batched_maxscore_with_an_allow_filter(seed, fraction, k):
    rng = np.random.default_rng(seed)
    corpus = mixed_corpus(rng, 6000)
    index = build(corpus, variant="lucene")
    ids = np.asarray(index.ids)
    keep = rng.random(len(ids)) < fraction
    for q in mixed_queries(rng, 6):
        want = top_k_of_matches(index, corpus, q, k, keep=keep)
        got = index.search([q], k, n_threads=1, algorithm="maxscore", allow=ids[keep])
        assert_hits_equal(got, want)
