"""MaxScore on queries of frequent terms only, against the top-k of all scores.

Two shortcuts of maxscore_query.h act there: an essential list skips, without making them
candidates, the postings whose part plus the bounds of every other list cannot enter
(`advance`, with no negative weight), and a candidate lacking a *required* non-essential
list (one without which the other bounds cannot enter; tested on its doc bits, so a term in
at least 1/64 of the slots) is dropped before it is scored. MaxScore takes them only for a
query whose terms all have doc bits, and they act when the threshold is near the sum of the
bounds: few query terms, each in many documents, a small k, and document lengths spread
widely so that the parts of one list differ (the query with a rare term runs without them). Removed
documents and the allow filter change the slots and the threshold; each must leave the hits
identical (ids and scores) to exhaustive scoring's.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st


from _bm25_corpora import VARIANTS, build, top_k_of_matches
from _hits_check import assert_hits_equal

FREQUENT = ("a", "b", "c", "d")


def frequent_corpus(rng, n: int, densities) -> list[list[str]]:
    corpus = []
    for _ in range(n):
        doc = [f"x{int(w)}" for w in rng.integers(0, 400, size=int(rng.integers(0, 60)))]
        for term, p in zip(FREQUENT, densities):
            if rng.random() < p:
                doc += [term] * int(rng.integers(1, 3))
        corpus.append(doc or ["x0"])
    return corpus


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(200, 3000),
       densities=st.lists(st.floats(0.02, 0.7), min_size=4, max_size=4),
       variant=st.sampled_from(VARIANTS), k=st.integers(1, 12),
       removed=st.floats(0.0, 0.3))
def test_frequent_terms_equal_the_top_k_of_all_scores(seed, n, densities, variant, k, removed):
    rng = np.random.default_rng(seed)
    corpus = frequent_corpus(rng, n, densities)
    index = build(corpus, variant=variant)
    gone = np.flatnonzero(rng.random(n) < removed)
    if 0 < len(gone) < n:
        index.remove(gone)
    qs = [list(rng.choice(FREQUENT, size=int(rng.integers(1, 5)), replace=False)) for _ in range(6)]
    qs.append(["a", "b", "x7"])  # one rare term among frequent ones
    for q in qs:
        want = top_k_of_matches(index, corpus, q, k)
        for algorithm in ("maxscore", "auto"):
            assert_hits_equal(index.search([q], k, n_threads=1, algorithm=algorithm), want)
    batch = index.search(qs, k, n_threads=1, algorithm="maxscore")
    assert_hits_equal(batch, index.search(qs, k, n_threads=1, algorithm="exhaustive"))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), fraction=st.floats(0.05, 0.9), k=st.integers(1, 10))
def test_frequent_terms_with_an_allow_filter(seed, fraction, k):
    rng = np.random.default_rng(seed)
    corpus = frequent_corpus(rng, 2000, (0.5, 0.3, 0.1, 0.04))
    index = build(corpus, variant="lucene")
    ids = np.asarray(index.ids)
    allowed = ids[rng.random(len(ids)) < fraction]
    keep = np.isin(ids, allowed)
    for q in (["a", "b"], ["a", "b", "c"], ["b", "c", "d"], ["a", "d"]):
        want = top_k_of_matches(index, corpus, q, k, keep=keep)
        got = index.search([q], k, n_threads=1, algorithm="maxscore", allow=allowed)
        assert_hits_equal(got, want)
