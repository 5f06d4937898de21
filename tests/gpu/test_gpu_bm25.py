"""GpuBM25Index on a CUDA device against the CPU BM25Index.

Skipped without a CUDA device. The GPU adds the same float32 score parts with
the same float64 weights in the same order as the CPU index, so hits must be
equal to the bit: ids and scores, ties by id. Both plans (pruned, with its
fallback, and exhaustive) are checked, and the pruned plan's decision to fall
back must be the reference's. Covers every variant, removals, ids that do not
ascend with insertion order, k beyond the documents, chunk and group sizes
small enough that many chunks merge and the k-th best moves, queries without
known terms, a Zipfian corpus of many blocks, concurrency and bad input.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ragcore

from _bm25_plans import candidate_search
from _bm25_corpora import VARIANTS, build, build_shuffled, corpora, queries, zipf_corpus, zipf_queries
from _hits_check import assert_hits_equal

pytestmark = pytest.mark.skipif(ragcore.cuda_device_count() == 0, reason="needs a CUDA device")

KNOBS = st.fixed_dictionaries({
    "exhaustive": st.booleans(),
    "first_chunk_rows": st.sampled_from((0, 1, 5, 64)),
    "max_chunk_rows": st.sampled_from((0, 1, 7, 1000)),
    "max_group": st.sampled_from((0, 1, 2, 3)),
})


def gpu_copy(index, dense_min_df=None, **knobs):
    gpu = ragcore.GpuBM25Index(index, "cuda", dense_min_df)
    gpu._search_options = {name: value for name, value in knobs.items() if value}
    return gpu


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpus=corpora, qs=st.lists(queries, min_size=1, max_size=6),
       variant=st.sampled_from(VARIANTS), k=st.integers(1, 35), seed=st.integers(0, 2**16),
       n_removed=st.integers(0, 5), knobs=KNOBS, dense_min_df=st.sampled_from((None, 1, 2, 4, 99)))
def test_small_corpora_equal_the_cpu_index(corpus, qs, variant, k, seed, n_removed, knobs,
                                           dense_min_df):
    index = build_shuffled(corpus, variant, seed, n_removed)
    gpu = gpu_copy(index, dense_min_df, **knobs)
    hits, exhaustive = gpu._search(qs, k)
    assert_hits_equal(hits, index.search(qs, k))
    if not knobs["exhaustive"]:
        _, fell_back = candidate_search(index, qs, k, gpu.dense_min_df)
        np.testing.assert_array_equal(exhaustive, fell_back)
    else:
        assert exhaustive.all()


@pytest.mark.parametrize("variant", VARIANTS)
def test_zipf_corpus_equals_the_cpu_index(variant):
    index = build(zipf_corpus(20000, vocab=2000, seed=7, max_len=60), variant)
    index.remove(np.arange(0, 20000, 11))
    qs = zipf_queries(300, vocab=2000, seed=8)
    gpu = index.to("cuda")
    exhaustive_gpu = gpu_copy(index, exhaustive=True)
    for k in (1, 10, 100, 3000):
        expected = index.search(qs, k)
        hits, exhaustive = gpu._search(qs, k)
        assert_hits_equal(hits, expected)
        assert_hits_equal(exhaustive_gpu.search(qs, k), expected)
        _, fell_back = candidate_search(index, qs, k, gpu.dense_min_df)
        np.testing.assert_array_equal(exhaustive, fell_back)
        if k <= 10:
            assert exhaustive.mean() < 0.5  # the pruned plan answers most queries


@pytest.mark.parametrize("knobs", [dict(max_group=7), dict(first_chunk_rows=3, max_chunk_rows=50),
                                   dict(first_chunk_rows=1, max_chunk_rows=1, max_group=1),
                                   dict(exhaustive=True, max_group=5)])
def test_groups_and_chunks_do_not_change_the_hits(knobs):
    index = build(zipf_corpus(3000, seed=9), "bm25l")
    qs = zipf_queries(40, seed=10)
    expected = index.search(qs, 25)
    assert_hits_equal(gpu_copy(index, **knobs).search(qs, 25), expected)


@pytest.mark.parametrize("dense_min_df", [None, 1, 60, 1000])
def test_ties_go_to_the_smaller_id_whatever_the_slot_order(dense_min_df):
    # Identical documents tie exactly; ids descend with insertion order.
    corpus = [["a", "b"]] * 50 + [["a"]] * 50 + [["c"]] * 20
    index = build(corpus, ids=np.arange(120)[::-1] * 3)
    gpu = gpu_copy(index, dense_min_df)
    qs = [["a", "b"], ["b"], ["zzz"], []]
    for k in (1, 7, 60, 130):
        assert_hits_equal(gpu.search(qs, k), index.search(qs, k))


def test_snapshot_does_not_follow_the_cpu_index():
    index = build([["a"], ["a", "b"], ["b"]])
    gpu = index.to("cuda")
    before = index.search(["a b"], 3)
    index.add([["a", "a", "a"]])
    assert_hits_equal(gpu.search(["a b"], 3), before)
    assert len(gpu) == 3 and len(gpu.to("cpu")) == 3
    assert gpu.device == "cuda:0" and gpu.device_bytes > 0


def test_save_and_load_round_trip(tmp_path):
    index = build(zipf_corpus(2000, seed=13), "atire", ids=np.arange(2000)[::-1])
    gpu = index.to("cuda")
    gpu.save(tmp_path / "bm25.idx")
    loaded = ragcore.GpuBM25Index.load(tmp_path / "bm25.idx", device="cuda:0")
    qs = zipf_queries(30, seed=14)
    assert_hits_equal(loaded.search(qs, 50), index.search(qs, 50))


def test_empty_index_and_queries_without_terms():
    index = build([["a"]])
    index.remove([0])
    hits = index.to("cuda").search(["a", "b"], 4)
    assert (hits.ids == -1).all() and np.isneginf(hits.scores).all()
    index = build([["a"], ["b"]], "bm25+")  # every document scores the base
    assert_hits_equal(index.to("cuda").search([[], ["zzz"]], 3), index.search([[], ["zzz"]], 3))


def test_concurrent_searches_agree():
    index = build(zipf_corpus(5000, seed=11), "lucene")
    gpu = index.to("cuda")
    qs = zipf_queries(64, seed=12)
    expected = index.search(qs, 10)
    results, errors = [], []

    def run():
        try:
            results.append(gpu.search(qs, 10))
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 4
    for hits in results:
        assert_hits_equal(hits, expected)


def test_bad_input():
    gpu = build([["a"], ["b"]]).to("cuda")
    with pytest.raises(ValueError, match="k"):
        gpu.search(["a"], 0)
    with pytest.raises(TypeError, match="queries"):
        gpu.search(np.zeros(3), 1)
    with pytest.raises(RuntimeError, match="device"):
        build([["a"]]).to(f"cuda:{ragcore.cuda_device_count()}")
    with pytest.raises(TypeError, match="BM25Index"):
        ragcore.GpuBM25Index([["a"]])
    with pytest.raises(ValueError, match="dense_min_df"):
        ragcore.GpuBM25Index(build([["a"]]), "cuda", dense_min_df=0)
