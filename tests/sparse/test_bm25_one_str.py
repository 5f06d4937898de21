"""BM25Index.search(str, k): one query through the search entry, against a batch holding it,
bit for bit, and against the numpy reference; equivalent arguments of other types give the
same hits and bad ones a clear error; the entry follows the index it belongs to across
index(), copy(), load(), add and remove."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ragcore import BM25Index, Hits
from ragcore.reference.sparse import bm25_matches, bm25_scores
from ragcore.sparse.variants import VARIANTS

from _hits_check import assert_hits_close, assert_hits_equal

WORDS = [f"w{i}" for i in range(80)] + ["the", "and", "Ünï", "straße"]
documents = st.lists(st.lists(st.sampled_from(WORDS), min_size=0, max_size=25).map(" ".join),
                     min_size=1, max_size=40)
# Empty, unknown-word, duplicate-word and long (> 64 distinct terms) queries.
query_words = st.lists(st.sampled_from(WORDS + ["absent", "W3", "w1"]), max_size=90)


def batched(index: BM25Index, query: str, k: int) -> Hits:
    """The same query in a batch (a list of two copies: its first row)."""
    both = index.search([query, query], k, n_threads=1)
    return Hits(both.scores[:1], both.ids[:1])


@settings(max_examples=80, deadline=None)
@given(docs=documents, words=query_words, k=st.integers(1, 60), variant=st.sampled_from(VARIANTS),
       lucene_norms=st.booleans(), stopwords=st.sampled_from([None, "en"]),
       shuffled_ids=st.booleans(), removed=st.sets(st.integers(0, 39), max_size=12),
       data=st.data())
def test_one_str_equals_the_batch_bit_for_bit(docs, words, k, variant, lucene_norms, stopwords,
                                              shuffled_ids, removed, data):
    index = BM25Index(k1=1.2, b=0.75, variant=variant, lucene_norms=lucene_norms,
                      stopwords=stopwords)
    n = len(docs)
    ids = np.arange(n, dtype=np.int64)
    if shuffled_ids:  # external ids that do not ascend with the slots
        ids = np.asarray(data.draw(st.permutations(range(n))), dtype=np.int64) * 7 + 3
    index.add(docs, ids=ids)
    gone = sorted(r for r in removed if r < n - 1)  # keep at least one document
    if gone:
        index.remove(ids[gone])
    query = " ".join(words)
    got = index.search(query, k, n_threads=1)
    assert type(got) is Hits and got.scores.shape == (1, k) and got.ids.shape == (1, k)
    assert got.scores.dtype == np.float32 and got.ids.dtype == np.int64
    assert got.scores.flags.c_contiguous and got.ids.flags.c_contiguous
    Hits(got.scores, got.ids)  # what the checked constructor accepts
    assert_hits_equal(got, batched(index, query, k))
    assert_hits_equal(index.search(query, k), got)  # n_threads=0: the same hits

    # The reference: scores of the live documents (stopwords dropped as the index does).
    keep = [i for i in range(n) if i not in gone]
    def kept(tokens):
        return [w for w in tokens if w not in index.stopwords]
    corpus = [kept(docs[i].lower().split()) for i in keep]
    tokens = kept(query.lower().split())
    held = bm25_matches(corpus, tokens)  # only documents holding a query term are results
    ref = bm25_scores(corpus, tokens, k1=1.2, b=0.75, variant=variant,
                      lucene_norms=lucene_norms)[None, held]
    assert_hits_close(got, ref, ids[keep][held], k, atol=1e-4 * (1 + np.abs(ref).max(initial=0)))


def test_equivalent_arguments_give_the_same_hits_and_bad_ones_an_error():
    index = BM25Index(stopwords=None)
    index.add(["a b c", "b c", "c d", "e"])
    want = index.search("b c", 3)
    # Equivalent arguments of other types: the same hits.
    for k in (np.int64(3), np.int32(3)):
        assert_hits_equal(index.search("b c", k), want)
    assert_hits_equal(index.search("b c", 3, n_threads=np.int64(1)), want)
    assert_hits_equal(index.search("b c", 3, algorithm="maxscore"), want)
    assert_hits_equal(index.search("b c", 3, allow=[0, 1, 2, 3]), want)
    assert_hits_equal(index.search(b"b c", 3), want)

    class Text(str):
        pass

    assert_hits_equal(index.search(Text("b c"), 3), want)
    assert_hits_equal(index.search("b c", 3, n_threads=1 << 20), want)  # capped, not refused
    # Bad arguments: errors that name them.
    with pytest.raises(ValueError, match="k must be >= 1"):
        index.search("b c", 0)
    with pytest.raises(ValueError, match="k must be >= 1"):
        index.search("b c", -5)
    with pytest.raises(TypeError, match="k must be"):
        index.search("b c", True)
    with pytest.raises(TypeError, match="k must be"):
        index.search("b c", 2.0)
    with pytest.raises(ValueError, match="k: .* results for each query exceed"):
        index.search("b c", 1 << 80)
    with pytest.raises(TypeError, match="n_threads must be an integer"):
        index.search("b c", 3, n_threads=False)
    with pytest.raises(ValueError, match="n_threads must be >= 0"):
        index.search("b c", 3, n_threads=-1)
    with pytest.raises(ValueError, match="unknown algorithm 'AUTO'"):
        index.search("b c", 3, algorithm="AUTO")
    with pytest.raises(ValueError, match="lone surrogate"):
        index.search("b \ud800", 3)
    with pytest.raises(ValueError, match="k: .* results"):
        index.search("b c", 1 << 60)


def test_the_entry_follows_the_index_through_replacement_copy_and_load(tmp_path):
    index = BM25Index(stopwords=None)
    index.add(["aa bb", "bb cc"])
    index.index(["xx yy", "yy zz", "zz"])  # a new native index: searches read the new pair
    assert index.search("zz", 2).ids.tolist() == [[2, 1]]
    index.add(["zz zz zz"])
    index.remove([2])
    assert index.search("zz", 3).ids.tolist() == [[3, 1, -1]]  # "aa bb" holds no "zz"
    assert_hits_equal(index.search("zz", 3), batched(index, "zz", 3))
    clone = index.copy()
    clone.add(["zz"], ids=[9])
    assert index.search("zz", 3).ids.tolist() == [[3, 1, -1]]
    assert sorted(clone.search("zz", 2).ids[0].tolist()) == [3, 9]
    assert_hits_equal(clone.search("zz", 3), batched(clone, "zz", 3))
    index.save(tmp_path / "i.bm25")
    loaded = BM25Index.load(tmp_path / "i.bm25")
    assert_hits_equal(loaded.search("zz yy", 4), index.search("zz yy", 4))
    assert_hits_equal(loaded.search("zz yy", 4), batched(loaded, "zz yy", 4))


def test_an_index_is_freed_without_the_cycle_collector():
    index = BM25Index(stopwords=None)
    index.add(["a b", "b c"])
    index.search("b", 1)
    gone = weakref.ref(index)
    gc.disable()
    try:
        del index
        assert gone() is None  # nothing the index holds refers back to it
    finally:
        gc.enable()


class _SlowSwap(BM25Index):
    """index() sets the replaced attributes one by one; a pause after each lets the
    searching threads run between them (else a mix is caught only by chance)."""

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if name.startswith("_") and name != "_lock":
            time.sleep(0.0002)


def _searches_while_replaced(args, searches, swaps):
    """Three threads call index.search(*args) `searches` times each while index() swaps
    two document sets `swaps` times; asserts every answer is one whole index's."""
    old = ["aa bb", "bb cc", "cc dd"]
    new = ["xx yy", "zz ww", "yy bb", "bb bb bb"]  # "bb": term 1 of old, 4 of new
    index = _SlowSwap(stopwords=None)
    index.index(old)
    answers = set()
    for docs in (old, new):
        ref = BM25Index(stopwords=None)
        ref.index(docs)
        answers.add(tuple(ref.search(*args).ids[0].tolist()))
    seen, errors = [], []

    def searcher():
        try:
            for _ in range(searches):
                seen.append(tuple(index.search(*args).ids[0].tolist()))
        except BaseException as err:  # reported below
            errors.append(err)

    threads = [threading.Thread(target=searcher) for _ in range(3)]
    for t in threads:
        t.start()
    for i in range(swaps):
        index.index(new if i % 2 == 0 else old)
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads) and not errors
    assert set(seen) <= answers and len(seen) == 3 * searches


def test_str_searches_on_threads_while_the_index_is_replaced():
    # A search reads the encoder and the native index as one pair: one that runs while
    # index() swaps them answers from one whole index, the old or the new, never a mix.
    _searches_while_replaced(("bb", 3, 1), searches=300, swaps=40)


@pytest.mark.parametrize("args", [(["bb"], 3), ("bb", 3, 1, "exhaustive"),
                                  ("bb", 3, 1, "auto", [0, 1, 2, 3])],
                         ids=["list", "algorithm", "allow"])
def test_batch_searches_on_threads_while_the_index_is_replaced(args):
    # Lists, algorithms and filters too: index() once set the pair's parts one after the
    # other, so a search between the two encoded its words with one vocabulary and scored
    # them in the other index (a silent wrong answer).
    _searches_while_replaced(args, searches=300, swaps=120)
