"""The 1-bit RaBitQ fast scan: blocks, quantised tables and integer sums of every SIMD
level against the numpy reference; its estimates within the widened bound of the
bit-plane kernel's; search results equal to the bit-plane kernel's where both are exact."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ragcore
from ragcore import _core
from ragcore.reference import rabitq as ref
from ragcore.reference import rabitq_fastscan as fref
from _ivf_data import clustered

LEVELS = [lvl for lvl in (_core.SimdLevel.Scalar, _core.SimdLevel.Avx2, _core.SimdLevel.Avx512)
          if _core.simd_level_available(lvl)]


def _random_rows(n, dp, rng):
    rows = rng.integers(0, 256, (n, dp // 8 + 12), dtype=np.uint8)
    rows[:, dp // 8:] = rng.standard_normal((n, 3)).astype(np.float32).view(np.uint8)
    return rows


def _offsets(sizes):
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(0, 70), min_size=1, max_size=5),
       dim=st.sampled_from([1, 8, 13, 24, 64, 100, 384]), seed=st.integers(0, 10_000))
def test_packed_blocks_equal_reference(sizes, dim, seed):
    # Lists of awkward sizes: empty, below, at and above multiples of 32.
    rng = np.random.default_rng(seed)
    dp = ref.padded_dim(dim)
    rows = _random_rows(sum(sizes), dp, rng)
    got = _core.rabitq_fast_pack(rows, _offsets(sizes), dim=dim)
    np.testing.assert_array_equal(got, fref.fast_pack(rows, _offsets(sizes), dp))


@settings(max_examples=40, deadline=None)
@given(blocks=st.integers(0, 5), dim=st.sampled_from([8, 16, 24, 40, 64, 136, 384, 1024]),
       seed=st.integers(0, 10_000), level=st.sampled_from(LEVELS))
def test_every_level_sums_equal_reference_sums(blocks, dim, seed, level):
    # dp / 8 odd (8, 24, 40, 136) takes the AVX-512 kernel's 256-bit last step; 1024:
    # the largest sums (256 look-ups of up to 255) near the 16-bit limit.
    rng = np.random.default_rng(seed)
    bb = dim // 8 * 32 + 3 * 32 * 4
    data = rng.integers(0, 256, blocks * bb, dtype=np.uint8)
    luts = rng.integers(0, 256, (dim // 4, 16), dtype=np.uint8)
    if seed % 3 == 0:
        luts[:] = 255  # every sum at its maximum
    got = _core.rabitq_fast_sums(data, dim=dim, luts=luts, simd_level=level)
    np.testing.assert_array_equal(got, fref.fast_sums(data, dim, luts))


@settings(max_examples=40, deadline=None)
@given(dim=st.sampled_from([8, 16, 96, 384, 1024]), scale=st.sampled_from([1e-3, 1.0, 50.0]),
       seed=st.integers(0, 10_000))
def test_tables_equal_reference_and_bound_their_error(dim, scale, seed):
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal(dim) * scale).astype(np.float32)
    luts, bias, delta, max_error = _core.rabitq_fast_tables(w)
    want_luts, want_bias, want_delta, want_max = fref.fast_tables(w)
    # float32 against float64 arithmetic: a level may round the other way at a half.
    assert np.abs(luts.astype(int) - want_luts.astype(int)).max() <= 1
    assert (luts != want_luts).mean() < 0.01
    np.testing.assert_allclose([bias, delta], [want_bias, want_delta], rtol=1e-5, atol=1e-6 * scale)
    assert want_max <= max_error <= want_max * 1.01
    # The quantised sum of any code is within max_error of the exact <x, w>.
    codes = rng.integers(0, 2, (200, dim))
    codes[0], codes[1] = 0, 1
    nibbles = (codes.reshape(200, -1, 4) << np.arange(4)).sum(axis=2)
    approx = bias + delta * luts[np.arange(dim // 4)[None, :], nibbles].astype(np.float64).sum(axis=1)
    exact = codes @ w.astype(np.float64)
    assert (np.abs(approx - exact) <= max_error).all()
    # ... and the bound is not far above the error seen (a constant factor at most).
    assert np.abs(approx - exact).max() >= max_error / dim


def _index(metric, n, dim, nlist, seed, fast=True):
    x = clustered(n, dim, nlist, seed=seed, spread=0.7)
    index = ragcore.IVFIndex(dim, nlist, metric, "rabitq", bits=1, seed=seed)
    index.train(x)
    index.add(x)
    index.fast_scan = fast
    return index, x


@settings(max_examples=15, deadline=None)
@given(metric=st.sampled_from(["ip", "l2"]), dim=st.sampled_from([8, 24, 64, 100]),
       seed=st.integers(0, 1000))
def test_fast_estimates_within_the_widened_bound_of_the_bit_plane_estimates(metric, dim, seed):
    index, _ = _index(metric, 333, dim, 5, seed)
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((1, dim)).astype(np.float32)
    for l in range(index.nlist):
        index.fast_scan = False
        est, err = index.estimates(q, l)
        index.fast_scan = True
        fast, fast_err = index.estimates(q, l)
        widened = fast_err - err  # the quantisation's worst case, per row
        assert (widened >= 0).all()
        scale = 1.0 + np.abs(est).max(initial=0.0)
        assert (np.abs(fast - est) <= widened + 1e-5 * scale).all()


@pytest.mark.parametrize("metric", ["ip", "cosine", "l2"])
def test_bound_search_finds_the_exact_top_k_with_either_kernel(metric):
    # epsilon 5 and every list probed: both kernels must return FlatIndex's answer.
    x = clustered(2500, 48, 16, seed=4, spread=0.6)
    q = clustered(40, 48, 16, seed=5, spread=0.6)
    index = ragcore.IVFIndex(48, 16, metric, "rabitq", bits=1, epsilon=5.0)
    index.train(x)
    index.add(x)
    flat = ragcore.FlatIndex(48, metric)
    flat.add(x)
    want = flat.search(q, 10)
    counts = {}
    for fast in (True, False):
        index.fast_scan = fast
        got = index.search(q, 10, nprobe=16)
        np.testing.assert_array_equal(got.ids, want.ids)
        np.testing.assert_allclose(got.scores, want.scores, rtol=1e-6, atol=1e-5)
        counts[fast] = index.last_search_counts["rescored"]
    # The widened bound re-scores more, but not many more.
    assert counts[False] <= counts[True] <= 2 * counts[False] + 100


@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 200), nlist=st.integers(1, 9), k=st.integers(1, 15),
       seed=st.integers(0, 1000))
def test_fast_scan_with_all_and_count_rescoring_equals_bit_plane_kernel(n, nlist, k, seed):
    # Lists of every size, some empty: the same rows reach the exact re-scoring.
    nlist = min(nlist, n)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 40)).astype(np.float32)
    q = rng.standard_normal((3, 40)).astype(np.float32)
    index = ragcore.IVFIndex(40, nlist, "ip", "rabitq", bits=1, seed=seed)
    index.train(x)
    index.add(x)
    results = []
    for fast in (True, False):
        index.fast_scan = fast
        results.append(index.search(q, k, nprobe=nlist, rescore=n))  # every row by estimate
    np.testing.assert_array_equal(results[0].ids, results[1].ids)
    np.testing.assert_array_equal(results[0].scores, results[1].scores)


def test_fast_scan_applies_to_one_bit_only_and_is_switchable():
    index, x = _index("ip", 200, 16, 2, 0)
    assert index.fast_scan
    assert index.bytes_per_vector()["kept"] == 2 * (16 // 8 + 12) + 4 * 16 + 8
    index.fast_scan = False
    assert not index.fast_scan
    with pytest.raises(ValueError, match="fast_scan must be True or False"):
        index.fast_scan = 1
    three = ragcore.IVFIndex(16, 2, "ip", "rabitq", bits=3)
    assert not three.fast_scan
    wide = ragcore.IVFIndex(1025, 2, "ip", "rabitq", bits=1)
    assert not wide.fast_scan


def test_fast_blocks_follow_adds_and_removes():
    index, x = _index("l2", 300, 24, 3, 1)
    q = x[:5] + 0.01
    first = index.search(q, 5, nprobe=3, rescore="all")
    more = clustered(100, 24, 3, seed=9, spread=0.7)
    new_ids = index.add(more)
    got = index.search(more[:5], 1, nprobe=3)
    np.testing.assert_array_equal(got.ids[:, 0], new_ids[:5])
    index.remove(new_ids)
    np.testing.assert_array_equal(index.search(q, 5, nprobe=3, rescore="all").ids, first.ids)
    assert not np.isin(index.search(more[:5], 5, nprobe=3).ids, new_ids).any()


def test_native_refuses_blocks_that_do_not_match_the_lists():
    index, _ = _index("ip", 100, 16, 2, 2)
    lists = index._lists
    blocks = _core.rabitq_fast_pack(lists.rows, lists.offsets, dim=16)
    kw = dict(centroids=index._coarse.centroids, centroid_sq_norms=index._coarse.sq_norms,
              rotation=index._storage.rotation, bits=1, list_offsets=lists.offsets, ids=lists.ids,
              exact_rows=lists.exact, sq_norms=None, metric=_core.Metric.InnerProduct, nprobe=2)
    q = np.zeros((1, 16), np.float32)
    with pytest.raises(ValueError, match="fast_blocks must be rabitq_fast_pack"):
        _core.rabitq_ivf_search(lists.rows, q, 3, fast_blocks=blocks[:-1], **kw)
    with pytest.raises(ValueError, match="fast_blocks"):
        _core.rabitq_ivf_search(lists.rows, q, 3, fast_blocks=blocks.astype(np.int16), **kw)
    with pytest.raises(ValueError, match="dim"):
        _core.rabitq_fast_pack(lists.rows, lists.offsets, dim=2000)
    with pytest.raises(ValueError, match="list_offsets"):
        _core.rabitq_fast_pack(lists.rows, lists.offsets[::-1].copy(), dim=16)


@settings(max_examples=12, deadline=None)
@given(metric=st.sampled_from(["ip", "l2"]), bits=st.sampled_from([1, 2]),
       nq=st.sampled_from([8, 9, 40, 300]), rescore=st.sampled_from(["bound", 3]),
       nprobe=st.integers(1, 6), seed=st.integers(0, 1000))
def test_a_batch_scanned_list_by_list_equals_each_query_alone(metric, bits, nq, rescore, nprobe, seed):
    # From 8 queries the search scans list by list for groups of queries (the lists in
    # another order than each query's nearest first): every query's hits are the same.
    x = clustered(700, 24, 6, seed=seed, spread=0.8)
    q = clustered(nq, 24, 6, seed=seed + 1, spread=0.8)
    index = ragcore.IVFIndex(24, 6, metric, "rabitq", bits=bits, rescore=rescore, seed=seed)
    index.train(x)
    index.add(x)
    batch = index.search(q, 7, nprobe=nprobe, n_threads=2)
    for i in range(0, nq, max(1, nq // 10)):
        alone = index.search(q[i], 7, nprobe=nprobe, n_threads=1)
        np.testing.assert_array_equal(batch.ids[i], alone.ids[0])
        np.testing.assert_array_equal(batch.scores[i], alone.scores[0])


@pytest.mark.parametrize("level", LEVELS)
def test_every_level_of_the_fast_search_finds_the_exact_top_k(level):
    # The native search at each SIMD level (its sums and its estimates' loop), epsilon 5
    # and every list probed: FlatIndex's answer, and estimates within float rounding of
    # the scalar level's.
    x = clustered(1500, 40, 8, seed=7, spread=0.6)
    q = clustered(20, 40, 8, seed=8, spread=0.6)
    index = ragcore.IVFIndex(40, 8, "ip", "rabitq", bits=1, epsilon=5.0)
    index.train(x)
    index.add(x)
    lists = index._lists
    blocks = _core.rabitq_fast_pack(lists.rows, lists.offsets, dim=40)
    kw = dict(centroids=index._coarse.centroids, centroid_sq_norms=index._coarse.sq_norms,
              rotation=index._storage.rotation, bits=1, list_offsets=lists.offsets, ids=lists.ids,
              exact_rows=lists.exact, sq_norms=None, metric=_core.Metric.InnerProduct)
    got = _core.rabitq_ivf_search(lists.rows, q, 10, nprobe=8, epsilon=5.0, simd_level=level,
                                  fast_blocks=blocks, **kw)
    flat = ragcore.FlatIndex(40)
    flat.add(x)
    want = flat.search(q, 10)
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_allclose(got.scores, want.scores, rtol=1e-6, atol=1e-5)
    for l in range(8):
        est, err = _core.rabitq_estimates(lists.rows, q[:1], l, simd_level=level, fast_blocks=blocks, **kw)
        ref_est, ref_err = _core.rabitq_estimates(lists.rows, q[:1], l, simd_level=_core.SimdLevel.Scalar,
                                                  fast_blocks=blocks, **kw)
        np.testing.assert_allclose(est, ref_est, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(err, ref_err, rtol=1e-5, atol=1e-6)


def _worst_table_error(w, rng):
    """(the largest |quantised - exact| <x, w> over random codes, max_error)."""
    dim = len(w)
    luts, bias, delta, max_error = _core.rabitq_fast_tables(w)
    codes = rng.integers(0, 2, (200, dim))
    codes[0], codes[1] = 0, 1
    nibbles = (codes.reshape(200, -1, 4) << np.arange(4)).sum(axis=2)
    approx = bias + delta * luts[np.arange(dim // 4)[None, :], nibbles].astype(np.float64).sum(axis=1)
    return np.abs(approx - codes @ w.astype(np.float64)).max(), max_error


@settings(max_examples=30, deadline=None)
@given(dim=st.sampled_from([8, 64, 1024]), exponent=st.integers(-45, 18),
       equal=st.booleans(), seed=st.integers(0, 10_000))
def test_table_error_bound_holds_at_every_magnitude(dim, exponent, equal, seed):
    # Tiny queries (norm ~1e-37 and below) once gave a subnormal step whose reciprocal
    # overflowed: tables of 255s and a max_error far below their error.
    rng = np.random.default_rng(seed)
    w = np.full(dim, 1.0) if equal else rng.standard_normal(dim)
    w = (w * 10.0 ** exponent).astype(np.float32)
    seen, max_error = _worst_table_error(w, rng)
    assert seen <= max_error


def test_zero_query_tables_are_exact():
    seen, max_error = _worst_table_error(np.zeros(64, np.float32), np.random.default_rng(0))
    assert seen == 0.0 and max_error <= 1e-30


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_tables_refuse_non_finite_values(bad):
    w = np.ones(16, np.float32)
    w[3] = bad
    with pytest.raises(ValueError, match="rotated: expected finite values"):
        _core.rabitq_fast_tables(w)
