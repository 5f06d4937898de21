"""MaxScore and Block-Max WAND against exhaustive scoring: identical ids and scores
(not approximately equal), for every variant, k and thread count."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _bm25_corpora import VARIANTS, build, corpora, queries, top_k_of_matches, zipf_corpus, zipf_queries
from _hits_check import assert_hits_equal

PRUNED = ("maxscore", "bmw", "bmp")


def assert_same_as_exhaustive(index, qs, k, n_threads=1):
    want = index.search(qs, k, n_threads=n_threads, algorithm="exhaustive")
    for algorithm in PRUNED + ("auto",):
        assert_hits_equal(index.search(qs, k, n_threads=n_threads, algorithm=algorithm), want)


@settings(max_examples=60, deadline=None)
@given(corpus=corpora, qs=st.lists(queries, min_size=1, max_size=4),
       variant=st.sampled_from(VARIANTS), k=st.integers(1, 35),
       ids_seed=st.integers(0, 2**31))
def test_small_corpora(corpus, qs, variant, k, ids_seed):
    ids = np.random.default_rng(ids_seed).permutation(len(corpus) * 3)[: len(corpus)]
    assert_same_as_exhaustive(build(corpus, variant=variant, ids=ids), qs, k)


@pytest.fixture(scope="module", params=[1, 7, 97, 1023, 3000])
def zipf_docs(request):
    return zipf_corpus(request.param, seed=request.param)


@pytest.mark.parametrize("variant", VARIANTS)
def test_zipf_corpora_many_blocks(zipf_docs, variant):
    n = len(zipf_docs)
    ids = np.random.default_rng(n).permutation(n) * 7 + 3  # external ids out of order
    index = build(zipf_docs, variant=variant, ids=ids)
    qs = zipf_queries(40, seed=n)
    for k in (1, 10, 100):
        assert_same_as_exhaustive(index, qs, k)
    assert_same_as_exhaustive(index, qs, 10, n_threads=3)


def test_lucene_norms_and_extreme_parameters():
    corpus = zipf_corpus(1500, seed=5, max_len=120)
    qs = zipf_queries(30, seed=6)
    for kw in (dict(lucene_norms=True), dict(k1=0.0, b=1.0), dict(k1=5.0, b=0.0),
               dict(variant="bm25+", delta=0.0), dict(variant="bm25l", delta=2.0)):
        assert_same_as_exhaustive(build(corpus, **kw), qs, 10)


# What auto runs (choose_algorithm in cpp/src/sparse/bm25_index.cpp; the measurement behind
# it: bench/calibrate/bm25_algorithms.py): exhaustive where
# P * N < 16384 * k^2 (P: the summed lengths of the query's lists, N: the index's slots),
# MaxScore otherwise, never Block-Max WAND.
EXHAUSTIVE_BELOW = 16384


def expected_auto(index, query, k, n_slots=None):
    postings = sum(index.doc_freq(t) for t in set(query))
    n_slots = len(index) if n_slots is None else n_slots
    return "exhaustive" if postings * n_slots < EXHAUSTIVE_BELOW * k * k else "maxscore"


def test_auto_follows_the_rule_and_returns_the_exhaustive_hits():
    index = build(zipf_corpus(3000, seed=2))  # no removals: N is len(index)
    qs = zipf_queries(60, seed=3) + [["t0", "t1"], ["t399"], ["t1"], ["absent"]]
    seen = set()
    for k in (1, 10, 30, 100, 1000):
        for n_threads in (1, 2):
            hits, used = index._search(qs, k, n_threads=n_threads)
            assert used == [expected_auto(index, q, k) for q in qs]
            assert_hits_equal(hits, index.search(qs, k, n_threads=1, algorithm="exhaustive"))
        seen.update(used)
        if k == 10:
            assert used[-4:] == ["maxscore", "exhaustive", "maxscore", "exhaustive"]
    assert seen == {"exhaustive", "maxscore"}


def test_auto_counts_removed_slots():
    # N is the slots exhaustive sweeps, removed documents included; P the live postings.
    index = build(zipf_corpus(3000, seed=4))
    index.remove(index.ids[::3])
    n_slots = len(index.impacts()["slot_ids"])
    assert n_slots == 3000 > len(index)
    qs = zipf_queries(60, seed=5)
    for k in (10, 30, 100):
        hits, used = index._search(qs, k)
        assert used == [expected_auto(index, q, k, n_slots) for q in qs]
        assert_hits_equal(hits, index.search(qs, k, algorithm="exhaustive"))


def test_auto_depends_on_k_for_the_same_lists():
    index = build(zipf_corpus(3000, seed=2))
    query = ["t0", "t1"]
    _, small_k = index._search([query], 10)
    _, large_k = index._search([query], 1000)
    assert (small_k, large_k) == (["maxscore"], ["exhaustive"])


def brute_force_top_k(index, docs_of, query, k):
    want = top_k_of_matches(index, docs_of, query, k)
    return np.asarray(want.scores)[0], np.asarray(want.ids)[0]


def test_ascending_and_unordered_ids_give_the_brute_force_top_k():
    # Where external ids ascend with insertion order the queue ranks internal
    # slots and maps them at the end; an out-of-order add or a load must keep
    # the ranking by external id.
    corpus = zipf_corpus(3000, seed=11)
    qs = zipf_queries(25, seed=12)
    index = build(corpus, ids=np.arange(3000) * 5 + 2)
    index.remove(np.arange(0, 3000, 7) * 5 + 2)
    stages = [index]
    unordered = build(corpus, ids=np.arange(3000) * 5 + 2)
    later = zipf_corpus(200, seed=13)
    unordered.add(later, ids=np.arange(200) * 5 + 1)  # smaller ids, added later
    stages.append(unordered)
    docs_of = {5 * i + 2: doc for i, doc in enumerate(corpus)}
    docs_of.update({5 * i + 1: doc for i, doc in enumerate(later)})
    for idx in stages:
        for k in (1, 10, 100):
            for algorithm in ("exhaustive", "maxscore", "bmw", "bmp", "auto"):
                hits = idx.search(qs, k, n_threads=1, algorithm=algorithm)
                for row, q in enumerate(qs):
                    want_scores, want_ids = brute_force_top_k(idx, docs_of, q, k)
                    np.testing.assert_array_equal(np.asarray(hits.ids)[row], want_ids)
                    np.testing.assert_array_equal(np.asarray(hits.scores)[row], want_scores)


# The threshold seed (cpp/include/ragcore/sparse/query/threshold_seed.h) scores its documents
# only on some of the terms when no weight is negative, so its floor is a lower bound of a
# k-th score; here every algorithm, exhaustive included (it takes the seed's floor too), is
# checked against the top-k of get_scores, which has no floor. Vocabulary 3,000 over 2,000
# documents: most query terms are in fewer than 1/64 of the documents (no doc bits), their
# best blocks hold documents that other rare query terms share, and okapi's idf is
# negative for the frequent ones (the full seed is taken there).
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), variant=st.sampled_from(VARIANTS), k=st.integers(1, 60))
def test_every_algorithm_equals_the_top_k_of_all_scores(seed, variant, k):
    corpus = zipf_corpus(2000, vocab=3000, seed=seed % 1000, max_len=60)
    index = build(corpus, variant=variant)
    for q in zipf_queries(8, vocab=3000, seed=seed):
        want = top_k_of_matches(index, corpus, q, k)
        for algorithm in ("exhaustive",) + PRUNED + ("auto",):
            assert_hits_equal(index.search([q], k, algorithm=algorithm), want)


def test_a_long_query_with_a_large_k_equals_the_top_k_of_all_scores():
    # k = 30,000 asks the seed for 938 blocks, and 100 terms offer up to 16 each: its scratch
    # passes 65,536 documents and is freed after the query; the next query builds a new one.
    corpus = zipf_corpus(40_000, vocab=400, seed=11, max_len=40)
    index = build(corpus, variant="lucene")
    long_query = [f"t{i}" for i in range(100)]
    for q, k in ((long_query, 30_000), (["t3", "t50"], 10), (long_query, 5)):
        want = top_k_of_matches(index, corpus, q, k)
        for algorithm in ("exhaustive", "maxscore", "bmp", "auto"):
            assert_hits_equal(index.search([q], k, algorithm=algorithm), want)


def test_cursor_moves_of_every_length_equal_the_top_k_of_all_scores():
    # "b" sits in documents ever farther apart (gaps of 1 up to ~40,000 documents, i.e. 0 to
    # ~300 blocks of "a"), so the cursors' block search moves by every stride: linear steps,
    # galloping and the binary search in its last stride.
    n = 60_000
    at = sorted({int(1.3 ** j) for j in range(45) if int(1.3 ** j) < n})
    rng = np.random.default_rng(5)
    corpus = [["a"] * int(rng.integers(1, 4)) + ["c"] * int(rng.integers(0, 3)) for _ in range(n)]
    for d in at:
        corpus[d] = corpus[d] + ["b"] * int(rng.integers(1, 3))
    index = build(corpus, variant="lucene")
    for q in (["a", "b"], ["b", "c"], ["a", "b", "c"]):
        for k in (1, 3, 17):
            want = top_k_of_matches(index, corpus, q, k)
            for algorithm in ("exhaustive",) + PRUNED + ("auto",):
                assert_hits_equal(index.search([q], k, algorithm=algorithm), want)


# Block-max pruning (block_max_pruning_query.h) bounds and scores ranges of 64 slots: terms
# in at least 1/64 of the slots through their doc bits, rarer ones through their own range
# entries. Here documents sit at both ends of ranges, some ranges are emptied by removals,
# frequent and rare terms mix, and the same index answers queries one by one and in batches
# (the per-query range table must be clean after each query).
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 900), variant=st.sampled_from(VARIANTS),
       k=st.integers(1, 40))
def test_block_max_pruning_equals_the_top_k_of_all_scores(seed, n, variant, k):
    rng = np.random.default_rng(seed)
    vocab = ["f0", "f1", "f2"] + [f"r{i}" for i in range(40)]
    p = np.array([40.0, 20.0, 10.0] + [1.0] * 40)
    corpus = [list(rng.choice(vocab, size=int(rng.integers(1, 12)), p=p / p.sum())) for _ in range(n)]
    index = build(corpus, variant=variant)
    gone = np.flatnonzero(rng.random(n) < 0.2)
    if 0 < len(gone) < n:
        index.remove(gone)
    qs = [list(rng.choice(vocab, size=int(rng.integers(1, 6)), replace=False)) for _ in range(6)]
    batch = index.search(qs, k, algorithm="bmp")
    for row, q in enumerate(qs):
        want = top_k_of_matches(index, corpus, q, k)
        assert_hits_equal(index.search([q], k, algorithm="bmp"), want)
        np.testing.assert_array_equal(np.asarray(batch.ids)[row], np.asarray(want.ids)[0])
        np.testing.assert_array_equal(np.asarray(batch.scores)[row], np.asarray(want.scores)[0])


def test_block_max_pruning_of_a_query_too_long_for_its_range_table():
    # 1,563 ranges x 11,000 rarer terms passes the 2^24 entries of the per-query range table
    # (block_max_pruning_query.h, kMaxWhere): the ranges are then found by binary search.
    rng = np.random.default_rng(3)
    vocab = np.array([f"t{i}" for i in range(30_000)])
    corpus = [list(vocab[rng.integers(0, 30_000, size=3)]) for _ in range(100_000)]
    index = build(corpus, variant="lucene")
    long_query = list(vocab[rng.permutation(30_000)[:11_000]])
    for q in (long_query, long_query[:50]):
        for k in (1, 10):
            want = index.search([q], k, algorithm="exhaustive")
            assert_hits_equal(index.search([q], k, algorithm="bmp"), want)
