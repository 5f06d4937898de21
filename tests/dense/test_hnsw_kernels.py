"""The walk scores a node's unvisited neighbours four at a time through the gathered
kernel (dot_gather): each score must have the bits FlatIndex computes for the same stored
vector at the same SIMD level, and be close to the float64 reference."""

import numpy as np
from hypothesis import given, settings, strategies as st

import ragcore
from ragcore import _core
from ragcore.dense._metric import NATIVE_METRIC
from ragcore.dense._storage import NATIVE_STORAGE
from _dense_data import reference_on_stored, rounding_tolerance
from _hits_check import assert_hits_close

SIMD_LEVELS = [level for level in _core.SimdLevel.__members__.values()
               if _core.simd_level_available(level)]


def graph_index(d, metric, dtype, level, M=4):
    index = ragcore.HNSWIndex(d, metric, M=M, ef_construction=16, dtype=dtype)
    index._graph = _core.HnswIndex(d, metric=NATIVE_METRIC[metric], storage=NATIVE_STORAGE[dtype],
                                   M=M, ef_construction=16, seed=0, simd_level=level)
    return index


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 150), d=st.sampled_from([1, 3, 15, 16, 17, 33, 64, 100]),
       metric=st.sampled_from(["ip", "cosine", "l2"]),
       dtype=st.sampled_from(["float32", "float16", "bfloat16"]),
       level=st.sampled_from(SIMD_LEVELS), seed=st.integers(0, 10_000))
def test_walk_scores_are_flat_index_scores_bit_for_bit(n, d, metric, dtype, level, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    q = rng.standard_normal((3, d)).astype(np.float32)
    index = graph_index(d, metric, dtype, level)
    index.add(x, n_threads=1)
    k = min(n, 10)
    got = index.search(q, k, ef=n)  # full ef: every node is scored by the walk
    flat = ragcore.FlatIndex(d, metric, dtype)
    flat.add(x)
    flat._search_options = dict(simd_level=level)
    every = flat.search(q, n)
    for i in range(len(q)):
        score_of = dict(zip(every.ids[i].tolist(), every.scores[i].tolist()))
        want = np.array([score_of[j] for j in got.ids[i]], dtype=np.float32)
        np.testing.assert_array_equal(got.scores[i], want)
    stored = flat.stored_vectors()
    assert_hits_close(got, reference_on_stored(stored, q, metric), np.arange(n), k,
                      rounding_tolerance(q, stored, metric))
