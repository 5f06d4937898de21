"""One query over float32 rows larger than the L2 cache: FlatIndex and IVFIndex scan them one
row at a time (`dot_rows_streamed`, cpp/src/simd/kernels_impl.h) instead of four interleaved
rows (four memory streams, far slower on an AMD Zen 4: BENCHMARKS.md). The sums
must be dot_rows' bit for bit, so a query's hits do not depend on whether it came alone (the
streamed scan) or in a batch (the blocked path, or four-row scans), on every SIMD level.
"""

from __future__ import annotations

import numpy as np
import pytest

from ragcore import FlatIndex, IVFIndex, _core
from ragcore.reference import topk

# 10.1 MB of float32 rows: more than any core's L2; d = 601 leaves a tail at every width.
N, D = 4200, 601
LEVELS = [lvl for lvl in (_core.SimdLevel.Scalar, _core.SimdLevel.Avx2, _core.SimdLevel.Avx512)
          if _core.simd_level_available(lvl)]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    corpus = rng.standard_normal((N, D)).astype(np.float32)
    corpus[N // 2 : N // 2 + 50] = corpus[:50] * np.float32(1 + 2**-22)  # near-equal scores
    queries = rng.standard_normal((24, D)).astype(np.float32)
    return corpus, queries


def _assert_same_bits(alone, batch, row):
    np.testing.assert_array_equal(batch.ids[row], alone.ids[0])
    np.testing.assert_array_equal(np.ascontiguousarray(batch.scores[row]).view(np.int32),
                                  np.ascontiguousarray(alone.scores[0]).view(np.int32))


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("metric", ("ip", "l2", "cosine"))
def test_flat_query_alone_equals_the_same_query_in_a_batch(data, level, metric):
    corpus, queries = data
    index = FlatIndex(D, metric)
    index.add(corpus, ids=np.arange(N) * 5 + 2)
    index._search_options = {"simd_level": level}
    batch = index.search(queries, 40, n_threads=1)
    for row in (0, 9, 23):
        for threads in (1, 2):  # two threads split the rows: each part streamed
            _assert_same_bits(index.search(queries[row], 40, n_threads=threads), batch, row)
    if metric == "ip":
        want = topk(queries[:1] @ corpus.T, np.arange(N) * 5 + 2, 40)
        got = index.search(queries[0], 40, n_threads=1)
        np.testing.assert_allclose(got.scores, want.scores, rtol=1e-5, atol=1e-4)


def test_ivf_query_alone_equals_the_batch_and_flat_at_full_probe(data):
    """IVFIndex runs the best SIMD level (it has no level option): against FlatIndex there."""
    corpus, queries = data
    ivf = IVFIndex(D, nlist=6, metric="ip")
    ivf.train(corpus[:2000])
    ivf.add(corpus)
    flat = FlatIndex(D, "ip")
    flat.add(corpus)
    batch = ivf.search(queries, 25, nprobe=6, n_threads=1)
    flat_batch = flat.search(queries, 25, n_threads=1)
    for row in (0, 5, 17):
        alone = ivf.search(queries[row], 25, nprobe=6, n_threads=1)
        _assert_same_bits(alone, batch, row)
        _assert_same_bits(alone, flat_batch, row)
