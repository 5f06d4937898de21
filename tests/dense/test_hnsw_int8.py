"""HNSWIndex dtype="int8": the native quantiser and int8 kernels against the numpy
reference (exactly: the codes are defined bit for bit and the sums are integers), and the
index's exact re-scoring: full ef is exact search, recall close to the float32 graph's."""

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import ragcore
from ragcore import _core, reference
from ragcore.reference.int8 import int8_codes, int8_dots, int8_scores
from _hnsw_data import clustered, recall


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 20), d=st.integers(1, 90), seed=st.integers(0, 10_000),
       scale=st.sampled_from([1e-30, 1e-3, 1.0, 1e6]), zero_row=st.booleans())
def test_quantizer_equals_the_reference(n, d, seed, scale, zero_row):
    x = (np.random.default_rng(seed).standard_normal((n, d)) * scale).astype(np.float32)
    if zero_row:
        x[0] = 0.0
    codes, scales = _core.quantize_int8(x)
    want_codes, want_scales = int8_codes(x)
    np.testing.assert_array_equal(scales, want_scales)
    np.testing.assert_array_equal(codes, want_codes)
    assert np.abs(codes.astype(np.int64)).max() <= 127


SIMD_LEVELS = [level for level in _core.SimdLevel.__members__.values()
               if _core.simd_level_available(level)]
KERNEL_NAMES = {"Scalar": ("scalar",), "Avx2": ("avx2",), "Avx512": ("avx512vnni", "avx512bw")}


@settings(max_examples=80, deadline=None)
@given(n=st.integers(0, 13), d=st.integers(1, 200), seed=st.integers(0, 10_000),
       level=st.sampled_from(SIMD_LEVELS), extremes=st.booleans())
def test_int8_kernels_equal_the_integer_reference(n, d, seed, level, extremes):
    rng = np.random.default_rng(seed)
    if extremes:  # +-127 everywhere: the largest pair sums (AVX2's int16 step must not saturate)
        q = rng.choice(np.array([-127, 127], np.int8), d)
        rows = rng.choice(np.array([-127, 0, 127], np.int8), (n, d))
    else:
        q = rng.integers(-127, 128, d).astype(np.int8)
        rows = rng.integers(-127, 128, (n, d)).astype(np.int8)
    got = _core.int8_dots(q, rows, simd_level=level)
    np.testing.assert_array_equal(got, int8_dots(q, rows))
    np.testing.assert_array_equal(got, _core.int8_dots(q, rows, simd_level=_core.SimdLevel.Scalar))


def test_codes_outside_the_quantiser_range_are_refused():
    q = np.zeros(8, np.int8)
    rows = np.zeros((2, 8), np.int8)
    rows[1, 3] = -128
    with pytest.raises(ValueError, match=r"rows.*\[-127, 127\]"):
        _core.int8_dots(q, rows)
    with pytest.raises(ValueError, match=r"q.*\[-127, 127\]"):
        _core.int8_dots(np.full(8, -128, np.int8), rows[:1])


def test_the_kernel_is_chosen_at_run_time_per_level():
    assert _core.int8_kernel_name() in ("avx512vnni", "avx512bw", "avx2", "scalar")
    for name, level in _core.SimdLevel.__members__.items():
        if _core.simd_level_available(level):
            assert _core.int8_kernel_name(level) in KERNEL_NAMES[name]
        else:
            with pytest.raises(ValueError, match="not available"):
                _core.int8_kernel_name(level)


def graph_at(level, snap, d, M):
    g = _core.HnswIndex(d, metric=_core.Metric.InnerProduct, storage=_core.Storage.F32, M=M,
                        ef_construction=24, simd_level=level, int8_walk=True)
    g.restore(snap["vectors"].view(np.float32).reshape(-1, d), None, snap["ids"], snap["levels"],
              snap["links0"], snap["upper"], snap["upper_offsets"], entry=int(snap["entry"]),
              rng_state=int(snap["rng_state"]), borrow_vectors=False)
    return g


@pytest.mark.parametrize("level", SIMD_LEVELS, ids=str)
def test_int8_walk_on_one_graph_finds_the_same_nodes_at_every_level(level):
    x = clustered(600, 40, seed=8)
    q = clustered(20, 40, seed=9)
    built = ragcore.HNSWIndex(40, "ip", M=6, ef_construction=24, dtype="int8")
    built.add(x, n_threads=1)
    snap = built._graph.snapshot()
    # ef = k: the hits are the walk's candidates, chosen on the code sums alone, which every
    # kernel computes exactly; only the float32 re-scores' rounding may differ by level.
    got = graph_at(level, snap, 40, 6).search(q, 10, ef=10, n_threads=1)
    want = graph_at(_core.SimdLevel.Scalar, snap, 40, 6).search(q, 10, ef=10, n_threads=1)
    np.testing.assert_array_equal(np.sort(got.ids, axis=1), np.sort(want.ids, axis=1))
    np.testing.assert_allclose(got.scores, want.scores, rtol=1e-5, atol=1e-6)


def test_estimates_approach_the_float_scores():
    x = clustered(500, 64, seed=1)
    q = clustered(1, 64, seed=2)[0]
    est = int8_scores(q, x)
    assert np.abs(est - x.astype(np.float64) @ q).max() < 0.02  # unit vectors, d = 64


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 300), d=st.sampled_from([1, 7, 16, 33, 64]), k=st.integers(1, 20),
       metric=st.sampled_from(["ip", "cosine", "l2"]), M=st.integers(2, 12),
       seed=st.integers(0, 10_000))
def test_full_ef_is_exact_search_with_float32_scores(n, d, k, metric, M, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    q = rng.standard_normal((4, d)).astype(np.float32)
    ids = rng.permutation(3 * n)[:n].astype(np.int64)
    index = ragcore.HNSWIndex(d, metric, M=M, ef_construction=16, dtype="int8", seed=seed)
    index.add(x, ids=ids, n_threads=1)
    got = index.search(q, k, ef=n)
    flat = ragcore.FlatIndex(d, metric)
    flat.add(x, ids=ids)
    want = flat.search(q, k)  # the candidates are re-scored exactly: FlatIndex's bits
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_array_equal(got.scores, want.scores)


def test_same_graph_as_float32_and_recall_close_to_it():
    x = clustered(3000, 32, seed=3)
    q = clustered(200, 32, seed=4)
    truth = reference.flat_search(x, q, 10).ids
    built = {}
    for dtype in ("float32", "int8"):
        index = ragcore.HNSWIndex(32, "ip", M=8, ef_construction=40, dtype=dtype)
        index.add(x, n_threads=1)
        built[dtype] = index
    a, b = (built[t]._graph.snapshot() for t in ("float32", "int8"))
    np.testing.assert_array_equal(a["links0"], b["links0"])
    for ef in (16, 40, 100):
        r32 = recall(built["float32"].search(q, 10, ef=ef).ids, truth)
        r8 = recall(built["int8"].search(q, 10, ef=ef).ids, truth)
        assert r8 >= r32 - 0.02, (ef, r32, r8)
    assert built["int8"].memory_bytes() > built["float32"].memory_bytes()  # codes beside


@pytest.mark.parametrize("mmap", [False, True])
def test_save_and_load_keep_int8_and_its_results(tmp_path, mmap):
    x = clustered(800, 24, seed=5)
    q = clustered(30, 24, seed=6)
    index = ragcore.HNSWIndex(24, "l2", M=6, ef_construction=32, dtype="int8")
    index.add(x)
    path = tmp_path / "int8.rc"
    index.save(path)
    loaded = ragcore.HNSWIndex.load(path, mmap=mmap)
    assert loaded.dtype == "int8"
    for ef in (8, 64):
        a, b = index.search(q, 5, ef=ef), loaded.search(q, 5, ef=ef)
        np.testing.assert_array_equal(a.ids, b.ids)
        np.testing.assert_array_equal(a.scores, b.scores)
    loaded.add(x[:10] * 0.5)  # a later add copies the mapped vectors and encodes the new ones
    assert len(loaded) == 810


@settings(max_examples=20, deadline=None)
@given(n=st.integers(20, 300), fraction=st.floats(0.05, 1.0), seed=st.integers(0, 10_000),
       metric=st.sampled_from(["ip", "l2"]))
def test_filtered_int8_walk_returns_allowed_ids_with_exact_scores(n, fraction, seed, metric):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 16)).astype(np.float32)
    q = rng.standard_normal((3, 16)).astype(np.float32)
    allowed = np.flatnonzero(rng.random(n) < fraction)
    assume(len(allowed) > 0)
    index = ragcore.HNSWIndex(16, metric, M=4, ef_construction=16, dtype="int8")
    index.add(x, n_threads=1)
    # exact_below=0: the walk itself, never the exact scoring of the allowed set
    report = np.full(2, -1, dtype=np.int64)
    got = index._graph.search(q, 5, ef=n, allow_ids=allowed, exact_below=0, n_threads=1,
                              filter_out=report)
    assert report[0] == 0 and report[1] == len(allowed)  # the walk, all of them allowed
    flat = ragcore.FlatIndex(16, metric)
    flat.add(x)
    want = flat.search(q, 5, allow=allowed)
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_array_equal(got.scores, want.scores)
