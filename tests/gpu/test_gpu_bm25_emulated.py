"""The GPU BM25 plans' CUDA code, run on the CPU (tests/gpu/cuda_emu).

cuda/bm25_search.cu, bm25_pruned.cu and select.cu are compiled as C++ against
tests/gpu/cuda_emu/emu.h, which runs each launch's threads one at a time (a block's
threads as coroutines that meet at __ballot_sync / __shfl_sync), CUB's segmented
sort as std::sort and CUDA memory as host memory. The kernels' index arithmetic,
the chunk and group bookkeeping, the pruned plan's bound and fallback and the
exhaustive plan's selection then run as written, and must give BM25Index.search's
hits to the bit. What this cannot check: races between real threads, the CUDA
runtime itself, CUB, and speed; tests/gpu/test_gpu_bm25.py does on a device.
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

from ragcore.hits import Hits
from ragcore.sparse.gpu import _rank_of_slot

from _bm25_plans import candidate_search
from _bm25_corpora import VARIANTS, build, build_shuffled, corpora, queries, zipf_corpus, zipf_queries
from _hits_check import assert_hits_equal

sys.path.insert(0, str(Path(__file__).parent / "cuda_emu"))
import build as emu_build  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("g++") is None or emu_build.cuda_include() is None,
                                reason="needs g++ and the CUDA toolkit's headers")


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    try:
        return emu_build.build(tmp_path_factory.mktemp("cuda_emu"))
    except subprocess.CalledProcessError as err:
        pytest.fail(f"the emulated build failed:\n{err.stderr[-4000:]}")


def emulated_search(runner, index, qs, k, folder, exhaustive=False, dense_min_df=0, first=0,
                    chunk=0, group=0):
    """(Hits, scored exhaustively per query) from the CUDA code run on the CPU."""
    folder.mkdir(parents=True, exist_ok=True)
    impacts = index.impacts()
    ranks, sorted_ids = _rank_of_slot(impacts["slot_ids"])
    terms, weights, offsets, base = index.weighed_queries(qs)
    arrays = dict(offsets=impacts["offsets"], docs=impacts["docs"], values=impacts["values"],
                  ranks=ranks, sorted_ids=sorted_ids, terms=terms, weights=weights,
                  q_offsets=offsets, base=base)
    for name, array in arrays.items():
        np.ascontiguousarray(array).tofile(folder / name)
    (folder / "params.txt").write_text(f"{k} {int(exhaustive)} {dense_min_df} {first} {chunk} {group}\n")
    done = subprocess.run([str(runner), str(folder)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    nq = len(offsets) - 1
    scores = np.fromfile(folder / "scores", np.float32).reshape(nq, k)
    ids = np.fromfile(folder / "ids", np.int64).reshape(nq, k)
    fell_back = np.fromfile(folder / "exhaustive", np.uint8).astype(bool)
    used_dense_min_df = int(done.stdout.split()[-1])
    return Hits(scores, ids), fell_back, used_dense_min_df


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(corpus=corpora, qs=st.lists(queries, min_size=1, max_size=6),
       variant=st.sampled_from(VARIANTS), k=st.integers(1, 35), seed=st.integers(0, 2**16),
       n_removed=st.integers(0, 5), exhaustive=st.booleans(),
       dense_min_df=st.sampled_from((0, 1, 2, 4, 99)), first=st.sampled_from((0, 1, 5)),
       chunk=st.sampled_from((0, 1, 7)), group=st.sampled_from((0, 1, 2, 3)))
def test_small_corpora_equal_the_cpu_index(runner, tmp_path, corpus, qs, variant, k, seed,
                                           n_removed, exhaustive, dense_min_df, first, chunk,
                                           group):
    index = build_shuffled(corpus, variant, seed, n_removed)
    hits, fell_back, used = emulated_search(runner, index, qs, k, tmp_path / f"case{seed}",
                                            exhaustive, dense_min_df, first, chunk, group)
    assert_hits_equal(hits, index.search(qs, k))
    if exhaustive:
        assert fell_back.all()
    else:
        np.testing.assert_array_equal(fell_back, candidate_search(index, qs, k, used)[1])


@pytest.mark.parametrize("variant", VARIANTS)
def test_zipf_corpus_both_plans(runner, tmp_path, variant):
    index = build(zipf_corpus(3000, seed=4), variant, ids=np.arange(3000)[::-1] * 2)
    index.remove(np.arange(0, 6000, 14))
    qs = zipf_queries(60, seed=5)
    for k in (1, 10, 100, 4000):
        expected = index.search(qs, k)
        pruned, fell_back, used = emulated_search(runner, index, qs, k, tmp_path / f"p{k}")
        assert_hits_equal(pruned, expected)
        np.testing.assert_array_equal(fell_back, candidate_search(index, qs, k, used)[1])
        if k <= 10:
            assert fell_back.mean() < 0.5  # the pruned plan answers most queries
        exhaustive, _, _ = emulated_search(runner, index, qs, k, tmp_path / f"e{k}",
                                           exhaustive=True, first=64, chunk=500, group=7)
        assert_hits_equal(exhaustive, expected)


def test_ties_and_queries_without_terms(runner, tmp_path):
    corpus = [["a", "b"]] * 50 + [["a"]] * 50 + [["c"]] * 20
    index = build(corpus, "bm25+", ids=np.arange(120)[::-1] * 3)
    qs = [["a", "b"], ["b"], ["zzz"], []]
    for k in (1, 7, 60, 130):
        for dense_min_df in (0, 1, 60, 1000):
            hits, _, _ = emulated_search(runner, index, qs, k, tmp_path / f"{k}-{dense_min_df}",
                                         dense_min_df=dense_min_df)
            assert_hits_equal(hits, index.search(qs, k))
