"""BM25 scores: native against the reference registry, worked examples, Lucene norms."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ragcore
from ragcore import BM25Index, reference
from ragcore.reference import (BM25_VARIANTS, bm25_absent_part, bm25_matches, bm25_scores,
                               lucene_norm_length)

from _bm25_corpora import VARIANTS, build, corpora, queries
from _hits_check import assert_hits_close

WORKED = [
    "neural networks learn neural representations",
    "sparse retrieval ranks documents",
    "dense vectors encode semantic meaning",
]


def test_worked_example_okapi():
    index = build([d.split() for d in WORKED], variant="okapi", k1=1.5, b=0.75)
    hits = index.search([["neural", "retrieval"]], k=3)
    # Document 2 holds neither word: not a result, so the row ends in padding.
    np.testing.assert_array_equal(hits.ids, [[0, 1, -1]])
    np.testing.assert_array_equal(np.round(hits.scores.astype(np.float64), 2)[:, :2], [[0.71, 0.55]])
    assert np.isneginf(hits.scores[0, 2])
    np.testing.assert_allclose(hits.scores[0, :2], bm25_scores([d.split() for d in WORKED],
                                                               ["neural", "retrieval"], variant="okapi")[:2],
                               rtol=1e-6)


def test_registry_and_native_agree_on_the_variant_list():
    assert tuple(BM25_VARIANTS) == VARIANTS == ragcore.sparse.VARIANTS
    absent = {name for name, v in ragcore.sparse.variants.REGISTRY.items() if v.scores_absent_terms}
    assert absent == {name for name in VARIANTS if bm25_absent_part(name, 1.2, 0.5) > 0}
    with pytest.raises(ValueError, match="unknown variant 'bm26'.*'lucene'.*'bm25\\+'"):
        BM25Index(variant="bm26")


def assert_scores_match(native: np.ndarray, ref: np.ndarray) -> None:
    # Relative error <= 1e-6; okapi's negative idf can cancel a sum to near zero, so
    # the scale of the largest score also bounds the error.
    scale = max(1.0, float(np.abs(ref).max(initial=0.0)))
    np.testing.assert_allclose(native, ref, rtol=1e-6, atol=1e-7 * scale)


@settings(max_examples=60, deadline=None)
@given(corpus=corpora, query=queries, variant=st.sampled_from(VARIANTS),
       k1=st.sampled_from([0.0, 0.9, 1.5, 3.0]), b=st.sampled_from([0.0, 0.4, 0.75, 1.0]),
       lucene_norms=st.booleans())
def test_native_equals_reference(corpus, query, variant, k1, b, lucene_norms):
    index = build(corpus, variant=variant, k1=k1, b=b, delta=0.7, lucene_norms=lucene_norms)
    ref = bm25_scores(corpus, query, k1=k1, b=b, variant=variant, delta=0.7, lucene_norms=lucene_norms)
    assert_scores_match(index.get_scores(query), ref)
    k = len(corpus) + 2
    hits = index.search([query], k)
    scale = max(1.0, float(np.abs(ref).max(initial=0.0)))
    held = bm25_matches(corpus, query)  # only these are results; the rest of the row is padding
    assert_hits_close(hits, ref[None, held], np.flatnonzero(held), k, atol=1e-6 * scale)


def test_repeated_query_terms_count_twice():
    corpus = [["a", "b"], ["b", "c", "c"], ["a"]]
    index = build(corpus)
    np.testing.assert_allclose(index.get_scores(["a", "a", "c"]),
                               bm25_scores(corpus, ["a", "a", "c"]), rtol=1e-6)


def test_bm25l_and_bm25plus_base_scores_are_not_matches():
    # Both formulas give a document without the query term a base score (get_scores keeps
    # it, as bm25s does), but only documents holding a query term are results.
    corpus = [["x"], ["y"], ["z", "z"], [], ["x", "y"], ["z"]]
    for variant in ("bm25l", "bm25+"):
        index = build(corpus, variant=variant, ids=[50, 40, 30, 20, 10, 5])
        ref = bm25_scores(corpus, ["z"], variant=variant)
        assert (ref > 0).all()
        assert_scores_match(index.get_scores(["z"]), ref)
        hits = index.search([["z"]], 5)
        np.testing.assert_array_equal(hits.ids[0], [30, 5, -1, -1, -1])
        assert_scores_match(hits.scores[0, :2], ref[[2, 5]])
        assert np.isneginf(hits.scores[0, 2:]).all()
        none = index.search([["absent"]], 3)
        assert (none.ids == -1).all() and np.isneginf(none.scores).all()


def lucene_small_float(i: int) -> int:
    """Lucene's SmallFloat.byte4ToInt(intToByte4(i)), transcribed from the Java."""
    def long_to_int4(v):
        bits = v.bit_length()
        if bits < 4:
            return v
        shift = bits - 4
        return ((v >> shift) & 0x07) | (shift + 1) << 3

    def int4_to_long(v):
        shift = (v >> 3) - 1
        return v & 0x07 if shift == -1 else ((v & 0x07) | 0x08) << shift

    free = 255 - long_to_int4(2**31 - 1)
    b = i if i < free else free + long_to_int4(i - free)
    return b if b < free else free + int4_to_long(b - free)


def test_lucene_norm_length():
    lengths = np.concatenate([np.arange(0, 5000), [2**20 + 12345, 2**31 - 1]])
    np.testing.assert_array_equal(lucene_norm_length(lengths), [lucene_small_float(int(i)) for i in lengths])
    np.testing.assert_array_equal(lucene_norm_length(np.arange(40)), np.arange(40))
    assert lucene_norm_length(41) < 41


def test_lucene_norms_change_scores_only_above_39():
    short = [["a"] * 3 + ["b"] * n for n in range(5, 30)]
    long_ = [["a"] * 3 + ["b"] * n for n in range(50, 90)]
    for corpus, same in ((short, True), (long_, False)):
        plain = build(corpus).get_scores(["a"])
        normed = build(corpus, lucene_norms=True).get_scores(["a"])
        assert np.array_equal(plain, normed) == same


def test_reference_rejects_unknown_variant():
    with pytest.raises(ValueError, match="unknown variant"):
        reference.bm25_scores([["a"]], ["a"], variant="nope")
