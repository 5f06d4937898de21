"""Parity with bm25s on the same pre-tokenized corpus (bm25s is a test extra)."""

from __future__ import annotations

import numpy as np
import pytest

from _bm25_corpora import build, zipf_corpus, zipf_queries
from _hits_check import assert_hits_close
from ragcore.hits import Hits
from ragcore.reference import bm25_matches

bm25s = pytest.importorskip("bm25s")

SHARED = ("robertson", "lucene", "atire", "bm25l", "bm25+")


@pytest.fixture(scope="module")
def corpus():
    return zipf_corpus(600, seed=11, max_len=60)


@pytest.mark.parametrize("variant", SHARED)
def test_same_topk_and_scores_as_bm25s(corpus, variant):
    theirs = bm25s.BM25(method=variant, k1=1.2, b=0.7, delta=0.6)
    theirs.index(corpus, show_progress=False)
    ours = build(corpus, variant=variant, k1=1.2, b=0.7, delta=0.6)
    known = set(theirs.vocab_dict)
    # bm25s needs query tokens it knows; repeated tokens are left out of the comparison.
    qs = [list(dict.fromkeys(t for t in q if t in known)) or ["t0"] for q in zipf_queries(30, seed=12)]
    ref = np.stack([theirs.get_scores(q) for q in qs]).astype(np.float64)
    for q, row in zip(qs, ref):
        np.testing.assert_allclose(ours.get_scores(q), row, rtol=1e-5, atol=1e-6)
    for k in (1, 10, 50):
        hits = ours.search(qs, k)
        _, their_scores = theirs.retrieve(qs, k=k, show_progress=False)
        for row, q in enumerate(qs):
            # bm25s ranks every document; ours are the documents holding a query term, which
            # bm25s ranks first too (a term held never scores below one absent).
            held = bm25_matches(corpus, q)
            one = Hits(hits.scores[row : row + 1], hits.ids[row : row + 1])
            assert_hits_close(one, ref[row : row + 1, held], np.flatnonzero(held), k,
                              1e-5 * np.abs(ref[row]).max())
            n = min(k, int(held.sum()))
            np.testing.assert_allclose(hits.scores[row, :n], their_scores[row, :n], rtol=1e-5)
