"""BM25Index input handling: texts, bytes, pre-tokenized lists, stopwords and stemming
applied alike to documents and queries, and clear errors for bad arguments."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from ragcore import BM25Index, Hits
from _bm25_corpora import build, zipf_corpus, zipf_queries
from _hits_check import assert_hits_equal

TEXTS = ["The Cat sat on the mat.", "Cats and DOGS!", "a dog, a cat; the end"]


def test_texts_bytes_and_tokens_agree():
    by_text = BM25Index(stopwords=None)
    by_text.add(TEXTS)
    by_bytes = BM25Index(stopwords=None)
    by_bytes.add([t.encode() for t in TEXTS])
    by_tokens = BM25Index(stopwords=None)
    by_tokens.add([["the", "cat", "sat", "on", "the", "mat"], ["cats", "and", "dogs"],
                   ["dog", "cat", "the", "end"]])
    for other in (by_bytes, by_tokens):
        assert_hits_equal(by_text.search(["the cat", "DOG"], 3), other.search(["the cat", "DOG"], 3))
    assert_hits_equal(by_text.search("cat", 2), by_text.search([["cat"]], 2))


def test_stopwords_apply_to_queries_too():
    index = BM25Index()  # stopwords="en"
    index.add(TEXTS)
    assert index.doc_freq("the") == 0 and index.doc_freq("cat") == 2
    np.testing.assert_array_equal(index.get_scores("the"), np.zeros(3, dtype=np.float32))
    assert_hits_equal(index.search("the cat", 3), index.search("cat", 3))


def test_stemmer_applies_to_queries_too():
    pytest.importorskip("Stemmer")
    index = BM25Index(stemmer="english")
    index.add(TEXTS)
    assert index.doc_freq("cat") == 3 and "cats" not in index.vocabulary
    assert_hits_equal(index.search("cats", 3), index.search("cat", 3))


def test_search_threads_and_concurrent_adds():
    corpus = zipf_corpus(2000, seed=1)
    index = build(corpus)
    qs = zipf_queries(50)
    want = index.search(qs, 10, n_threads=1)
    assert_hits_equal(index.search(qs, 10, n_threads=0), want)
    errors = []

    def searcher():
        try:
            for _ in range(5):
                hits = index.search(qs, 10, n_threads=2)
                assert hits.ids.shape == (50, 10) and (hits.ids >= 0).all()
        except Exception as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=searcher) for _ in range(3)]
    for t in threads:
        t.start()
    index.add(corpus[:200], ids=np.arange(10_000, 10_200))
    index.remove(np.arange(10_000, 10_200))
    for t in threads:
        t.join()
    assert errors == []
    assert_hits_equal(index.search(qs, 10), want)


def test_result_shape_and_padding():
    index = build([["a"], ["b"]])
    hits = index.search([["a"], ["zzz"]], 4)
    assert isinstance(hits, Hits) and hits.scores.shape == (2, 4)
    # Only documents holding a query term are results: the rest is padding (-1, -inf).
    assert hits.ids[0].tolist() == [0, -1, -1, -1] and np.isneginf(hits.scores[0, 1:]).all()
    assert hits.ids[1].tolist() == [-1, -1, -1, -1] and np.isneginf(hits.scores[1]).all()
    assert index.search([], 3).ids.shape == (0, 3)


@pytest.mark.parametrize("kw, error, match", [
    (dict(k1=-1), ValueError, "k1 must be a finite number"),
    (dict(k1="1"), TypeError, "k1 must be a number"),
    (dict(b=1.5), ValueError, "b must be a finite number in \\[0, 1\\]"),
    (dict(delta=float("nan")), ValueError, "delta"),
    (dict(variant="bm26"), ValueError, "unknown variant"),
    (dict(variant="bm25l", k1=0, delta=0), ValueError, "k1 \\+ delta > 0"),
    (dict(stopwords=3), TypeError, "stopwords"),
    (dict(stemmer=len), TypeError, "stemmer must be None or a Snowball language name"),
    (dict(lucene_norms=1), TypeError, "lucene_norms must be True or False"),
])
def test_bad_parameters(kw, error, match):
    with pytest.raises(error, match=match):
        BM25Index(**kw)


def test_bad_calls():
    index = build([["a"], ["b"]])
    with pytest.raises(ValueError, match="k must be >= 1"):
        index.search("a", 0)
    with pytest.raises(TypeError, match="n_threads must be an integer"):
        index.search("a", 1, n_threads=1.5)
    with pytest.raises(ValueError, match="unknown algorithm 'wand'"):
        index.search("a", 1, algorithm="wand")
    with pytest.raises(TypeError, match="queries must be a str"):
        index.search(np.array(["a"]), 1)
    with pytest.raises(TypeError, match="queries\\[1\\] must be a str, bytes or a list"):
        index.search(["a", 3], 1)
    with pytest.raises(TypeError, match="mixes texts and token lists"):
        index.search(["a", ["b"]], 1)
    with pytest.raises(TypeError, match="tokens must be str"):
        index.search([["a", 3]], 1)
    with pytest.raises(TypeError, match="query must be a str or a list of str tokens"):
        index.get_scores(3)
    with pytest.raises(ValueError, match="ids must be a 1-D array of 2 ids"):
        index.add(["x", "y"], ids=[1])
    with pytest.raises(ValueError, match="ids must be non-negative"):
        index.add(["x"], ids=[-3])
    with pytest.raises(ValueError, match="ids contains 9 more than once"):
        index.add(["x", "y"], ids=[9, 9])
    with pytest.raises(TypeError, match="document 0: tokens must be str"):
        index.add([["x", 1]])
    with pytest.raises(TypeError, match="ids must hold integers"):
        index.remove([0.5])


def test_one_query_path_returns_the_hits_of_the_batch_path():
    # One str's hits are made natively without the constructor's checks: they must be
    # what the checked constructor would accept, and equal the batch's row.
    index = BM25Index(stopwords=None)
    index.add(zipf_corpus(500, seed=3), ids=np.arange(500) * 3 + 1)
    for q in zipf_queries(20, seed=4):
        text = " ".join(q)
        for k in (1, 10, 600):
            one = index.search(text, k)
            assert type(one) is Hits
            Hits(one.scores, one.ids)  # the constructor's checks pass
            batch = index.search([text, text], k)
            np.testing.assert_array_equal(one.ids, batch.ids[:1])
            np.testing.assert_array_equal(one.scores, batch.scores[:1])
