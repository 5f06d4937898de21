"""BM25Index.search(allow=...): the filter applied inside exhaustive, MaxScore and Block-Max
WAND returns exactly what exhaustive scoring followed by the filter returns (identical ids and
scores), for every variant; and the scores agree with the reference formulas."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _bm25_corpora import (VARIANTS, build, build_shuffled, corpora, queries, shuffled_docs,
                           top_k_of_matches, zipf_corpus, zipf_queries)
from _hits_check import assert_hits_close, assert_hits_equal
from ragcore.hits import Hits
from ragcore.reference import bm25_matches, bm25_scores

ALGORITHMS = ("exhaustive", "maxscore", "bmw", "bmp", "auto")


def filter_after_exhaustive(index, docs_of, qs, k, allowed_ids) -> Hits:
    """Every live document scored (get_scores: the exhaustive sums), then the filter and the
    match rule (a document holding a query term), then the top-k by score, ties by id."""
    keep = np.isin(index.ids, np.asarray(sorted(allowed_ids), dtype=np.int64))
    rows = [top_k_of_matches(index, docs_of, q, k, keep=keep) for q in qs]
    return Hits(np.vstack([r.scores for r in rows]), np.vstack([r.ids for r in rows]))


def assert_filtered_exact(index, docs_of, qs, k, allowed_ids, allow_arg=None, n_threads=1):
    want = filter_after_exhaustive(index, docs_of, qs, k, allowed_ids)
    allow_arg = sorted(allowed_ids) if allow_arg is None else allow_arg
    for algorithm in ALGORITHMS:
        got = index.search(qs, k, n_threads=n_threads, algorithm=algorithm, allow=allow_arg)
        assert_hits_equal(got, want)


@settings(max_examples=80, deadline=None)
@given(corpus=corpora, qs=st.lists(queries, min_size=1, max_size=4),
       variant=st.sampled_from(VARIANTS), k=st.integers(1, 35), seed=st.integers(0, 2**31),
       n_removed=st.integers(0, 5), fraction=st.floats(0.0, 1.0))
def test_every_algorithm_equals_exhaustive_then_filter(corpus, qs, variant, k, seed, n_removed,
                                                       fraction):
    index = build_shuffled(corpus, variant, seed, n_removed)
    docs_of = shuffled_docs(corpus, seed)
    rng = np.random.default_rng(seed + 1)
    live = index.ids
    allowed = set(live[rng.random(len(live)) < fraction].tolist())
    allowed |= {int(live.max()) + 5}  # an id not in the index is simply never returned
    assert_filtered_exact(index, docs_of, qs, k, allowed)
    # The same filter as a boolean mask indexed by id.
    mask = np.zeros(int(live.max()) + 1, dtype=bool)
    mask[[i for i in allowed if i < len(mask)]] = True
    assert_filtered_exact(index, docs_of, qs, k, allowed, allow_arg=mask)


@settings(max_examples=60, deadline=None)
@given(corpus=corpora, query=queries, variant=st.sampled_from(VARIANTS), k=st.integers(1, 35),
       seed=st.integers(0, 2**31))
def test_filtered_scores_match_the_reference(corpus, query, variant, k, seed):
    index = build(corpus, variant=variant)
    allowed = np.flatnonzero(np.random.default_rng(seed).random(len(corpus)) < 0.5)
    allowed_matches = allowed[bm25_matches(corpus, query)[allowed]]
    ref = bm25_scores(corpus, query, variant=variant)[allowed_matches]
    for algorithm in ALGORITHMS:
        got = index.search([query], k, algorithm=algorithm, allow=allowed)
        if len(allowed_matches) == 0:
            assert (got.ids == -1).all() and np.isneginf(got.scores).all()
            continue
        assert_hits_close(got, ref[None, :], allowed_matches, k,
                          atol=1e-4 * (1 + np.abs(ref).max()))


@pytest.fixture(scope="module")
def zipf_index():
    """(index, id -> tokens)"""
    docs = zipf_corpus(3000, seed=11)
    ids = np.random.default_rng(3).permutation(3000) * 5 + 2  # out of insertion order
    index = build(docs, variant="lucene", ids=ids)
    index.remove(ids[::17])
    return index, dict(zip(ids.tolist(), docs))


@pytest.mark.parametrize("fraction", [0.001, 0.01, 0.1, 0.5, 1.0])
def test_many_blocks_at_each_selectivity(zipf_index, fraction):
    zipf_index, docs_of = zipf_index
    live = zipf_index.ids
    allowed = set(np.random.default_rng(7).choice(live, max(1, int(fraction * len(live))),
                                                  replace=False).tolist())
    qs = zipf_queries(30, seed=4)
    for k in (1, 10, 100):
        assert_filtered_exact(zipf_index, docs_of, qs, k, allowed)
    assert_filtered_exact(zipf_index, docs_of, qs, 10, allowed, n_threads=3)


@pytest.mark.parametrize("variant", ["bm25l", "bm25+"])
def test_base_scores_never_fill_a_filtered_row(variant):
    # bm25l / bm25+ give every document a base score, but a document holding no query term
    # is not a result: past the allowed matches the row is padding, and a query of absent
    # words gets none at all.
    docs = zipf_corpus(1500, seed=9)
    index = build(docs, variant=variant)
    allowed = set(range(0, 1500, 3))
    assert_filtered_exact(index, docs, [["t0"], ["absent"], ["t399", "t398"]], 600, allowed)
    got = index.search([["absent"], ["t399", "t398"]], 600, allow=sorted(allowed))
    assert (got.ids[0] == -1).all() and np.isneginf(got.scores[0]).all()
    holders = [d for d in allowed if {"t399", "t398"} & set(docs[d])]
    assert sorted(got.ids[1][got.ids[1] >= 0].tolist()) == sorted(holders)


def test_sparse_ids_use_a_mask_by_slot():
    # Ids far beyond the document count: the mask is built by slot, not by id.
    docs = zipf_corpus(500, seed=2)
    ids = np.arange(500, dtype=np.int64) * 10_000_019 + 3
    index = build(docs, ids=ids)
    index.remove(ids[:7])
    allowed = set(ids[::4].tolist())
    assert_filtered_exact(index, dict(zip(ids.tolist(), docs)), zipf_queries(10, seed=8), 10, allowed)


def test_empty_allow_returns_padding_and_bad_allow_is_refused(zipf_index):
    zipf_index, _ = zipf_index
    got = zipf_index.search(["t1 t2"], 5, allow=[])
    assert (got.ids == -1).all() and np.isneginf(got.scores).all()
    with pytest.raises(ValueError, match="allow"):
        zipf_index.search(["t1"], 5, allow=[-1])
    with pytest.raises(TypeError, match="allow"):
        zipf_index.search(["t1"], 5, allow=np.array([1.5]))
    with pytest.raises(ValueError, match="allow"):
        zipf_index.search(["t1"], 5, allow=np.zeros((2, 2), dtype=np.int64))
