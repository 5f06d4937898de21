"""The native BM25 query path (QueryEncoder) against the plain-Python reference, its bounded
stem cache, and memory that stays flat over a million distinct query words."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ragcore
from ragcore import _core
from ragcore.reference.sparse import bm25_matches, bm25_query_terms, bm25_scores
from ragcore.sparse.tokenizer import QUERY_CACHE_WORDS

from _hits_check import assert_hits_close, assert_hits_equal

Stemmer = pytest.importorskip("Stemmer")

# Words that collide after stemming (run/running/runs), stopwords in several cases, and
# non-ASCII words (final sigma, a dotted capital I).
WORDS = ["run", "running", "runs", "Runner", "the", "The", "and", "connect", "connected",
         "connection", "Σίσυφος", "ΣΊΣΥΦΟΣ", "İstanbul", "x1", "a", "data", "databases", "zz9"]
SEPARATORS = [" ", ", ", ". ", "\n", "-", "'s "]

texts = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), max_size=12).map(
    lambda parts: "".join(w + s for w, s in parts))
token_lists = st.lists(st.sampled_from(WORDS + ["RUN"]), max_size=10)


def encoded(index, queries):
    return [a.tolist() for a in index._encode_queries(queries)]


def expected(index, queries, pretokenized):
    stem = Stemmer.Stemmer(index.stemmer).stemWord if index.stemmer else None
    term_ids = {t: i for i, t in enumerate(index.vocabulary)}
    return [a.tolist() for a in bm25_query_terms(queries, term_ids, index.stopwords, stem,
                                                 pretokenized)]


@pytest.mark.parametrize("stemmer", [None, "english"])
@pytest.mark.parametrize("stopwords", [None, "en"])
@settings(max_examples=60, deadline=None)
@given(docs=st.lists(texts, min_size=1, max_size=6), queries=st.lists(texts, max_size=6),
       token_queries=st.lists(token_lists, min_size=1, max_size=4))
def test_queries_encode_as_the_reference(stemmer, stopwords, docs, queries, token_queries):
    index = ragcore.BM25Index(stopwords=stopwords, stemmer=stemmer)
    index.index(docs)
    assert encoded(index, queries) == expected(index, queries, False)
    assert encoded(index, token_queries) == expected(index, token_queries, True)
    for query in queries[:2]:  # one str: the single-query path
        assert encoded(index, query) == expected(index, [query], False)


def test_terms_added_later_are_found_by_cached_words():
    index = ragcore.BM25Index(stemmer="english")
    index.index(["connection data"])
    assert encoded(index, "connected networks")[0] == [0]  # "networks" is no term yet
    index.add(["networking"])
    assert encoded(index, "connected networks")[0] == [0, 2]


def test_search_matches_the_reference_after_copy_save_and_load(tmp_path):
    index = ragcore.BM25Index(stemmer="english")
    index.index(["running data", "the connection", "runs connected databases"])
    path = tmp_path / "i.rbm25"
    index.save(path)
    queries = ["run connection", "databases the", "nothing"]
    want = index.search(queries, 3)
    for other in (index.copy(), ragcore.BM25Index.load(path)):
        got = other.search(queries, 3)
        np.testing.assert_array_equal(got.ids, want.ids)
        np.testing.assert_array_equal(got.scores, want.scores)


class CountingStemmer:
    def __init__(self):
        self.asked: list[str] = []

    def __call__(self, words):
        self.asked.extend(words)
        return [w.rstrip("s") for w in words]


def test_stemmer_is_asked_once_per_word_until_evicted():
    stem = CountingStemmer()
    enc = _core.QueryEncoder(["the"], stem_words=stem, cache_words=2)
    enc.add_terms(["cat", "dog", "bird"])
    terms, weights, offsets = enc.encode(["the cats cats dogs", "cat"])
    assert terms.tolist() == [0, 1, 0] and weights.tolist() == [2.0, 1.0, 1.0]
    assert offsets.tolist() == [0, 2, 3]
    assert stem.asked == ["cats", "dogs", "cat"]  # once each, stopwords never
    assert enc.cached_words == 2  # the bound: "cats" (least recently used) went out
    enc.encode(["dogs cat"])
    assert stem.asked == ["cats", "dogs", "cat"]
    enc.encode(["cats"])
    assert stem.asked[-1] == "cats"


def test_a_bad_stemmer_is_a_clear_error():
    enc = _core.QueryEncoder([], stem_words=lambda words: words[:-1])
    with pytest.raises(ValueError, match="returned 1 stems for 2 words"):
        enc.encode(["ab cd"])
    enc = _core.QueryEncoder([], stem_words=lambda words: [1] * len(words))
    with pytest.raises(TypeError, match="must return str"):
        enc.encode(["ab"])
    enc.add_terms(["ab"])
    with pytest.raises(ValueError, match="'ab' is already present"):
        enc.add_terms(["ab"])


def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_memory_stays_flat_over_a_million_distinct_query_words():
    index = ragcore.BM25Index(stemmer="english")
    index.index(["word1 word2 something"])
    words_per_call, calls = 10_000, 100
    tracemalloc.start()
    try:
        for call in range(calls):
            base = call * words_per_call
            queries = [" ".join(f"q{base + i + j}z" for j in range(100))
                       for i in range(0, words_per_call, 100)]
            index.search(queries, 1)
            del queries
            if call == 19:  # the cache has been full for a while
                python_before, rss_before = tracemalloc.get_traced_memory()[0], _resident_bytes()
        python_after, rss_after = tracemalloc.get_traced_memory()[0], _resident_bytes()
    finally:
        tracemalloc.stop()
    assert python_after - python_before < 256 << 10
    # 800,000 more distinct words, kept, would take about 100 MB.
    assert rss_after - rss_before < 8 << 20, f"grew {(rss_after - rss_before) >> 20} MiB"
    assert index.query_cache_words == QUERY_CACHE_WORDS


def test_concurrent_searches_and_adds_with_a_stemmer():
    """Searches stem new words (the stemmer takes the GIL inside the native call) while
    other threads search and add: no deadlock, and every answer matches a fresh encoding."""
    import threading

    index = ragcore.BM25Index(stemmer="english")
    index.index([f"running{i} connection{i % 7} data" for i in range(200)])
    errors: list[BaseException] = []

    def searcher(seed):
        try:
            for i in range(150):
                query = f"connections{(seed + i) % 7} runs{seed}x{i} data"
                hits = index.search(query, 3)
                assert hits.ids.shape == (1, 3)
        except BaseException as err:  # reported below, in the main thread
            errors.append(err)

    def adder():
        try:
            for i in range(20):
                index.add([f"runs{i}x{i} datum{i}"])
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=searcher, args=(s,)) for s in range(4)]
    threads.append(threading.Thread(target=adder))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a search or add did not finish"
    assert not errors, errors[0]
    queries = ["connections3 runs0x0 data", "runs5x5 datum5"]
    assert encoded(index, queries) == expected(index, queries, False)


# The one-str path encodes a query of at most 64 distinct terms (no stemmer) into
# per-thread arrays with a linear de-duplication, and longer ones as a batch does.
MANY = [f"w{i}" for i in range(100)] + ["the", "and"]


@pytest.mark.parametrize("stopwords", [None, "en"])
@settings(max_examples=40, deadline=None)
@given(docs=st.lists(st.lists(st.sampled_from(MANY), min_size=1, max_size=30).map(" ".join),
                     min_size=1, max_size=20),
       words=st.lists(st.sampled_from(MANY + ["absent"]), max_size=150),
       k=st.integers(1, 25))
def test_one_str_query_equals_the_batch_and_the_reference(stopwords, docs, words, k):
    index = ragcore.BM25Index(stopwords=stopwords)
    index.index(docs)
    query = " ".join(words)
    got = index.search(query, k, n_threads=1)
    assert type(got) is ragcore.Hits and got.scores.dtype == np.float32 and got.ids.dtype == np.int64
    want = index.search([query], k, algorithm="auto")
    assert_hits_equal(got, want)
    def kept(tokens):
        return [w for w in tokens if w not in index.stopwords]

    tokens = [kept(d.split()) for d in docs]
    held = bm25_matches(tokens, kept(words))
    ref = bm25_scores(tokens, kept(words))[None, held]
    assert_hits_close(got, ref, np.flatnonzero(held), k, atol=1e-4 * (1 + np.abs(ref).max(initial=0)))


@settings(max_examples=30, deadline=None)
@given(docs=st.lists(texts, min_size=1, max_size=6), query=texts, k=st.integers(1, 8))
def test_one_str_query_with_a_stemmer_equals_the_batch(docs, query, k):
    index = ragcore.BM25Index(stemmer="english")
    index.index(docs)
    assert_hits_equal(index.search(query, k), index.search([query], k))
