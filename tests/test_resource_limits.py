"""Resource limits and native defenses (issue 18): thread counts, result sizes, sizes of
indexes, files that are not regular files, mapped files, and kernels given what
validation should have stopped."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from ragcore import BM25Index, FlatIndex, IndexFileError, IVFIndex, _core
from ragcore.hits import Hits


def _data(n, d=8, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


# Under AddressSanitizer (make test-asan) the address space is reserved for its shadow
# memory, so RLIMIT_AS cannot be lowered.
SANITIZED = os.environ.get("RAGCORE_SANITIZED") == "1"
needs_rlimit = pytest.mark.skipif(SANITIZED, reason="RLIMIT_AS cannot be set under ASan")


def _run_python(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ})


# ---- threads ------------------------------------------------------------------------------

@needs_rlimit
def test_thousands_of_threads_are_capped_at_the_cores():
    """n_threads=1200 used to abort the process once the system refused a thread (here:
    a 3 GiB address space holds about 380 thread stacks); the count is now capped."""
    result = _run_python("""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        from ragcore import BM25Index
        index = BM25Index()
        index.add(["quick brown fox %d" % i for i in range(3000)])
        hits = index.search(["quick fox %d" % i for i in range(2400)], 3, n_threads=1200)
        one = index.search(["quick fox %d" % i for i in range(2400)], 3, n_threads=1)
        assert (hits.ids == one.ids).all()
        print("ok")
    """)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ok" in result.stdout


@needs_rlimit
def test_a_thread_the_system_refuses_is_a_python_error():
    """With no address space left for a thread stack, parallel work raises RuntimeError
    (all started threads joined) instead of aborting."""
    result = _run_python("""
        import os, resource
        from ragcore import BM25Index
        index = BM25Index()
        # One thread until the limit: glibc would reuse a finished thread's stack.
        index.add(["quick brown fox %d" % i for i in range(3000)], n_threads=1)
        queries = ["quick fox %d" % i for i in range(2000)]
        index.search(queries, 3, n_threads=1)
        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        resource.setrlimit(resource.RLIMIT_AS, (used + (6 << 20), resource.RLIM_INFINITY))
        try:
            index.search(queries, 3, n_threads=2)
        except RuntimeError as err:
            print("refused:", err)
    """)
    if os.cpu_count() == 1:
        pytest.skip("one core: no worker thread is ever started")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "refused: could not start a worker thread" in result.stdout


# ---- result sizes --------------------------------------------------------------------------

K_HUGE = 2**28  # 3 GiB of padding for one query


def test_k_far_beyond_the_items_is_refused_flat():
    index = FlatIndex(8)
    index.add(_data(100))
    with pytest.raises(ValueError, match="k: 268435456 exceeds the 100 items"):
        index.search(_data(1), K_HUGE)
    assert (index.search(_data(2), 150).ids[:, 100:] == -1).all()  # modest padding stays


def test_k_far_beyond_the_items_is_refused_ivf_and_bm25():
    ivf = IVFIndex(8, 2)
    ivf.train(_data(50))
    ivf.add(_data(100))
    with pytest.raises(ValueError, match="k: 268435456 exceeds"):
        ivf.search(_data(1), K_HUGE)
    bm25 = BM25Index()
    bm25.add(["a quick brown fox"] * 100)
    with pytest.raises(ValueError, match="k: 268435456 exceeds"):
        bm25.search("quick", K_HUGE)


def test_ivf_rescore_product_saturates():
    """rescore = 2**62 overflowed rescore * k and returned only padding."""
    index = IVFIndex(8, 2, dtype="sq8")
    index.train(_data(50))
    index.add(_data(60, seed=1))
    q = _data(3, seed=2)
    hits = index.search(q, 4, nprobe=2, rescore=2**62)  # 4 * 2**62 wraps to 0
    want = index.search(q, 4, nprobe=2, rescore=15)  # 15 * 4 = every row
    np.testing.assert_array_equal(hits.ids, want.ids)
    assert (hits.ids != -1).all()


# ---- sizes of indexes ---------------------------------------------------------------------

@pytest.mark.parametrize("make", [lambda: FlatIndex(dim=2**40), lambda: IVFIndex(2**40, 4),
                                  lambda: IVFIndex(8, nlist=2**40),
                                  lambda: IVFIndex(8, 4, max_iter=2**40)])
def test_sizes_beyond_the_documented_limits_are_refused(make):
    with pytest.raises(ValueError, match="must be <="):
        make()


def test_the_largest_dimension_is_accepted():
    index = FlatIndex(dim=65536)
    index.add(np.ones((1, 65536), dtype=np.float32))
    assert index.search(np.ones(65536, dtype=np.float32), 1).ids[0, 0] == 0


# ---- files -----------------------------------------------------------------------------------

@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_loading_a_fifo_is_refused_without_blocking(tmp_path):
    path = tmp_path / "index.fifo"
    os.mkfifo(path)
    outcome = []

    def load():
        try:
            FlatIndex.load(path)
        except IndexFileError as err:
            outcome.append(str(err))

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():  # unblock the reader so the test process can end
        with open(path, "wb"):
            pass
        thread.join(10)
        pytest.fail("FlatIndex.load blocked on a FIFO")
    assert outcome and "not a regular file" in outcome[0]


def test_loading_a_directory_is_refused(tmp_path):
    with pytest.raises(IndexFileError, match="not a regular file"):
        BM25Index.load(tmp_path)


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs /proc/self/maps")
def test_mapped_files_are_mapped_read_only_and_private(tmp_path):
    index = FlatIndex(8)
    index.add(_data(64))
    path = tmp_path / "mapped.rc"
    index.save(path)
    mapped = FlatIndex.load(path, mmap=True)
    with open("/proc/self/maps") as f:
        modes = [line.split()[1] for line in f if line.rstrip().endswith(str(path))]
    assert modes and all(mode == "r--p" for mode in modes), modes
    assert not mapped._vectors.flags.writeable
    np.testing.assert_array_equal(mapped.search(_data(2), 3).ids, index.search(_data(2), 3).ids)


# ---- kernels given what validation should have stopped ---------------------------------------

def test_ivf_search_skips_probes_of_nan_centroids():
    """NaN coarse distances dropped probes (-1) and the scan indexed list -1: heap
    corruption with 8 or more queries. Such probes are now skipped."""
    rows = _data(40)
    centroids = _data(4, seed=3)
    centroids[1:] = np.nan
    norms = np.einsum("ij,ij->i", centroids, centroids)
    offsets = np.array([0, 10, 20, 30, 40], dtype=np.int64)
    ids = np.arange(40, dtype=np.int64)
    for _ in range(20):
        out_ids = _core.ivf_search(
            rows, _data(16, seed=4), 5, centroids=centroids, centroid_sq_norms=norms,
            list_offsets=offsets, storage=_core.Storage.F32, ids=ids, sq_norms=None,
            metric=_core.Metric.InnerProduct, nprobe=4, code_min=None, code_scale=None,
            exact_rows=None, rescore=1, allow=None, allow_by_row=False, n_threads=2).ids
        assert ((out_ids >= -1) & (out_ids < 40)).all()


@pytest.mark.parametrize("value", [np.nan, np.inf, 1e30])
def test_kmeans_refuses_points_that_are_not_finite_or_too_large(value):
    x = _data(30)
    x[7, 3] = value
    with pytest.raises(ValueError, match="point 7"):
        _core.kmeans(x, 4, max_iter=3, tol=0.0, seed=0, init=_core.KMeansInit.KMeansPlusPlus,
                     n_threads=1)


# ---- Hits ------------------------------------------------------------------------------------

def test_hits_ids_below_padding_are_refused():
    with pytest.raises(ValueError, match="-1 for padding"):
        Hits(np.zeros((1, 2), np.float32), np.array([[3, -2]], dtype=np.int64))
    Hits(np.array([[1.0, -np.inf]], np.float32), np.array([[3, -1]], dtype=np.int64))
