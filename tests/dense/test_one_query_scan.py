"""One query: FlatIndex and IVFIndex scan the rows with `dot_rows_one_query`
(cpp/src/simd/kernels_impl.h): each block of up to 1,024 rows read as four quarters side by
side, then the rows left over one at a time. Its sums must be dot_rows' bit for bit, so a
query's hits do not depend on whether it came alone or in a batch (the blocked path, or the
four-adjacent-row scan), at every SIMD level and storage; the quarters' scores must land
on their own rows.
"""

from __future__ import annotations

import numpy as np
import pytest

from ragcore import FlatIndex, IVFIndex, _core

# 4,203 rows: four full blocks, then a block whose quarters leave three rows over;
# d = 601 leaves a tail at every width.
N, D = 4203, 601
LEVELS = [lvl for lvl in (_core.SimdLevel.Scalar, _core.SimdLevel.Avx2, _core.SimdLevel.Avx512)
          if _core.simd_level_available(lvl)]
DTYPES = ("float32", "float16", "bfloat16")


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
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("metric", ("ip", "l2", "cosine"))
def test_flat_query_alone_equals_the_same_query_in_a_batch(data, level, dtype, metric):
    corpus, queries = data
    index = FlatIndex(D, metric, dtype)
    index.add(corpus, ids=np.arange(N) * 5 + 2)
    index._search_options = {"simd_level": level}
    batch = index.search(queries, 40, n_threads=1)
    for row in (0, 9, 23):
        for threads in (1, 2):  # two threads split the rows: each part scanned alone
            _assert_same_bits(index.search(queries[row], 40, n_threads=threads), batch, row)


@pytest.mark.parametrize("level", LEVELS)
def test_every_row_scores_as_the_reference(data, level):
    """All N hits of one query against numpy: a quarter's score written to another row's
    slot, or a row left over unscored, shows here."""
    corpus, queries = data
    index = FlatIndex(D, "ip")
    index.add(corpus, ids=np.arange(N) * 5 + 2)
    index._search_options = {"simd_level": level}
    got = index.search(queries[0], N, n_threads=1)
    rows = (got.ids[0] - 2) // 5
    np.testing.assert_array_equal(np.sort(rows), np.arange(N))  # every row once
    want = corpus.astype(np.float64) @ queries[0].astype(np.float64)
    np.testing.assert_allclose(got.scores[0], want[rows], rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("dtype", DTYPES)
def test_ivf_query_alone_equals_the_batch_and_flat_at_full_probe(data, dtype):
    """IVFIndex runs the best SIMD level (it has no level option): against FlatIndex there."""
    corpus, queries = data
    ivf = IVFIndex(D, nlist=6, metric="ip", dtype=dtype)
    ivf.train(corpus[:2000])
    ivf.add(corpus)
    flat = FlatIndex(D, "ip", dtype)
    flat.add(corpus)
    batch = ivf.search(queries, 25, nprobe=6, n_threads=1)
    flat_batch = flat.search(queries, 25, n_threads=1)
    for row in (0, 5, 17):
        alone = ivf.search(queries[row], 25, nprobe=6, n_threads=1)
        _assert_same_bits(alone, batch, row)
        _assert_same_bits(alone, flat_batch, row)
