"""Searches running while vectors are added and removed, for every IVF storage: each search
sees a consistent snapshot (only ids ever added, never a half-written row), and afterwards
every list scanned exactly gives FlatIndex's answer over the vectors left."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ragcore
from _ivf_data import clustered
from ragcore import reference

# storage -> (constructor options, search options that make the final check exact)
STORAGES = {
    "float32": ({}, {}),
    "sq8": ({}, {"rescore": 100}),
    "pq4": ({"m": 4}, {"rescore": 100}),
    "rabitq": ({"bits": 2}, {"rescore": 100}),
}


@pytest.mark.parametrize("storage", list(STORAGES))
def test_searches_run_while_vectors_are_added_and_removed(storage):
    options, exact = STORAGES[storage]
    x = clustered(400, 16, 4, seed=8)
    index = ragcore.IVFIndex(16, 4, "ip", storage, seed=3, **options)
    index.train(x[:200])
    index.add(x[:200])
    stop, errors = threading.Event(), []

    def search_loop():
        while not stop.is_set():
            hits = index.search(x[:20], 5, nprobe=4)
            real = hits.ids[hits.ids >= 0]
            if not ((real >= 0) & (real < 400)).all() or (hits.ids[:, 0] < 0).any():
                errors.append(hits.ids)

    threads = [threading.Thread(target=search_loop) for _ in range(2)]
    for t in threads:
        t.start()
    for start in range(200, 400, 20):
        index.add(x[start : start + 20])
        index.remove(np.arange(start - 200, start - 190))
    stop.set()
    for t in threads:
        t.join()
    assert not errors and len(index) == 300
    removed = np.concatenate([np.arange(s - 200, s - 190) for s in range(200, 400, 20)])
    assert sorted(index.ids.tolist()) == sorted(set(range(400)) - set(removed.tolist()))
    kept = index.ids
    got = index.search(x[:5], 5, nprobe=4, **exact)
    want = reference.flat_search(x[kept], x[:5], 5, "ip", kept)
    np.testing.assert_array_equal(got.ids, want.ids)
