"""An IVF build (coarse k-means, PQ codebooks, assignment, encoding) is a function of the
data and the seed: the same seed gives the same index file, byte for byte, on 1 and on 2
threads; another seed gives another."""

import numpy as np
import pytest

from ragcore import IVFIndex
from _ivf_data import clustered


def built_file(tmp_path, name, dtype, kw, x, seed, n_threads):
    index = IVFIndex(x.shape[1], 8, "ip", dtype, seed=seed, **kw)
    index.train(x[:600], n_threads=n_threads)
    index.add(x, n_threads=n_threads)
    path = tmp_path / name
    index.save(path)
    return path.read_bytes()


@pytest.mark.parametrize("dtype, kw", [("pq4", {"m": 8}), ("rabitq", {"bits": 1}),
                                       ("rabitq", {"bits": 3}), ("float32", {})])
def test_same_seed_same_index_file_on_any_thread_count(tmp_path, dtype, kw):
    x = clustered(3000, 32, 8, seed=3)
    one = built_file(tmp_path, "a", dtype, kw, x, 5, 1)
    assert one == built_file(tmp_path, "b", dtype, kw, x, 5, 1)
    assert one == built_file(tmp_path, "c", dtype, kw, x, 5, 2)
    assert one != built_file(tmp_path, "d", dtype, kw, x, 6, 1)


@pytest.mark.parametrize("bits", [1, 4])
def test_rabitq_encoding_in_tiles_equals_one_call(monkeypatch, bits):
    from ragcore import _core
    from ragcore.dense import ivf_rabitq
    from ragcore.dense._rabitq import rotate

    x = clustered(500, 24, 4, seed=1)
    index = IVFIndex(24, 4, "ip", "rabitq", bits=bits)
    index.train(x)
    labels, _ = _core.assign_nearest(x, index.centroids)
    whole = _core.rabitq_encode(rotate(x - index.centroids[labels], index._storage.rotation),
                                index._storage.rotated_centroids, labels, bits=bits)[0]
    monkeypatch.setattr(ivf_rabitq, "ENCODE_TILE", 7)  # 500 rows: 71 full tiles and a short one
    np.testing.assert_array_equal(index.encode(x, labels), whole)
