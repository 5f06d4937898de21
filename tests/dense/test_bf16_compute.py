"""bfloat16 compute (FlatIndex(dtype="bfloat16", compute="bfloat16")): the kernels against
the numpy reference of vdpbf16ps's arithmetic, the reference against a worked example, and
the index's contract: exact top-k of the bf16 scores, the same answer whatever the batch,
path, threads or tile, and clear errors.

Scalar and AVX512_BF16 kernels must equal the reference bit for bit. The AMX tile unit
accumulates in an order of its own, so its scores are checked against the exact (float64)
sum of the same bf16 products, within the float32 summation bound.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragcore import FlatIndex, IndexFileError, _core
from ragcore import reference as ref
from ragcore.dense._metric import normalized

LEVELS = [lvl for lvl in (_core.Bf16Level.Scalar, _core.Bf16Level.Avx512Bf16, _core.Bf16Level.Amx)
          if _core.bf16_level_available(lvl)]
EXACT_LEVELS = [lvl for lvl in LEVELS if lvl != _core.Bf16Level.Amx]
SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.int32)


def _bf16_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(uint16 bit patterns, their float32 values) of x rounded to bfloat16."""
    values = ref.round_to_storage(x, "bfloat16")
    return (values.view(np.uint32) >> 16).astype(np.uint16), values


def _exact_and_bound(q: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exact sums of the bf16 products and a bound on any float32 summation order of
    them: (number of terms) * 2**-24 * sum of |products|, doubled for safety."""
    qb = ref.round_to_storage(q, "bfloat16").astype(np.float64)
    x = rows.astype(np.float64)
    depth = -(-q.shape[1] // 32) * 32
    return qb @ x.T, 2 * depth * 2.0**-24 * (np.abs(qb) @ np.abs(x).T)


def test_worked_example_order_of_additions():
    # One chain takes the pairs in order, odd element first: 0 + 1 = 1, then 1 + 2**25 rounds
    # to 2**25 (its float32 neighbours are 4 apart), the zero pairs leave it, then + 1 rounds
    # back to 2**25, and - 2**25 gives 0, where the exact sum is 2.
    x = np.zeros((1, 34), dtype=np.float32)
    x[0, [0, 1, 32, 33]] = [2.0**25, 1.0, -(2.0**25), 1.0]
    q = np.ones((1, 34), dtype=np.float32)
    assert ref.bf16_dot_products(q, x)[0, 0] == 0.0
    bits, _ = _bf16_rows(x)
    for level in EXACT_LEVELS:
        assert _core.bf16_dot(q, bits, level)[0, 0] == 0.0


def test_worked_example_one_chain_per_row():
    # Pair 0 (odd first): 2**25, then + 1 is lost; pair 1: - 2**25 gives 0, then + 1 gives 1.
    # Sixteen lanes summed by a tree would give 0 here (each lane loses its 1); exact is 2.
    x = np.array([[1.0, 2.0**25, 1.0, -(2.0**25)]], dtype=np.float32)
    q = np.ones((1, 4), dtype=np.float32)
    assert ref.bf16_dot_products(q, x)[0, 0] == 1.0
    bits, _ = _bf16_rows(x)
    for level in EXACT_LEVELS:
        assert _core.bf16_dot(q, bits, level)[0, 0] == 1.0


def test_worked_example_query_rounding():
    # 1 + 2**-8 is halfway between bfloat16 neighbours 1 and 1 + 2**-7: the even one, 1.
    q = np.array([[1 + 2.0**-8, 3.0]], dtype=np.float32)
    x = np.array([[1.0, 1.0]], dtype=np.float32)
    assert ref.bf16_dot_products(q, x)[0, 0] == 4.0
    for level in LEVELS:
        assert _core.bf16_dot(q, _bf16_rows(x)[0], level)[0, 0] == 4.0


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), nq=st.integers(1, 20), n=st.integers(1, 40),
       d=st.sampled_from([1, 2, 15, 31, 32, 33, 64, 100, 384]),
       scale=st.sampled_from([1e-3, 1.0, 1e3]))
def test_exact_levels_equal_the_reference_bit_for_bit(seed, nq, n, d, scale):
    rng = np.random.default_rng(seed)
    q = (rng.standard_normal((nq, d)) * scale).astype(np.float32)
    bits, values = _bf16_rows((rng.standard_normal((n, d)) * scale).astype(np.float32))
    expected = ref.bf16_dot_products(q, values)
    for level in EXACT_LEVELS:
        np.testing.assert_array_equal(_bits(_core.bf16_dot(q, bits, level)), _bits(expected))


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), nq=st.integers(1, 40), n=st.integers(1, 70),
       d=st.sampled_from([1, 7, 31, 32, 33, 100, 384]))
def test_every_level_is_within_the_summation_bound(seed, nq, n, d):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((nq, d)).astype(np.float32)
    bits, values = _bf16_rows(rng.standard_normal((n, d)).astype(np.float32))
    exact, bound = _exact_and_bound(q, values)
    np.testing.assert_array_less(np.abs(ref.bf16_dot_products(q, values) - exact), bound + 1e-30)
    for level in LEVELS:
        np.testing.assert_array_less(np.abs(_core.bf16_dot(q, bits, level) - exact), bound + 1e-30)


def test_denormal_inputs_are_read_as_zero():
    tiny = np.float32(2.0**-130)  # a float32 denormal, exactly a bfloat16 denormal
    x = np.array([[tiny, 1.0]], dtype=np.float32)
    q = np.array([[1.0, 1.0]], dtype=np.float32)
    assert ref.bf16_dot_products(q, x)[0, 0] == 1.0
    for level in EXACT_LEVELS:
        assert _core.bf16_dot(q, _bf16_rows(x)[0], level)[0, 0] == 1.0


def _index(x, metric, level=None, **options):
    index = FlatIndex(x.shape[1], metric=metric, dtype="bfloat16", compute="bfloat16")
    index.add(x)
    if level is not None:
        options["bf16_level"] = level
    index._search_options = options
    return index


def _expected_top_k(index, q, k, metric):
    """The exact top-k of the reference's bf16 scores (ties by id), with the metric applied
    as the index applies it."""
    stored = index.stored_vectors()
    if metric == "cosine":  # the index's own normalisation: what is checked here is scoring
        q = normalized(q, "queries")
    dots = ref.bf16_dot_products(q, stored)
    if metric == "l2":  # the index's float32 arithmetic: norms summed in order
        q_norms = np.zeros(len(q), dtype=np.float32)
        for p in range(q.shape[1]):
            q_norms = (q_norms + q[:, p] * q[:, p]).astype(np.float32)
        dots = (np.float32(2) * dots - index.stored_arrays()[2][None, :]) - q_norms[:, None]
    return ref.topk(dots, index.ids, k)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), nq=st.integers(1, 40), n=st.integers(1, 300),
       d=st.sampled_from([3, 32, 50, 96]), k=st.integers(1, 12),
       metric=st.sampled_from(["ip", "l2", "cosine"]), level=st.sampled_from(EXACT_LEVELS))
def test_search_is_the_top_k_of_the_reference_scores(seed, nq, n, d, k, metric, level):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    q = rng.standard_normal((nq, d)).astype(np.float32)
    index = _index(x, metric, level)
    found = index.search(q, k)
    expected = _expected_top_k(index, q, k, metric)
    np.testing.assert_array_equal(found.ids, expected.ids)
    np.testing.assert_allclose(found.scores, expected.scores, rtol=1e-6, atol=1e-5)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 400), d=st.sampled_from([5, 32, 70]),
       level=st.sampled_from(LEVELS), metric=st.sampled_from(["ip", "l2"]),
       threads=st.sampled_from([1, 2]), tile_rows=st.sampled_from([0, 16, 50]))
def test_a_query_gets_the_same_answer_in_any_batch(seed, n, d, level, metric, threads, tile_rows):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    x[n // 2:] = x[: n - n // 2]  # duplicate rows: exact ties, broken by id
    q = rng.standard_normal((37, d)).astype(np.float32)
    batched = _index(x, metric, level, tile_rows=tile_rows).search(q, 10, n_threads=threads)
    for path in (_core.DensePath.Scan, _core.DensePath.Blocked):
        index = _index(x, metric, level, path=path)
        for i in (0, 5, 17, 36):
            alone = index.search(q[i:i + 1], 10, n_threads=1)
            np.testing.assert_array_equal(alone.ids[0], batched.ids[i])
            np.testing.assert_array_equal(_bits(alone.scores[0]), _bits(batched.scores[i]))


def test_filters_apply_inside_the_bf16_scan():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((500, 40)).astype(np.float32)
    q = rng.standard_normal((20, 40)).astype(np.float32)
    index = _index(x, "ip")
    allowed = np.arange(0, 500, 7)
    found = index.search(q, 5, allow=allowed)
    assert np.isin(found.ids, allowed).all()
    expected = ref.topk(ref.bf16_dot_products(q, index.stored_vectors()[allowed]), allowed, 5)
    np.testing.assert_array_equal(found.ids, expected.ids)


def test_recall_against_float32_compute_on_clustered_vectors():
    rng = np.random.default_rng(11)
    centers = rng.standard_normal((50, 128)).astype(np.float32)
    x = (centers[rng.integers(0, 50, 5000)] + 0.3 * rng.standard_normal((5000, 128))).astype(np.float32)
    q = (centers[rng.integers(0, 50, 200)] + 0.3 * rng.standard_normal((200, 128))).astype(np.float32)
    exact = FlatIndex(128, "cosine", "float32")
    exact.add(x)
    fast = FlatIndex(128, "cosine", "bfloat16", compute="bfloat16")
    fast.add(x)
    a, b = exact.search(q, 10).ids, fast.search(q, 10).ids
    recall = np.mean([len(set(a[i]) & set(b[i])) / 10 for i in range(len(q))])
    assert recall >= 0.95


def test_compute_needs_bfloat16_storage():
    with pytest.raises(ValueError, match="compute='bfloat16' needs dtype='bfloat16'"):
        FlatIndex(8, dtype="float32", compute="bfloat16")
    with pytest.raises(ValueError, match="unknown compute"):
        FlatIndex(8, dtype="bfloat16", compute="int8")
    with pytest.raises(ValueError, match="bf16_compute"):
        _core.flat_search(np.zeros((2, 4), np.float32), 2, np.zeros((1, 4), np.float32), 1,
                          storage=_core.Storage.F32, metric=_core.Metric.InnerProduct,
                          bf16_compute=True)


def test_compute_is_kept_by_save_load_copy_and_repr(tmp_path):
    rng = np.random.default_rng(0)
    index = _index(rng.standard_normal((30, 16)).astype(np.float32), "ip")
    index._search_options = {}
    path = tmp_path / "i.rgc"
    index.save(path)
    loaded = FlatIndex.load(path)
    assert loaded.compute == "bfloat16" and index.copy().compute == "bfloat16"
    assert "compute='bfloat16'" in repr(loaded)
    assert loaded.compute_level in ("amx", "avx512_bf16", "scalar")
    q = rng.standard_normal((3, 16)).astype(np.float32)
    np.testing.assert_array_equal(loaded.search(q, 4).ids, index.search(q, 4).ids)


def test_a_file_with_bf16_compute_over_float32_storage_is_refused(tmp_path):
    from ragcore._util.fileformat import read_index, write_index
    index = FlatIndex(4, dtype="float32")
    index.add(np.eye(4, dtype=np.float32))
    path = tmp_path / "i.rgc"
    index.save(path)
    params, arrays = read_index(path, "FlatIndex")
    params["compute"] = "bfloat16"
    write_index(path, "FlatIndex", params, {name: np.asarray(a) for name, a in arrays.items()})
    with pytest.raises(IndexFileError, match="params.compute"):
        FlatIndex.load(path)


def test_files_without_the_compute_field_load_as_float32_compute(tmp_path):
    from ragcore._util.fileformat import read_index, write_index
    index = FlatIndex(4, dtype="bfloat16")
    index.add(np.eye(4, dtype=np.float32))
    path = tmp_path / "i.rgc"
    index.save(path)
    params, arrays = read_index(path, "FlatIndex")
    del params["compute"]
    write_index(path, "FlatIndex", params, {name: np.asarray(a) for name, a in arrays.items()})
    assert FlatIndex.load(path).compute == "float32"


def test_every_level_passes_the_self_check_that_admits_amx():
    for level in LEVELS:
        assert _core.bf16_level_self_check(level)


def test_the_self_check_fails_a_wrong_score():
    for level in LEVELS:
        assert not _core.bf16_level_self_check(level, corrupt_one_score=True)


def test_the_level_in_use_is_the_fastest_that_passes_the_self_check():
    passing = [lvl for lvl in LEVELS if _core.bf16_level_self_check(lvl)]
    assert _core.best_bf16_level() == max(passing, key=int)
