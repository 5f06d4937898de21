"""add / remove without a rebuild give exactly the index rebuilt from the survivors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ragcore import BM25Index
from _bm25_corpora import VARIANTS, build, corpora, queries, zipf_corpus, zipf_queries
from _hits_check import assert_hits_equal


def assert_same_results(a: BM25Index, b: BM25Index, qs, k: int) -> None:
    assert len(a) == len(b)
    assert a.avgdl == b.avgdl
    for algorithm in ("exhaustive", "maxscore", "bmw", "bmp"):
        assert_hits_equal(a.search(qs, k, algorithm=algorithm), b.search(qs, k, algorithm=algorithm))
    order_a, order_b = np.argsort(a.ids), np.argsort(b.ids)
    for q in qs:
        np.testing.assert_array_equal(a.get_scores(q)[order_a], b.get_scores(q)[order_b])


@settings(max_examples=40, deadline=None)
@given(first=corpora, second=corpora, qs=st.lists(queries, min_size=1, max_size=3),
       variant=st.sampled_from(VARIANTS), data=st.data())
def test_add_then_remove_equals_rebuild(first, second, qs, variant, data):
    corpus = first + second
    ids = np.arange(len(corpus)) * 2 + 1
    grown = build(first, variant=variant, ids=ids[: len(first)])
    grown.add(second, ids=ids[len(first) :])
    gone = data.draw(st.sets(st.sampled_from(ids.tolist()), max_size=len(ids) - 1))
    if gone:
        grown.remove(sorted(gone))
    keep = [i for i, d in enumerate(ids) if d not in gone]
    rebuilt = build([corpus[i] for i in keep][::-1], variant=variant, ids=ids[keep][::-1])
    assert_same_results(grown, rebuilt, qs, k=len(corpus) + 1)


@pytest.mark.parametrize("variant", ["lucene", "bm25+"])
def test_many_blocks_add_remove(variant):
    corpus = zipf_corpus(2500, seed=9)
    ids = np.arange(len(corpus), dtype=np.int64)
    index = build(corpus[:1000], variant=variant, ids=ids[:1000])
    for start in range(1000, 2500, 300):  # appends into partial last blocks
        index.add(corpus[start : start + 300], ids=ids[start : start + 300])
    rng = np.random.default_rng(0)
    gone = rng.choice(ids, size=700, replace=False)
    index.remove(gone[:350])
    index.remove(gone[350:])
    keep = np.setdiff1d(ids, gone)
    rebuilt = build([corpus[i] for i in keep], variant=variant, ids=keep)
    assert_same_results(index, rebuilt, zipf_queries(25), k=10)
    assert index.doc_freq("t0") == rebuilt.doc_freq("t0")


def test_remove_everything_then_add():
    index = build([["a", "b"], ["b"]])
    index.remove([0, 1])
    assert len(index) == 0
    hits = index.search("a", 2)
    assert (hits.ids == -1).all() and np.isneginf(hits.scores).all()
    index.add([["b", "c"]], ids=[0])
    assert index.search([["c"]], 2).ids.tolist() == [[0, -1]]


def test_index_replaces_contents():
    index = build([["a"], ["b"]])
    index.index([["c"], ["c", "d"]], ids=[10, 11])
    assert index.ids.tolist() == [10, 11] and index.doc_freq("a") == 0
    assert index.search([["c"]], 2).ids.tolist() == [[10, 11]]


def test_default_ids_continue_after_the_largest():
    index = BM25Index()
    assert index.add(["x y", "y z"]).tolist() == [0, 1]
    assert index.add(["z"], ids=[10]).tolist() == [10]
    assert index.add(["w"]).tolist() == [11]


def test_failed_add_changes_nothing():
    index = build([["a"]], ids=[0])
    with pytest.raises(ValueError, match="document 1 is not valid UTF-8"):
        index.add(["fine text", b"\xff bad"])
    with pytest.raises(ValueError, match="already in the index"):
        index.add(["x"], ids=[0])
    with pytest.raises(ValueError, match="not in the index"):
        index.remove([0, 5])
    assert index.ids.tolist() == [0] and len(index) == 1
