"""FlatIndex against the numpy reference on random inputs (hypothesis).

Covers every metric, storage dtype, SIMD level available here, both search
paths (forced), small tiles so tile and k-block edges are hit, one and two
threads, k from 1 to beyond n, external ids in random order, and inputs with
exact ties (small integers, repeated rows) where the answer must be identical
to the reference, tie order included.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ragcore
from ragcore import _core
from ragcore import reference as ref
from _dense_data import make_data, reference_on_stored, rounding_tolerance
from _hits_check import assert_hits_close, assert_hits_equal

METRICS = ("ip", "cosine", "l2")
DTYPES = ("float32", "float16", "bfloat16")
SIMD_LEVELS = [level for level in _core.SimdLevel.__members__.values()
               if _core.simd_level_available(level)]
SIZES = (1, 7, 97, 1023, 5000)
DIMS = (1, 2, 3, 8, 16, 17, 31, 64, 100, 385)
PATHS = tuple(_core.DensePath.__members__.values())  # auto, scan, blocked
SCAN, BLOCKED = _core.DensePath.Scan, _core.DensePath.Blocked

slow_ok = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def cases(draw, data_kind):
    n = draw(st.sampled_from(SIZES))
    d = draw(st.sampled_from(DIMS))
    if n * d > 600_000:  # keep the reference fast
        d = draw(st.sampled_from((1, 3, 16, 31, 64)))
    nq = draw(st.sampled_from((1, 2, 5, 16, 33)))
    k = draw(st.integers(1, n + 5))
    return dict(
        n=n, d=d, nq=nq, k=k,
        metric=draw(st.sampled_from(METRICS)),
        dtype=draw(st.sampled_from(DTYPES)),
        path=draw(st.sampled_from(PATHS)),
        simd=draw(st.sampled_from(SIMD_LEVELS)),
        tile_rows=draw(st.sampled_from((0, 1, 5, 13, 64))),
        tile_depth=draw(st.sampled_from((0, 1, 7, 32))),
        threads=draw(st.sampled_from((1, 2))),
        seed=draw(st.integers(0, 2**32 - 1)),
        data=data_kind,
    )


def build(c, corpus, ids):
    index = ragcore.FlatIndex(c["d"], metric=c["metric"], dtype=c["dtype"])
    index.add(corpus, ids=ids)
    index._search_options = dict(path=c["path"], simd_level=c["simd"],
                                 tile_rows=c["tile_rows"], tile_depth=c["tile_depth"])
    return index


@settings(slow_ok, max_examples=60)
@given(cases("gaussian"))
def test_matches_reference_within_rounding(c):
    corpus, queries, ids = make_data(c)
    index = build(c, corpus, ids)
    hits = index.search(queries, c["k"], n_threads=c["threads"])
    stored = index.stored_vectors()
    scores = reference_on_stored(stored, queries, c["metric"])
    assert_hits_close(hits, scores, index.ids, c["k"], rounding_tolerance(queries, stored, c["metric"]))


@settings(slow_ok, max_examples=60)
@given(cases("integers"))
def test_exact_ties_match_reference_exactly(c):
    if c["metric"] == "cosine":
        c = dict(c, metric="ip")  # normalising breaks exact arithmetic
    corpus, queries, ids = make_data(c)
    index = build(c, corpus, ids)
    hits = index.search(queries, c["k"], n_threads=c["threads"])
    want = ref.topk(ref.dense_scores(corpus, queries, c["metric"]), ids, c["k"])
    assert_hits_equal(hits, want)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_level_and_path_agree_on_ids(metric, dtype):
    rng = np.random.default_rng(5)
    corpus = rng.standard_normal((3001, 129)).astype(np.float32)
    queries = rng.standard_normal((40, 129)).astype(np.float32)
    index = ragcore.FlatIndex(129, metric=metric, dtype=dtype)
    index.add(corpus)
    results = []
    for simd in SIMD_LEVELS:
        for path in (SCAN, BLOCKED):
            index._search_options = dict(path=path, simd_level=simd)
            results.append(index.search(queries, 25))
    for other in results[1:]:
        # Random gaussian data has no near-ties at this size; ids must agree.
        np.testing.assert_array_equal(other.ids, results[0].ids)
        np.testing.assert_allclose(other.scores, results[0].scores, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("path", (SCAN, BLOCKED))
@pytest.mark.parametrize("nq", (37, 300))  # 300: enough queries to split them across threads
def test_results_do_not_depend_on_threads_or_tiles(path, nq):
    """Bit-identical across thread counts and tile sizes for a given path and level."""
    rng = np.random.default_rng(11)
    corpus = rng.standard_normal((20_000, 48)).astype(np.float32)
    corpus[5000:5100] = corpus[:100]  # exact duplicates: ties broken by id
    queries = rng.standard_normal((nq, 48)).astype(np.float32)
    index = ragcore.FlatIndex(48)
    index.add(corpus, ids=rng.permutation(20_000))
    index._search_options = dict(path=path)
    first = index.search(queries, 50, n_threads=1)
    for threads in (2, 3, 8):
        assert_hits_equal(index.search(queries, 50, n_threads=threads), first)
    index._search_options = dict(path=path, tile_rows=33)
    assert_hits_equal(index.search(queries, 50, n_threads=2), first)


def test_duplicate_rows_tie_by_id_ascending():
    rng = np.random.default_rng(3)
    row = rng.standard_normal(384).astype(np.float32)
    corpus = np.tile(row, (50, 1))
    ids = rng.permutation(np.arange(1000, 1050))
    for path in (SCAN, BLOCKED):
        index = ragcore.FlatIndex(384)
        index.add(corpus, ids=ids)
        index._search_options = dict(path=path)
        hits = index.search(row, 10)
        np.testing.assert_array_equal(hits.ids[0], np.arange(1000, 1010))
        assert len(set(hits.scores[0].tolist())) == 1


def test_reduced_precision_recall_against_float32():
    rng = np.random.default_rng(0)
    corpus = rng.standard_normal((20_000, 384)).astype(np.float32)
    corpus /= np.linalg.norm(corpus, axis=1, keepdims=True)
    queries = corpus[rng.integers(0, 20_000, 50)] + 0.1 * rng.standard_normal((50, 384)).astype(np.float32)
    exact = ref.flat_search(corpus, queries, 10)
    for dtype in ("float16", "bfloat16"):
        index = ragcore.FlatIndex(384, dtype=dtype)
        index.add(corpus)
        hits = index.search(queries, 10)
        recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(hits.ids, exact.ids)])
        assert recall >= 0.99, (dtype, recall)
