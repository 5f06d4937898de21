"""Batch invariance: a query's ids and scores are bit-identical whatever batch it arrives
in, whatever the path (scan / blocked), thread count and tile size, and IVFIndex with
float storage at nprobe = nlist gives FlatIndex's answer bit for bit (issue 18).

Before, the scan path (few queries) and the blocked path (many) reduced the dot
products in different orders, so the same query got different last bits, and
sometimes a different order of near-equal scores, alone or in a batch of 200.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragcore import FlatIndex, IVFIndex, _core

METRICS = ("ip", "l2", "cosine")
DTYPES = ("float32", "float16", "bfloat16")
LEVELS = [lvl for lvl in (_core.SimdLevel.Scalar, _core.SimdLevel.Avx2, _core.SimdLevel.Avx512)
          if _core.simd_level_available(lvl)]
PATHS = (_core.DensePath.Auto, _core.DensePath.Scan, _core.DensePath.Blocked)
SETTINGS = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.int32)


@st.composite
def cases(draw):
    d = draw(st.sampled_from((1, 3, 8, 17, 33, 64, 97)))
    n = draw(st.integers(1, 300))
    batch = draw(st.integers(1, 260))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    corpus = rng.standard_normal((n, d)).astype(np.float32)
    if draw(st.booleans()):  # near-equal scores: duplicated rows, scaled by 1 + eps
        corpus[n // 2 :] = corpus[: n - n // 2] * np.float32(1 + 2**-22)
    queries = rng.standard_normal((batch, d)).astype(np.float32)
    query = queries[draw(st.integers(0, batch - 1))].copy()
    for pos in draw(st.lists(st.integers(0, batch - 1), min_size=1, max_size=3)):
        queries[pos] = query  # the query of interest, once or more, anywhere in the batch
    return dict(corpus=corpus, queries=queries, query=query, k=draw(st.integers(1, n + 3)),
                threads=draw(st.sampled_from((1, 2, 0))), path=draw(st.sampled_from(PATHS)),
                tile_rows=draw(st.sampled_from((0, 1, 7, 32))),
                level=draw(st.sampled_from(LEVELS)))


def _assert_rows_are_the_query(hits, queries, query, alone) -> None:
    for row in np.flatnonzero((queries == query).all(axis=1)):
        np.testing.assert_array_equal(hits.ids[row], alone.ids[0])
        np.testing.assert_array_equal(_bits(hits.scores[row]), _bits(alone.scores[0]))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("metric", METRICS)
@SETTINGS
@given(c=cases())
def test_flat_query_result_does_not_depend_on_its_batch(metric, dtype, c):
    index = FlatIndex(c["corpus"].shape[1], metric, dtype)
    index.add(c["corpus"], ids=np.arange(len(c["corpus"])) * 3 + 1)
    index._search_options = {"simd_level": c["level"]}
    alone = index.search(c["query"], c["k"], n_threads=1)  # a batch of one: the scan path
    index._search_options = {"simd_level": c["level"], "path": c["path"],
                             "tile_rows": c["tile_rows"]}
    hits = index.search(c["queries"], c["k"], n_threads=c["threads"])
    _assert_rows_are_the_query(hits, c["queries"], c["query"], alone)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("metric", METRICS)
@SETTINGS
@given(c=cases(), nlist=st.integers(1, 6))
def test_ivf_at_full_probe_is_flat_bit_for_bit(metric, dtype, c, nlist):
    corpus = c["corpus"]
    if len(corpus) < nlist:
        nlist = len(corpus)
    ids = np.arange(len(corpus)) * 3 + 1
    flat = FlatIndex(corpus.shape[1], metric, dtype)
    flat.add(corpus, ids=ids)
    ivf = IVFIndex(corpus.shape[1], nlist, metric, dtype, max_iter=2)
    ivf.train(corpus)
    ivf.add(corpus, ids=ids)
    alone = flat.search(c["query"], c["k"], n_threads=1)
    hits = ivf.search(c["queries"], c["k"], nprobe=nlist, n_threads=c["threads"])
    _assert_rows_are_the_query(hits, c["queries"], c["query"], alone)
    batched_flat = flat.search(c["queries"], c["k"], n_threads=c["threads"])
    np.testing.assert_array_equal(hits.ids, batched_flat.ids)
    np.testing.assert_array_equal(_bits(hits.scores), _bits(batched_flat.scores))


def test_a_query_alone_and_in_a_batch_of_200():
    """The case of the issue: d = 384, one query alone and inside 200 others."""
    rng = np.random.default_rng(3)
    corpus = rng.standard_normal((5000, 384)).astype(np.float32)
    index = FlatIndex(384)
    index.add(corpus)
    batch = rng.standard_normal((200, 384)).astype(np.float32)
    alone = index.search(batch[77], 50)
    hits = index.search(batch, 50)
    np.testing.assert_array_equal(hits.ids[77], alone.ids[0])
    np.testing.assert_array_equal(_bits(hits.scores[77]), _bits(alone.scores[0]))
