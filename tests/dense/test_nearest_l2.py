"""The blocked nearest-centroid kernel (k-means and IVF assignment, nearest_l2 behind
_core.assign_nearest) and the parallel 4-bit PQ codebook training (_core.pq4_train),
against the float64 references, on every SIMD level of this CPU."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragcore import _core, reference

SIMD_LEVELS = [level for level in _core.SimdLevel.__members__.values()
               if _core.simd_level_available(level)]


def check_nearest(x, centroids, labels, dist):
    """labels: a nearest centroid (within float32 rounding of the float64 minimum), the
    lowest-numbered of equal centroids, and the reference's label wherever the runner-up
    is clearly farther; dist: the squared distance."""
    want, want_dist = reference.nearest_l2(x, centroids)
    d64 = ((x[:, None, :].astype(np.float64) - centroids[None].astype(np.float64)) ** 2).sum(-1)
    scale = 1.0 + (x.astype(np.float64) ** 2).sum(1) + (centroids.astype(np.float64) ** 2).sum(1).max()
    tol = 1e-5 * scale
    assert labels.dtype == np.int64 and ((labels >= 0) & (labels < len(centroids))).all()
    got_dist = d64[np.arange(len(x)), labels]
    assert (got_dist <= want_dist + tol).all()
    runner_up = np.sort(d64, axis=1)[:, 1] if len(centroids) > 1 else np.full(len(x), np.inf)
    clear = runner_up - want_dist > 2 * tol
    np.testing.assert_array_equal(labels[clear], want[clear])
    first = {tuple(c): j for j, c in reversed(list(enumerate(centroids.tolist())))}
    assert all(first[tuple(centroids[l].tolist())] == l for l in labels)  # equal ones: the lowest
    assert (np.abs(dist - want_dist) <= 1e-4 * want_dist + tol).all()


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 70), d=st.integers(1, 40), k=st.integers(1, 80),
       dup=st.integers(0, 5), integers=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_assignment_matches_the_reference(n, d, k, dup, integers, seed):
    # Sizes off every block (12, 6, 4 rows; 32, 16, 2 centroids), k above n, equal
    # centroids (ties to the lower number) and small integers (exact equal distances).
    rng = np.random.default_rng(seed)
    draw = (lambda s: rng.integers(-3, 4, s)) if integers else rng.standard_normal
    x = np.asarray(draw((n, d)), dtype=np.float32)
    centroids = np.asarray(draw((k, d)), dtype=np.float32)
    for _ in range(min(dup, k - 1)):
        i, j = sorted(rng.choice(k, 2, replace=False))
        centroids[j] = centroids[i]
    for level in SIMD_LEVELS:
        labels, dist = _core.assign_nearest(x, centroids, n_threads=1, simd_level=level)
        check_nearest(x, centroids, labels, dist)


@pytest.mark.parametrize("level", SIMD_LEVELS)
def test_several_tiles_and_chunks_any_thread_count(level):
    # d = 384: 168 rows a tile and 160 centroids a chunk on AVX-512, so 500 rows and 300
    # centroids take several of each; the result is the same on 1 and 3 threads.
    rng = np.random.default_rng(1)
    x = rng.standard_normal((500, 384)).astype(np.float32)
    centroids = rng.standard_normal((300, 384)).astype(np.float32)
    one = _core.assign_nearest(x, centroids, n_threads=1, simd_level=level)
    three = _core.assign_nearest(x, centroids, n_threads=3, simd_level=level)
    np.testing.assert_array_equal(one[0], three[0])
    np.testing.assert_array_equal(one[1], three[1])
    check_nearest(x, centroids, *one)


def test_a_corpus_row_is_assigned_to_its_own_centroid():
    x = np.random.default_rng(2).standard_normal((200, 64)).astype(np.float32)
    labels, dist = _core.assign_nearest(x, x[:50])
    np.testing.assert_array_equal(labels[:50], np.arange(50))
    assert (dist[:50] <= 1e-3).all()


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(16, 150), m=st.integers(1, 6), dsub=st.integers(1, 4),
       seed=st.integers(0, 2**64 - 1))
def test_pq4_train_is_one_kmeans_per_part(n, m, dsub, seed):
    x = np.random.default_rng(seed % 2**32).standard_normal((n, m * dsub)).astype(np.float32)
    books = _core.pq4_train(x, m, seed=seed, n_threads=1)
    assert books.shape == (m, 16, dsub) and books.dtype == np.float32
    np.testing.assert_array_equal(books, _core.pq4_train(x, m, seed=seed, n_threads=3))
    parts = [np.ascontiguousarray(x[:, j * dsub : (j + 1) * dsub]) for j in range(m)]
    seeds = [(seed + j) % 2**64 for j in range(m)]
    for j in range(m):  # the same k-means as alone, seeds wrapping mod 2^64
        np.testing.assert_array_equal(books[j], _core.kmeans(parts[j], 16, seed=seeds[j])[0])
    starts = [_core.kmeans(parts[j], 16, max_iter=0, seed=seeds[j])[0] for j in range(m)]
    np.testing.assert_allclose(books, reference.pq_codebooks(x, m, starts), rtol=1e-4, atol=1e-4)


def test_pq4_train_bad_arguments():
    x = np.zeros((20, 8), np.float32)
    with pytest.raises(ValueError, match="m"):
        _core.pq4_train(x, 3)
    with pytest.raises(ValueError, match="16 rows"):
        _core.pq4_train(x[:15], 2)
    with pytest.raises(ValueError, match="x"):
        _core.pq4_train(x.astype(np.float64), 2)


@pytest.mark.parametrize("k", [5, 16, 40])
def test_avx2_and_avx512_give_the_same_bits(k):
    if not {_core.SimdLevel.Avx2, _core.SimdLevel.Avx512} <= set(SIMD_LEVELS):
        pytest.skip("needs AVX2 and AVX-512")
    rng = np.random.default_rng(k)
    x = rng.standard_normal((300, 24)).astype(np.float32)
    centroids = rng.standard_normal((k, 24)).astype(np.float32)
    a = _core.assign_nearest(x, centroids, simd_level=_core.SimdLevel.Avx2)
    b = _core.assign_nearest(x, centroids, simd_level=_core.SimdLevel.Avx512)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
