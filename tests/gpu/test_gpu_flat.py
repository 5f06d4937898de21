"""GpuFlatIndex on a CUDA device against the reference and the CPU index.

Skipped without a CUDA device. Covers every metric and storage dtype, both
kernels (forced), chunk and group sizes small enough that many chunks are
merged and thresholds move, k from 1 to beyond n and up to 16384, exact ties,
device inputs (torch, cupy) read in place, results left on the device,
add/remove, save/load and bad device input.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ragcore
from ragcore import reference as ref
from _hits_check import assert_hits_close, assert_hits_equal
from _dense_data import make_data, reference_on_stored, rounding_tolerance  # same data

pytestmark = pytest.mark.skipif(ragcore.cuda_device_count() == 0, reason="needs a CUDA device")

METRICS = ("ip", "cosine", "l2")
DTYPES = ("float32", "float16", "bfloat16")
slow_ok = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def cases(draw, data_kind):
    n = draw(st.sampled_from((1, 7, 97, 1023, 5000, 20000)))
    d = draw(st.sampled_from((1, 3, 8, 16, 17, 64, 100, 385)))
    if n * d > 2_000_000:
        d = draw(st.sampled_from((3, 16, 64)))
    return dict(
        n=n, d=d,
        nq=draw(st.sampled_from((1, 2, 3, 5, 16, 17, 70))),
        k=draw(st.integers(1, n + 5)),
        metric=draw(st.sampled_from(METRICS)),
        dtype=draw(st.sampled_from(DTYPES)),
        path=draw(st.sampled_from(("Auto", "Scan", "Tiled", "TensorCores"))),
        first=draw(st.sampled_from((0, 1, 13, 500))),
        chunk=draw(st.sampled_from((0, 1, 64, 1000))),
        group=draw(st.sampled_from((0, 1, 3, 16))),
        seed=draw(st.integers(0, 2**32 - 1)),
        data=data_kind,
    )


def gpu_path(name: str):
    """The _cuda.GpuPath member of this name (imported here: the module may not be built)."""
    from ragcore import _cuda
    return _cuda.GpuPath.__members__[name]


def build(c, corpus, ids):
    index = ragcore.GpuFlatIndex(c["d"], metric=c["metric"], dtype=c["dtype"])
    index.add(corpus, ids=ids)
    index._search_options = dict(path=gpu_path(c["path"]), first_chunk_rows=c["first"],
                                 max_chunk_rows=c["chunk"], max_group=c["group"])
    return index


@settings(slow_ok, max_examples=80)
@given(cases("gaussian"))
def test_matches_reference_within_rounding(c):
    corpus, queries, ids = make_data(c)
    index = build(c, corpus, ids)
    hits = index.search(queries, c["k"])
    stored = index.to("cpu").stored_vectors()
    scores = reference_on_stored(stored, queries, c["metric"])
    assert_hits_close(hits, scores, index.ids, c["k"], rounding_tolerance(queries, stored, c["metric"]))


@settings(slow_ok, max_examples=80)
@given(cases("integers"))
def test_exact_ties_match_reference_exactly(c):
    if c["metric"] == "cosine":
        c = dict(c, metric="ip")  # normalising breaks exact arithmetic
    corpus, queries, ids = make_data(c)
    index = build(c, corpus, ids)
    want = ref.topk(ref.dense_scores(corpus, queries, c["metric"]), ids, c["k"])
    assert_hits_equal(index.search(queries, c["k"]), want)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("nq", (1, 9, 300))
@pytest.mark.parametrize("path", ("Auto", "TensorCores"))
def test_same_ids_as_the_cpu_index(metric, dtype, nq, path):
    rng = np.random.default_rng(7)
    corpus = rng.standard_normal((30_000, 96)).astype(np.float32)
    queries = rng.standard_normal((nq, 96)).astype(np.float32)
    cpu = ragcore.FlatIndex(96, metric=metric, dtype=dtype)
    cpu.add(corpus)
    want = cpu.search(queries, 20)
    gpu = cpu.to("cuda")
    gpu._search_options = dict(path=gpu_path(path))
    got = gpu.search(queries, 20)
    np.testing.assert_allclose(got.scores, want.scores, rtol=1e-5, atol=1e-5)
    # Ids may differ only where two scores are within rounding of each other.
    differ = got.ids != want.ids
    assert differ.mean() < 0.02, differ.mean()
    for row, col in zip(*np.nonzero(differ[:, :-1])):  # the last may swap with the 21st
        assert want.ids[row, col] in got.ids[row], "a CPU result is missing on the GPU"


@pytest.mark.parametrize("k", (2048, 16384))
@pytest.mark.parametrize("nq", (1, 40))
@pytest.mark.parametrize("dtype", ("float32", "float16"))
def test_large_k(k, nq, dtype):
    rng = np.random.default_rng(k)
    corpus = rng.standard_normal((40_000, 32)).astype(np.float32)
    corpus[20_000:20_500] = corpus[:500]  # exact ties across the threshold
    queries = rng.standard_normal((nq, 32)).astype(np.float32)
    ids = rng.permutation(40_000)
    cpu = ragcore.FlatIndex(32, dtype=dtype)
    cpu.add(corpus, ids=ids)
    want = cpu.search(queries, k)
    got = ragcore.GpuFlatIndex.from_index(cpu).search(queries, k)
    assert got.ids.shape == (nq, k)
    np.testing.assert_allclose(got.scores, want.scores, rtol=1e-5, atol=1e-5)
    # Ids may differ only where scores are within rounding of each other.
    same = (got.ids == want.ids).mean()
    assert same > 0.99, same


def test_empty_index_and_k_beyond_n_pad():
    index = ragcore.GpuFlatIndex(4)
    hits = index.search(np.ones(4, np.float32), 3)
    assert (hits.ids == -1).all() and np.isneginf(hits.scores).all()
    index.add(np.eye(4, dtype=np.float32), ids=[10, 11, 12, 13])
    hits = index.search(np.ones(4, np.float32), 6)
    np.testing.assert_array_equal(hits.ids[0], [10, 11, 12, 13, -1, -1])


def test_add_remove_match_a_rebuilt_index():
    rng = np.random.default_rng(1)
    corpus = rng.standard_normal((3000, 40)).astype(np.float32)
    queries = rng.standard_normal((7, 40)).astype(np.float32)
    index = ragcore.GpuFlatIndex(40, metric="l2", dtype="float16")
    for part in np.array_split(np.arange(3000), 5):  # grows the device buffer
        index.add(corpus[part], ids=part * 2)
    index.remove(np.arange(0, 6000, 6))
    rebuilt = ragcore.FlatIndex(40, metric="l2", dtype="float16")
    keep = np.setdiff1d(np.arange(3000) * 2, np.arange(0, 6000, 6))
    rebuilt.add(corpus[keep // 2], ids=keep)
    want = rebuilt.search(queries, 50)
    got = index.search(queries, 50)
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_allclose(got.scores, want.scores, rtol=1e-5, atol=1e-4)


def test_save_load_round_trip(tmp_path):
    rng = np.random.default_rng(2)
    index = ragcore.GpuFlatIndex(24, metric="cosine", dtype="bfloat16")
    index.add(rng.standard_normal((500, 24)).astype(np.float32))
    queries = rng.standard_normal((3, 24)).astype(np.float32)
    index.save(tmp_path / "gpu.rcidx")
    loaded = ragcore.GpuFlatIndex.load(tmp_path / "gpu.rcidx")
    assert_hits_equal(loaded.search(queries, 10), index.search(queries, 10))
    cpu = ragcore.FlatIndex.load(tmp_path / "gpu.rcidx")
    np.testing.assert_array_equal(cpu.search(queries, 10).ids, index.search(queries, 10).ids)


def test_concurrent_searches_during_adds():
    rng = np.random.default_rng(4)
    base = rng.standard_normal((5000, 16)).astype(np.float32)
    index = ragcore.GpuFlatIndex(16)
    index.add(base)
    queries = rng.standard_normal((4, 16)).astype(np.float32)
    want = index.search(queries, 5)
    errors = []

    def searcher():
        try:
            for _ in range(20):
                hits = index.search(queries, 5)
                # Added rows are far below every query's top 5 (tiny norms).
                np.testing.assert_array_equal(hits.ids, want.ids)
        except Exception as err:  # reported in the main thread
            errors.append(err)

    threads = [threading.Thread(target=searcher) for _ in range(3)]
    for t in threads:
        t.start()
    for _ in range(10):
        index.add(1e-6 * rng.standard_normal((2000, 16)).astype(np.float32))
    for t in threads:
        t.join()
    assert not errors, errors[0]


# ---- device arrays ---------------------------------------------------------



def _torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    return torch


def test_torch_queries_read_in_place_and_results_on_device():
    torch = _torch_cuda()
    rng = np.random.default_rng(5)
    corpus = rng.standard_normal((2000, 64)).astype(np.float32)
    index = ragcore.GpuFlatIndex(64)
    index.add(corpus)
    q = torch.from_numpy(rng.standard_normal((6, 64)).astype(np.float32)).cuda()
    want = index.search(q.cpu().numpy(), 10)
    out = index.search(q, 10, return_device=True)
    assert isinstance(out.scores, torch.Tensor) and out.scores.device == q.device
    assert out.ids.dtype == torch.int64
    assert_hits_equal(out.to_hits(), want)
    # Strided rows (a column slice) are read in place too; other dtypes are converted.
    wide = torch.zeros((6, 80), device="cuda")
    wide[:, :64] = q
    assert_hits_equal(index.search(wide[:, :64], 10), want)
    with pytest.warns(ragcore.CopyWarning):
        index.search(q.half(), 10)


def test_bad_device_queries_are_refused():
    torch = _torch_cuda()
    index = ragcore.GpuFlatIndex(8, metric="cosine")
    index.add(np.eye(8, dtype=np.float32))
    q = torch.ones((3, 8), device="cuda")
    q[1, 2] = float("nan")
    with pytest.raises(ValueError, match="row 1 contains NaN"):
        index.search(q, 2)
    with pytest.raises(ValueError, match="row 0 is all zeros"):
        index.search(torch.zeros((2, 8), device="cuda"), 2)
    with pytest.raises(ValueError, match="expected dim=8"):
        index.search(torch.ones((2, 9), device="cuda"), 2)
    with pytest.raises(TypeError, match="floating-point"):
        index.search(torch.ones((2, 8), device="cuda", dtype=torch.int32), 2)


def test_cupy_queries():
    cupy = pytest.importorskip("cupy")
    rng = np.random.default_rng(6)
    index = ragcore.GpuFlatIndex(32, metric="l2")
    index.add(rng.standard_normal((1000, 32)).astype(np.float32))
    q = rng.standard_normal((4, 32)).astype(np.float32)
    out = index.search(cupy.asarray(q), 7, return_device=True)
    assert isinstance(out.ids, cupy.ndarray)
    assert_hits_equal(out.to_hits(), index.search(q, 7))
