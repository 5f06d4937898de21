"""BM25 under statistics given from outside: shards scored with the sum of their
statistics give one index's scores (bit for bit) and hits, and the reference's scores."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ragcore.hits import Hits
from ragcore.reference import bm25_matches, bm25_scores_with_statistics
from ragcore.sparse import BM25Index, BM25Statistics, combine_statistics

from _bm25_corpora import VARIANTS, build, corpora, queries, zipf_corpus, zipf_queries


def shard_corpus(corpus, n_shards: int, seed: int):
    """(ids, tokens) per shard: documents dealt at random, ids their corpus positions."""
    owner = np.random.default_rng(seed).integers(0, n_shards, size=len(corpus))
    return [(np.flatnonzero(owner == s), [corpus[i] for i in np.flatnonzero(owner == s)])
            for s in range(n_shards)]


def merged(rows: list[Hits], k: int) -> Hits:
    """The best k of one query's shard rows, ties by id ascending, padding (-1, -inf)."""
    scores = np.concatenate([r.scores[0] for r in rows])
    ids = np.concatenate([r.ids[0] for r in rows])
    keep = ids >= 0
    order = np.lexsort((ids[keep], -scores[keep].astype(np.float64)))[:k]
    out_s = np.full(k, -np.inf, dtype=np.float32)
    out_i = np.full(k, -1, dtype=np.int64)
    out_s[: len(order)], out_i[: len(order)] = scores[keep][order], ids[keep][order]
    return Hits(out_s[None], out_i[None])


params = dict(variant=st.sampled_from(VARIANTS), k1=st.sampled_from([0.0, 0.9, 1.5]),
              b=st.sampled_from([0.0, 0.75, 1.0]), lucene_norms=st.booleans())


@settings(max_examples=60, deadline=None)
@given(corpus=corpora, query=queries, n_shards=st.integers(1, 4), seed=st.integers(0, 99),
       **params)
def test_shards_under_global_statistics_equal_one_index(corpus, query, n_shards, seed, variant,
                                                        k1, b, lucene_norms):
    kw = dict(k1=k1, b=b, delta=0.7, lucene_norms=lucene_norms)
    whole = build(corpus, variant, **kw)
    shards = [(ids, build(docs, variant, ids=ids, **kw))
              for ids, docs in shard_corpus(corpus, n_shards, seed) if len(docs)]
    stats = combine_statistics(index.statistics([query]) for _, index in shards)
    assert stats.n_docs == len(corpus)
    assert stats.total_length == sum(len(d) for d in corpus)
    whole_scores = whole.get_scores(query)
    for ids, index in shards:
        got = index.get_scores(query, statistics=stats)
        np.testing.assert_array_equal(got, whole_scores[ids])  # the same float32, bit for bit
        ref = bm25_scores_with_statistics([corpus[i] for i in ids], query, stats.n_docs,
                                          stats.total_length, stats.doc_freqs, variant=variant,
                                          **kw)
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-7 * max(1.0, np.abs(ref).max()))
    k = len(corpus) + 1
    expected = whole.search([query], k)
    rows = [index.search([query], k, statistics=stats) for _, index in shards]
    got = merged(rows, k)
    np.testing.assert_array_equal(got.ids, expected.ids)
    np.testing.assert_array_equal(got.scores, expected.scores)


@settings(max_examples=30, deadline=None)
@given(corpus=corpora, query=queries, seed=st.integers(0, 99), **params)
def test_search_with_statistics_is_the_reference_top_k_with_allow(corpus, query, seed, variant,
                                                                  k1, b, lucene_norms):
    kw = dict(k1=k1, b=b, delta=0.7, lucene_norms=lucene_norms)
    (ids, docs), (_, others) = shard_corpus(corpus, 2, seed)
    index = build(docs, variant, ids=ids, **kw) if docs else build([], variant, **kw)
    stats = combine_statistics([index.statistics([query]), build(others, variant, **kw)
                                .statistics([query])])
    keep = np.random.default_rng(seed).random(len(ids)) < 0.6
    ref = bm25_scores_with_statistics(docs, query, stats.n_docs, stats.total_length,
                                      stats.doc_freqs, variant=variant, **kw)
    k = len(corpus) + 1  # every allowed match is returned
    got = index.search([query], k, statistics=stats, allow=ids[keep])
    wanted = bm25_matches(docs, query) & keep
    returned = got.ids[0][got.ids[0] >= 0]
    assert sorted(returned.tolist()) == sorted(ids[wanted].tolist())
    by_id = dict(zip(ids.tolist(), ref))
    np.testing.assert_allclose(got.scores[0][: len(returned)],
                               [by_id[i] for i in returned.tolist()], rtol=1e-6, atol=1e-6)
    assert np.all(np.diff(got.scores[0][: len(returned)].astype(np.float64)) <= 0)


def test_zipf_shards_batch_equals_one_index():
    corpus = zipf_corpus(3000, seed=3)
    qs = zipf_queries(40, seed=4)
    whole = build(corpus)
    shards = [build(docs, ids=ids) for ids, docs in shard_corpus(corpus, 3, seed=5)]
    stats = combine_statistics(s.statistics(qs) for s in shards)
    k = 10
    expected = whole.search(qs, k)
    per_shard = [s.search(qs, k, statistics=stats, n_threads=2) for s in shards]
    for q in range(len(qs)):
        got = merged([Hits(h.scores[q : q + 1], h.ids[q : q + 1]) for h in per_shard], k)
        np.testing.assert_array_equal(got.ids[0], expected.ids[q])
        np.testing.assert_array_equal(got.scores[0], expected.scores[q])


def test_text_queries_with_stemming_and_stopwords():
    texts = ["The runners were running quickly", "A runner runs", "Quick brown foxes",
             "running is the best exercise", "nothing related here"]
    whole = BM25Index(stemmer="english")
    whole.add(texts)
    a, b = BM25Index(stemmer="english"), BM25Index(stemmer="english")
    a.add(texts[:2], ids=[0, 1])
    b.add(texts[2:], ids=[2, 3, 4])
    query = "the running runner"
    stats = combine_statistics([a.statistics(query), b.statistics(query)])
    assert set(stats.doc_freqs) == {"run", "runner"}  # stopword dropped, words stemmed
    assert stats.doc_freqs["run"] == whole.doc_freq("run")
    expected = whole.get_scores(query)
    np.testing.assert_array_equal(np.concatenate([a.get_scores(query, statistics=stats),
                                                  b.get_scores(query, statistics=stats)]),
                                  expected)


def test_bad_statistics_are_refused_naming_them():
    index = build([["w0", "w1"], ["w1"]])
    with pytest.raises(TypeError, match="statistics"):
        index.search([["w0"]], 2, statistics={"n_docs": 2})
    with pytest.raises(ValueError, match="statistics: no document frequency for query term 'w0'"):
        index.search([["w0"]], 2, statistics=BM25Statistics(5, 10, {"w1": 2}))
    with pytest.raises(ValueError, match="statistics: n_docs"):
        index.search([["w0"]], 2, statistics=BM25Statistics(1, 10, {"w0": 1}))
    with pytest.raises(ValueError, match="statistics: total_length"):
        index.search([["w0"]], 2, statistics=BM25Statistics(5, 1, {"w0": 1}))
    with pytest.raises(ValueError, match="below this index's"):
        index.get_scores(["w1"], statistics=BM25Statistics(5, 10, {"w1": 1}))
    with pytest.raises(ValueError, match=r"doc_freqs\['w0'\]"):
        BM25Statistics(2, 3, {"w0": 3})
    with pytest.raises(ValueError, match="n_docs"):
        BM25Statistics(-1, 3)
    with pytest.raises(TypeError, match="BM25Statistics"):
        combine_statistics([{"n_docs": 1}])


def test_statistics_pickle_and_combine():
    import pickle
    s = BM25Statistics(3, 7, {"a": 1, "b": 2})
    assert pickle.loads(pickle.dumps(s)) == s
    c = combine_statistics([s, BM25Statistics(2, 4, {"a": 2, "c": 0})])
    assert (c.n_docs, c.total_length, dict(c.doc_freqs)) == (5, 11, {"a": 3, "b": 2, "c": 0})
