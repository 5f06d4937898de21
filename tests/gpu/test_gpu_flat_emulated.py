"""DeviceCorpus::search's CUDA code run on the CPU (tests/gpu/cuda_emu).

cuda/flat_search.cu, device_corpus.cu, select.cu and the scan and tiled kernels
(score_scan.cuh, score_tiled.cuh) are compiled as C++ against tests/gpu/cuda_emu/emu.h,
which runs each block's threads as coroutines that meet at __syncthreads and at the
warp-wide intrinsics, CUB's segmented sort as std::sort and CUDA memory as host memory.
The query upload, preparation and checks, the plan, the group and chunk schedule, both
kernels' index arithmetic and thresholds, and the selection then run as written, and are
compared with FlatIndex.search:
- integer data (every sum exact in float32, in any order): the same hits to the bit,
  exact ties included;
- gaussian data: the kernels sum in another order than the CPU (8 lanes per row and a
  butterfly, or 16-deep tiles), so scores agree within rounding_tolerance
  (4e-6 x (d + 4) x |q| x max |x|) and the ids wherever no two scores are that close.
Not covered: the tensor-core kernels (wmma: the Auto choice for fp16 / bf16 batches of
two or more queries, here forced to the scan or tiled kernel), races between real
threads, the CUDA runtime, CUB and speed; test_gpu_flat.py covers them on a device.
Needs g++ and the CUDA toolkit's headers (nvcc); skipped without them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ragcore
from ragcore.dense._metric import NATIVE_METRIC
from ragcore.dense._storage import NATIVE_STORAGE
from ragcore.hits import Hits

from _dense_data import make_data, reference_on_stored, rounding_tolerance
from _hits_check import assert_hits_close, assert_hits_equal

sys.path.insert(0, str(Path(__file__).parent / "cuda_emu"))
import build as emu_build  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("g++") is None or emu_build.cuda_include() is None,
                                reason="needs g++ and the CUDA toolkit's headers")

PATHS = {"Auto": 0, "Scan": 1, "Tiled": 2}  # gpu_flat.h GpuPath


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    try:
        return emu_build.build(tmp_path_factory.mktemp("cuda_emu"), "flat")
    except subprocess.CalledProcessError as err:
        pytest.fail(f"the emulated build failed:\n{err.stderr[-4000:]}")


def emulated_search(runner, index, queries, k, folder, path="Auto", first=0, chunk=0, group=0,
                    first_part=0, pad=0):
    """Hits of DeviceCorpus::search run on the CPU over the rows FlatIndex `index` stores, as
    GpuFlatIndex uploads them; queries are passed with `pad` extra values per row (a row
    stride above dim). Raises ValueError with the native message for invalid arguments."""
    folder.mkdir(parents=True, exist_ok=True)
    vectors, ids, sq_norms, sorted_ids = index.stored_arrays()
    ranks = np.searchsorted(sorted_ids, ids).astype(np.int32)
    queries = np.atleast_2d(np.asarray(queries, np.float32))
    padded = np.concatenate([queries, np.full((len(queries), pad), 7.0, np.float32)], axis=1)
    arrays = dict(rows=vectors, sq_norms=np.zeros(0, np.float32) if sq_norms is None else sq_norms,
                  ranks=ranks, sorted_ids=sorted_ids, queries=padded)
    for name, array in arrays.items():
        np.ascontiguousarray(array).tofile(folder / name)
    params = (index.dim, int(NATIVE_STORAGE[index.dtype]), int(NATIVE_METRIC[index.metric]), k,
              index.dim + pad, int(index.metric == "cosine"), PATHS[path], first_part, first,
              chunk, group)
    (folder / "params.txt").write_text(" ".join(map(str, params)) + "\n")
    done = subprocess.run([str(runner), str(folder)], capture_output=True, text=True)
    if done.returncode == 1:
        raise ValueError(done.stderr.strip().removeprefix("invalid_argument: "))
    assert done.returncode == 0, done.stderr
    nq = len(queries)
    scores = np.fromfile(folder / "scores", np.float32).reshape(nq, k)
    out_ids = np.fromfile(folder / "ids", np.int64).reshape(nq, k)
    return Hits(scores, out_ids)


@st.composite
def cases(draw, data_kind):
    n = draw(st.sampled_from((1, 7, 97, 600)))
    dtype = draw(st.sampled_from(("float32", "float16", "bfloat16")))
    nq = draw(st.sampled_from((1, 2, 3, 5, 16, 17, 70)))
    path = draw(st.sampled_from(tuple(PATHS)))
    if dtype != "float32" and path == "Auto" and nq > 1:
        path = draw(st.sampled_from(("Scan", "Tiled")))  # Auto would take the tensor cores
    return dict(
        n=n, d=draw(st.sampled_from((1, 3, 8, 17, 40))), nq=nq, k=draw(st.integers(1, n + 5)),
        metric=draw(st.sampled_from(("ip", "cosine", "l2"))), dtype=dtype, path=path,
        first=draw(st.sampled_from((0, 1, 13, 500))), chunk=draw(st.sampled_from((0, 1, 64))),
        group=draw(st.sampled_from((0, 1, 3, 16))), first_part=draw(st.integers(0, n)),
        pad=draw(st.sampled_from((0, 5))), seed=draw(st.integers(0, 2**32 - 1)), data=data_kind)


def cpu_index(c, corpus, ids):
    index = ragcore.FlatIndex(c["d"], metric=c["metric"], dtype=c["dtype"])
    index.add(corpus, ids=ids)
    return index


def run_case(runner, tmp_path, c, index, queries):
    return emulated_search(runner, index, queries, c["k"], tmp_path / f"case{c['seed']}",
                           c["path"], c["first"], c["chunk"], c["group"], c["first_part"],
                           c["pad"])


slow_ok = settings(deadline=None, max_examples=40,
                   suppress_health_check=[HealthCheck.too_slow,
                                          HealthCheck.function_scoped_fixture])


@slow_ok
@given(cases("integers"))
def test_integer_data_equals_the_cpu_index_to_the_bit(runner, tmp_path, c):
    if c["metric"] == "cosine":
        c = dict(c, metric="ip")  # normalising breaks exact arithmetic
    corpus, queries, ids = make_data(c)
    index = cpu_index(c, corpus, ids)
    assert_hits_equal(run_case(runner, tmp_path, c, index, queries), index.search(queries, c["k"]))


@slow_ok
@given(cases("gaussian"))
def test_gaussian_data_matches_the_cpu_index_within_rounding(runner, tmp_path, c):
    corpus, queries, ids = make_data(c)
    index = cpu_index(c, corpus, ids)
    got = run_case(runner, tmp_path, c, index, queries)
    stored = index.stored_vectors()
    tol = rounding_tolerance(queries, stored, c["metric"])
    assert_hits_close(got, reference_on_stored(stored, queries, c["metric"]), index.ids, c["k"],
                      tol)
    want = index.search(queries, c["k"])
    real = want.ids != -1
    np.testing.assert_array_equal(got.ids == -1, ~real)
    diff = np.abs(got.scores[real].astype(np.float64) - want.scores[real])
    assert (diff <= np.broadcast_to(tol[:, None], real.shape)[real]).all(), diff.max()


@pytest.mark.parametrize("path", ("Scan", "Tiled"))
def test_many_chunks_and_groups(runner, tmp_path, path):
    c = dict(n=3000, d=24, nq=40, k=37, metric="l2", dtype="float32", seed=3, data="integers")
    corpus, queries, ids = make_data(c)
    index = cpu_index(c, corpus, ids)
    want = index.search(queries, c["k"])
    for first, chunk, group in ((0, 0, 0), (1, 7, 3), (64, 500, 16)):
        got = emulated_search(runner, index, queries, c["k"], tmp_path / f"{first}-{chunk}",
                              path, first, chunk, group, first_part=1000)
        assert_hits_equal(got, want)


@pytest.mark.parametrize("metric", ("ip", "cosine", "l2"))
def test_bad_query_rows_are_refused_naming_the_first(runner, tmp_path, metric):
    index = ragcore.FlatIndex(4, metric=metric)
    index.add(np.eye(4, dtype=np.float32))
    queries = np.ones((4, 4), np.float32)
    queries[2, 1] = np.nan
    queries[3, 0] = np.inf
    with pytest.raises(ValueError, match="queries row 2 contains NaN or infinity"):
        emulated_search(runner, index, queries, 2, tmp_path / "nan")
    queries = np.ones((3, 4), np.float32)
    queries[1] = 1e19
    with pytest.raises(ValueError, match="queries row 1 has a norm above 1e18"):
        emulated_search(runner, index, queries, 2, tmp_path / "large")
    queries = np.ones((3, 4), np.float32)
    queries[2] = 0.0
    if metric == "cosine":
        with pytest.raises(ValueError, match="queries row 2 is all zeros"):
            emulated_search(runner, index, queries, 2, tmp_path / "zero")
    else:
        assert_hits_equal(emulated_search(runner, index, queries, 2, tmp_path / "zero"),
                          index.search(queries, 2))
