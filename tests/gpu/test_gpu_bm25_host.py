"""What GpuBM25Index scores with, checked on the CPU (runs without a GPU).

The GPU index adds the impacts BM25Index.impacts() exports with the weights
weigh_queries() gives, in query order, in float64, then rounds base + sum to
float32 (cuda/gpu_bm25.h). reference.bm25_impact_search does exactly that in
numpy; it must give BM25Index.search's hits to the bit, for every variant,
after removals and with ids that do not ascend with insertion order.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragcore
from ragcore.sparse.gpu import _rank_of_slot

from _bm25_plans import candidate_search, impact_search
from _bm25_corpora import VARIANTS, build, build_shuffled, corpora, queries, zipf_corpus, zipf_queries
from _hits_check import assert_hits_equal


@settings(max_examples=150, deadline=None)
@given(corpus=corpora, qs=st.lists(queries, min_size=1, max_size=4),
       variant=st.sampled_from(VARIANTS), k=st.integers(1, 35), seed=st.integers(0, 2**16),
       n_removed=st.integers(0, 5))
def test_impacts_give_the_cpu_hits_bit_for_bit(corpus, qs, variant, k, seed, n_removed):
    index = build_shuffled(corpus, variant, seed, n_removed)
    assert_hits_equal(impact_search(index, qs, k), index.search(qs, k))


@pytest.mark.parametrize("variant", VARIANTS)
def test_impacts_on_a_zipf_corpus_with_many_blocks(variant):
    index = build(zipf_corpus(3000, seed=4), variant)
    index.remove(np.arange(0, 3000, 7))
    qs = zipf_queries(40, seed=5)
    for k in (1, 10, 500):
        assert_hits_equal(impact_search(index, qs, k), index.search(qs, k))


def test_weigh_queries_skips_terms_without_live_documents():
    index = build([["a", "b"], ["b", "c"], ["c"]])
    index.remove([2])  # "c" survives in doc 1 only; nothing else changes
    index.remove([0])  # "a" now has no live document
    out_terms, out_weights, offsets, base = index.weighed_queries([["a", "b", "b"], ["zzz"]])
    vocab = index.vocabulary
    assert [vocab[t] if t >= 0 else None for t in out_terms] == [None, "b"]
    assert out_weights[0] == 0.0 and out_weights[1] > 0  # "b" twice: multiplicity 2
    assert list(base) == [0.0, 0.0]  # lucene: an absent term scores 0
    assert list(offsets) == [0, 2, 2]


def test_impacts_are_the_postings_in_csr_form():
    index = build([["a", "b", "a"], ["b"], ["c", "a"]], ids=[30, 10, 20])
    imp = index.impacts()
    vocab = index.vocabulary
    postings = {vocab[t]: list(imp["docs"][imp["offsets"][t]: imp["offsets"][t + 1]])
                for t in range(len(vocab))}
    assert postings == {"a": [0, 2], "b": [0, 1], "c": [2]}
    assert list(imp["slot_ids"]) == [30, 10, 20]
    ranks, sorted_ids = _rank_of_slot(imp["slot_ids"])
    assert list(ranks) == [2, 0, 1] and list(sorted_ids) == [10, 20, 30]
    assert imp["values"].dtype == np.float32 and (imp["values"] > 0).all()


def test_rank_of_slot_marks_removed_slots():
    ranks, sorted_ids = _rank_of_slot(np.array([5, -1, 3, -1, 9]))
    assert list(ranks) == [1, -1, 0, -1, 2] and list(sorted_ids) == [3, 5, 9]


def test_copy_is_independent_and_equal():
    index = build(zipf_corpus(500, seed=2), "bm25+")
    clone = index.copy()
    qs = zipf_queries(10, seed=3)
    assert_hits_equal(clone.search(qs, 20), index.search(qs, 20))
    clone.remove([0, 1, 2])
    assert len(clone) == len(index) - 3
    clone.add([["t1", "t2"]])
    assert index.search(qs, 20).ids.shape == (10, 20) and len(index) == 500
    assert index.to("cpu") is index


def test_to_cuda_without_a_device_is_a_clear_error():
    if ragcore.cuda_device_count() > 0:
        pytest.skip("a CUDA device is present")
    index = build([["a"]])
    with pytest.raises(RuntimeError, match="CUDA"):
        index.to("cuda")
    with pytest.raises(ValueError, match="device must be"):
        index.to("gpu")


@settings(max_examples=150, deadline=None)
@given(corpus=corpora, qs=st.lists(queries, min_size=1, max_size=4),
       variant=st.sampled_from(VARIANTS), k=st.integers(1, 12), seed=st.integers(0, 2**16),
       dense_min_df=st.sampled_from((1, 2, 4, 8, 1000)))
def test_pruned_search_is_exact(corpus, qs, variant, k, seed, dense_min_df):
    rng = np.random.default_rng(seed)
    index = build(corpus, variant, ids=rng.permutation(10 * len(corpus))[: len(corpus)])
    hits, _ = candidate_search(index, qs, k, dense_min_df)
    assert_hits_equal(hits, index.search(qs, k))


@pytest.mark.parametrize("variant", VARIANTS)
def test_pruning_decides_most_zipf_queries_without_falling_back(variant):
    index = build(zipf_corpus(3000, seed=4), variant)
    index.remove(np.arange(0, 3000, 7))
    qs = zipf_queries(60, seed=5)
    for k in (1, 10):
        hits, fell_back = candidate_search(index, qs, k, dense_min_df=len(index) // 16)
        assert_hits_equal(hits, index.search(qs, k))
        assert fell_back.mean() < 0.5, fell_back.mean()  # 0.23-0.43 on this corpus
    # Everything dense: no candidates, every query falls back.
    hits, fell_back = candidate_search(index, qs, 10, dense_min_df=1)
    assert fell_back.all()
    assert_hits_equal(hits, index.search(qs, 10))
