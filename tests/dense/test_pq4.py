"""PQIndex (4-bit codes, fast scan): the native scan against the numpy reference, exact
re-scoring, bad input."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ragcore
from ragcore import _core, reference
from ragcore.reference import ann as ref_ann
from _hits_check import assert_hits_close
from _hnsw_data import clustered, recall

LEVELS = [lvl for lvl in (_core.SimdLevel.Scalar, _core.SimdLevel.Avx2, _core.SimdLevel.Avx512)
          if _core.simd_level_available(lvl)]


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 200), m=st.integers(1, 40), seed=st.integers(0, 10_000))
def test_fast_scan_equals_the_reference_sums_at_every_simd_level(n, m, seed):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 16, (n, m)).astype(np.uint8)
    luts = rng.integers(0, 256, (m, 16)).astype(np.uint8)
    padded = np.zeros(((m + 1) // 2 * 2, 16), dtype=np.uint8)
    padded[:m] = luts
    packed = _core.pq4_pack(codes, m)
    assert packed.nbytes == -(-n // 32) * ((m + 1) // 2) * 32
    want = ref_ann.pq_losses(codes, luts)
    for level in LEVELS:  # the scalar path and the pshufb path, run-time dispatched
        got = _core.pq4_scan(packed, n, m, padded, level)
        np.testing.assert_array_equal(got.astype(np.int64), want)


@settings(max_examples=30, deadline=None)
@given(m=st.integers(1, 20), seed=st.integers(0, 10_000), metric=st.sampled_from(["ip", "l2"]))
def test_byte_tables_match_the_reference(m, seed, metric):
    rng = np.random.default_rng(seed)
    centroids = rng.standard_normal((m, 16, 3)).astype(np.float32)
    q = rng.standard_normal(3 * m).astype(np.float32)
    tables = ref_ann.pq_tables(q, centroids, metric)
    luts, scale = _core.pq4_quantize_tables(tables.astype(np.float32))
    want = ref_ann.pq_quantize_tables(tables)
    assert luts.shape == ((m + 1) // 2 * 2, 16) and (luts[m:] == 0).all()
    # float32 against float64 rounding: an entry may sit on the other side of .5
    assert np.abs(luts[:m].astype(int) - want.astype(int)).max() <= 1
    assert luts[:m].max() == 255 or scale == 0


def _trained(x, m, metric="ip", ids=None):
    index = ragcore.PQIndex(x.shape[1], m, metric)
    index.train(x)
    index.add(x, ids=ids)
    return index


def test_codebooks_learn_from_at_most_4096_rows_drawn_by_the_seed():
    """As faiss's ProductQuantizer: each codebook's k-means sees 256 points per code at
    most, the same seeded rows for every sub-quantiser; a smaller sample is used whole."""
    x = clustered(4096 + 500, 8, seed=7)
    pick = np.sort(np.random.default_rng(3).choice(len(x), 4096, replace=False))
    for index in (ragcore.PQIndex(8, 2, seed=3), ragcore.IVFIndex(8, 4, dtype="pq4", m=2, seed=3)):
        index.train(x)
        books = index.centroids if isinstance(index, ragcore.PQIndex) else index._storage.books  # noqa: SLF001
        for j in range(2):
            want = _core.kmeans(np.ascontiguousarray(x[pick, 4 * j : 4 * j + 4]), 16, seed=3 + j)[0]
            np.testing.assert_array_equal(books[j], want)
    small = ragcore.PQIndex(8, 2, seed=3)
    small.train(x[:4096])
    np.testing.assert_array_equal(small.centroids[1],
                                  _core.kmeans(np.ascontiguousarray(x[:4096, 4:]), 16, seed=4)[0])


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 700), m=st.sampled_from([1, 2, 3, 5, 8]), dsub=st.integers(1, 5),
       seed=st.integers(0, 10_000), n_threads=st.sampled_from([1, 2]), small_ints=st.booleans())
def test_native_encoder_picks_the_reference_nearest_centroid(n, m, dsub, seed, n_threads,
                                                             small_ints):
    """Small integers: every distance is exact, so ties go to the lower code exactly as the
    reference's argmin; random floats: the picked centroid is at the reference's distance
    to float32 rounding."""
    rng = np.random.default_rng(seed)
    draw = (lambda *s: rng.integers(-2, 3, s)) if small_ints else (lambda *s: rng.standard_normal(s))
    x = draw(n, m * dsub).astype(np.float32)
    books = draw(m, 16, dsub).astype(np.float32)
    got = _core.pq4_encode(x, np.ascontiguousarray(books.transpose(0, 2, 1)), m, n_threads=n_threads)
    want = ref_ann.pq_encode(x, books)
    assert got.shape == (n, m) and got.dtype == np.uint8
    if small_ints:
        np.testing.assert_array_equal(got, want)
        return
    parts = x.astype(np.float64).reshape(n, m, dsub)
    b64 = books.astype(np.float64)
    picked = ((parts - b64[np.arange(m), got]) ** 2).sum(-1)
    best = ((parts - b64[np.arange(m), want]) ** 2).sum(-1)
    np.testing.assert_array_less(picked, best + 1e-5 * (1 + best))


def test_native_encoder_refuses_bad_shapes():
    books = np.zeros((2, 3, 16), np.float32)  # m = 2, dsub = 3: d = 6
    with pytest.raises(ValueError, match="m"):
        _core.pq4_encode(np.zeros((4, 7), np.float32), books, 2)
    with pytest.raises(ValueError, match="by_dim"):
        _core.pq4_encode(np.zeros((4, 6), np.float32), books[:1], 2)
    with pytest.raises(ValueError, match="x"):
        _core.pq4_encode(np.zeros((4, 6), np.float64), books, 2)


def test_codes_are_the_reference_nearest_centroids():
    x = clustered(800, 24, seed=1)
    index = _trained(x, 6)
    want = ref_ann.pq_encode(x, index.centroids)
    got = index.encode(x)
    assert (got == want).mean() > 0.999  # float32 vs float64 distances may flip exact near-ties


@pytest.mark.parametrize("metric", ["ip", "cosine", "l2"])
def test_scores_are_exact_and_full_rescore_is_exact_search(metric):
    rng = np.random.default_rng(2)
    x = clustered(600, 32, seed=2) * rng.uniform(0.5, 2.0, (600, 1)).astype(np.float32)
    q = clustered(20, 32, seed=3)
    ids = rng.permutation(10_000)[:600].astype(np.int64)
    index = _trained(x, 8, metric, ids)
    stored = reference.normalize_rows(x) if metric == "cosine" else x
    qs = reference.normalize_rows(q) if metric == "cosine" else q
    ref_metric = "ip" if metric == "cosine" else metric
    full = index.search(q, 10, rescore=60)  # 600 candidates: every vector re-scored
    assert_hits_close(full, reference.dense_scores(stored, qs, ref_metric), ids, 10, atol=1e-4)
    few = index.search(q, 10, rescore=2)
    ref_scores = reference.dense_scores(stored, qs, ref_metric)
    position = {int(i): j for j, i in enumerate(ids)}
    for row in range(len(q)):  # every returned score is that vector's exact score
        exact = [ref_scores[row, position[int(i)]] for i in few.ids[row]]
        np.testing.assert_allclose(few.scores[row], exact, atol=1e-4)


def test_search_agrees_with_the_reference_pipeline_and_recall_grows_with_rescore():
    x = clustered(3000, 64, seed=4)
    q = clustered(100, 64, seed=5)
    index = _trained(x, 16)
    codes = index.encode(x)
    luts = [ref_ann.pq_quantize_tables(ref_ann.pq_tables(v, index.centroids, "ip")) for v in q]
    want = ref_ann.pq_search(x, codes, luts, q, 10, rescore=4)
    got = index.search(q, 10, rescore=4)
    assert recall(got.ids, want.ids) > 0.97  # only rounding of the tables may differ
    truth = reference.flat_search(x, q, 10).ids
    recalls = [recall(index.search(q, 10, rescore=r).ids, truth) for r in (1, 4, 16, 64)]
    assert all(b >= a - 0.01 for a, b in zip(recalls, recalls[1:])) and recalls[-1] > 0.95, recalls
    assert index.bytes_per_vector()["scanned"] == 8  # 16 codes of 4 bits: 1/32 of float32


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="not divisible by m=5"):
        ragcore.PQIndex(32, 5)
    with pytest.raises(ValueError, match="m must be between 1 and 256"):
        ragcore.PQIndex(1024, 512)
    with pytest.raises(ValueError, match="m must be >= 1"):
        ragcore.PQIndex(32, 0)
    index = ragcore.PQIndex(8, 4)
    with pytest.raises(ValueError, match="at least 16"):
        index.train(np.ones((10, 8), np.float32))
    with pytest.raises(RuntimeError, match="not trained"):
        index.add(np.ones((3, 8), np.float32))
    with pytest.raises(RuntimeError, match="not trained"):
        index.search(np.ones(8, np.float32), 2)
    index.train(np.random.default_rng(0).standard_normal((64, 8)).astype(np.float32))
    with pytest.raises(ValueError, match="expected dim=8"):
        index.add(np.ones((3, 7), np.float32))
    with pytest.raises(ValueError, match="rescore must be >= 1"):
        index.search(np.ones(8, np.float32), 2, rescore=0)
    assert (index.search(np.ones(8, np.float32), 3).ids == -1).all()  # empty: padding
    with pytest.raises(ValueError, match="codes must be < 16"):
        _core.pq4_pack(np.full((1, 2), 16, np.uint8), 2)


def _random_scan(n, m, nq, seed, filtered, ties):
    """Random codes and nq queries' byte tables (tiny ones when ties: most losses tie),
    ids, and with filtered an allowed 30% of the rows (as a mask indexed by id)."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 16, (n, m)).astype(np.uint8)
    luts = rng.integers(0, 2 if ties else 256, (nq, m, 16)).astype(np.uint8)
    padded = np.zeros((nq, (m + 1) // 2 * 2, 16), dtype=np.uint8)
    padded[:, :m] = luts
    ids = rng.permutation(10 * n + 1)[:n].astype(np.int64)
    allowed = rng.random(n) < 0.3 if filtered else None
    mask = None
    if filtered:
        mask = np.zeros(10 * n + 1, dtype=np.uint8)
        mask[ids[allowed]] = 1
    return codes, _core.pq4_pack(codes, m), luts, padded, ids, allowed, mask


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 300), m=st.integers(1, 40), want=st.integers(0, 120),
       seed=st.integers(0, 10_000), filtered=st.booleans(), ties=st.booleans())
def test_threshold_scan_keeps_the_reference_candidates_at_every_simd_level(n, m, want, seed,
                                                                          filtered, ties):
    """The running threshold inside the SIMD loop keeps exactly the want smallest
    (loss, row) of the allowed rows: ties (few distinct losses) included."""
    codes, packed, luts, padded, ids, allowed, mask = _random_scan(n, m, 1, seed, filtered, ties)
    luts, padded = luts[0], padded[0]
    losses = ref_ann.pq_losses(codes, luts)
    want_rows = ref_ann.pq_candidates(losses, want, allowed)
    for level in LEVELS:
        got_losses, got_rows = _core.pq4_select(packed, n, m, padded, want, level, allow=mask,
                                                ids=ids)
        np.testing.assert_array_equal(got_rows, want_rows)
        np.testing.assert_array_equal(got_losses, losses[want_rows])


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 300), m=st.integers(1, 40), nq=st.integers(1, 17), want=st.integers(0, 120),
       seed=st.integers(0, 10_000), filtered=st.booleans(), ties=st.booleans())
def test_a_scan_shared_by_several_queries_keeps_each_querys_reference_candidates(n, m, nq, want,
                                                                                seed, filtered, ties):
    """The AVX-512 scan serves up to 8 queries per load of the codes (nq up to 17: full
    sets of 8 and every remainder); each query keeps exactly its own reference candidates."""
    codes, packed, luts, padded, ids, allowed, mask = _random_scan(n, m, nq, seed, filtered, ties)
    for level in LEVELS:
        got = _core.pq4_select_many(packed, n, m, padded, want, level, allow=mask, ids=ids)
        assert len(got) == nq
        for lut, (got_losses, got_rows) in zip(luts, got):
            losses = ref_ann.pq_losses(codes, lut)
            want_rows = ref_ann.pq_candidates(losses, want, allowed)
            np.testing.assert_array_equal(got_rows, want_rows)
            np.testing.assert_array_equal(got_losses, losses[want_rows])


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_filtered_search_equals_the_filtered_reference_pipeline(metric):
    x = clustered(2000, 32, seed=7)
    q = clustered(30, 32, seed=8)
    ids = np.arange(5, 2005, dtype=np.int64)
    index = _trained(x, 8, metric, ids)
    allowed = np.random.default_rng(9).random(2000) < 0.05
    got = index.search(q, 10, rescore=4, allow=ids[allowed])
    assert np.isin(got.ids[got.ids >= 0], ids[allowed]).all()
    codes = index.encode(x)
    luts = [ref_ann.pq_quantize_tables(ref_ann.pq_tables(v, index.centroids, metric)) for v in q]
    want = ref_ann.pq_search(x, codes, luts, q, 10, rescore=4, metric=metric, ids=ids,
                             allowed=allowed)
    assert recall(got.ids, want.ids) > 0.97  # only rounding of the tables may differ
    # All allowed rows re-scored: the exact filtered top-k.
    full = index.search(q, 10, rescore=2000, allow=ids[allowed])
    ref_scores = reference.dense_scores(x[allowed], q, metric)
    assert_hits_close(full, ref_scores, ids[allowed], 10, atol=1e-4)


def test_huge_want_and_k_are_bounded_not_overflowed():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 16, (50, 4)).astype(np.uint8)
    luts = rng.integers(0, 256, (4, 16)).astype(np.uint8)
    packed = _core.pq4_pack(codes, 4)
    for want in (2**62, 2**64 - 1):  # 2 * want would wrap: the buffer must not shrink early
        losses, rows = _core.pq4_select(packed, 50, 4, luts, want, _core.SimdLevel.Scalar)
        np.testing.assert_array_equal(rows, ref_ann.pq_candidates(ref_ann.pq_losses(codes, luts), 50))
    index = _trained(clustered(100, 8, seed=4), 2)
    with pytest.raises(ValueError, match="overflow the result size|1 GiB"):
        index.search(np.ones(8, np.float32), 2**40)
