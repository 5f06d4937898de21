"""bench/_faiss_refine.py and bench/_clustered_cache.py, the helpers of the 1M runs of
bench/pq4.py and bench/rabitq.py: results equal to the plain faiss / generator ones."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from ragcore.cli.bench import data

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shared_rows_search_equals_a_plain_index_refine_flat():
    faiss = pytest.importorskip("faiss")
    helpers = _load("_faiss_refine")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3000, 32), dtype=np.float32)
    q = rng.standard_normal((20, 32), dtype=np.float32)
    ip = faiss.METRIC_INNER_PRODUCT
    plain = faiss.IndexRefineFlat(faiss.IndexIVFPQFastScan(faiss.IndexFlatL2(32), 32, 16, 8, 4, ip))
    plain.train(x)
    plain.add(x)
    rows = helpers.shared_rows(faiss, x, ip)
    coarse = faiss.IndexFlatL2(32)
    base = faiss.IndexIVFPQFastScan(coarse, 32, 16, 8, 4, ip)
    shared = helpers.refine_flat_on(faiss, base, rows, x, x)
    for k_factor in (1, 4):
        params = faiss.IndexRefineSearchParameters(
            k_factor=k_factor, base_index_params=faiss.SearchParametersIVF(nprobe=4))
        want, got = plain.search(q, 10, params=params), shared.search(q, 10, params=params)
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_array_equal(got[0], want[0])
    with pytest.raises(ValueError, match="expected an empty index"):
        helpers.refine_flat_on(faiss, base, rows, x, x)
    with pytest.raises(ValueError, match="rows hold"):
        helpers.refine_flat_on(faiss, faiss.IndexFlatIP(32), rows, x, x[:10])


def test_clustered_cache_writes_then_reads_the_generator_output(tmp_path):
    cache = _load("_clustered_cache")
    path = str(tmp_path / "c.npy")
    want = data.clustered(500, 16, 0, 7)
    first = cache.clustered(500, 16, 7, path)
    again = cache.clustered(500, 16, 7, path)
    for got in (first, again):
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    with pytest.raises(ValueError, match="--cache"):
        cache.clustered(500, 16, 8, path)
