"""HNSWIndex: bad arguments are clear errors; searches run while another thread adds."""

import threading

import numpy as np
import pytest

import ragcore
from ragcore import reference
from _hnsw_data import clustered, recall


@pytest.mark.parametrize("kwargs, error, message", [
    ({"M": 1}, ValueError, "M must be"),
    ({"M": 0}, ValueError, "M must be"),
    ({"M": 513}, ValueError, "M must be between 2 and 512"),
    ({"M": 2.5}, TypeError, "M must be an integer"),
    ({"ef_construction": 0}, ValueError, "ef_construction must be >= 1"),
    ({"ef": 0}, ValueError, "ef must be >= 1"),
    ({"ef": 2**31}, ValueError, "ef must be at most"),
    ({"ef_construction": 10**30}, ValueError, "ef_construction must be at most"),
    ({"dtype": "sq8"}, ValueError, "unknown dtype"),
    ({"metric": "dot"}, ValueError, "unknown metric"),
    ({"seed": -1}, ValueError, "seed"),
])
def test_bad_constructor_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        ragcore.HNSWIndex(8, **kwargs)
    with pytest.raises(ValueError, match="dim must be >= 1"):
        ragcore.HNSWIndex(0)


def test_bad_add_and_search_arguments():
    index = ragcore.HNSWIndex(4, "cosine")
    x = np.eye(4, dtype=np.float32)
    with pytest.raises(ValueError, match="expected dim=4"):
        index.add(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="NaN"):
        index.add(np.full((1, 4), np.nan, np.float32))
    with pytest.raises(ValueError, match="all zeros"):
        index.add(np.zeros((1, 4), np.float32))
    with pytest.raises(ValueError, match="more than once"):
        index.add(x[:2], ids=[3, 3])
    with pytest.raises(ValueError, match="non-negative"):
        index.add(x[:1], ids=[-2])
    with pytest.raises(TypeError, match="floating-point"):
        index.add(np.ones((1, 4), np.int32))
    assert len(index) == 0  # nothing half-added
    index.add(x)
    for bad, error, message in [({"k": 0}, ValueError, "k must be >= 1"),
                                ({"ef": 0}, ValueError, "ef must be >= 1"),
                                ({"ef": -3}, ValueError, "ef must be >= 1"),
                                ({"ef": 1.5}, TypeError, "ef must be an integer"),
                                ({"ef": 10**30}, ValueError, "ef must be at most"),
                                ({"n_threads": -1}, ValueError, "n_threads")]:
        args = {"k": 2, **bad}
        with pytest.raises(error, match=message):
            index.search(x, **args)
    with pytest.raises(ValueError, match="expected dim=4"):
        index.search(np.ones((1, 5), np.float32), 2)
    with pytest.raises(ValueError, match="float16 range"):
        ragcore.HNSWIndex(2, dtype="float16").add(np.array([[1e6, 0]], np.float32))


def test_searches_while_another_thread_adds_and_removes():
    d = 16
    x = clustered(6000, d, seed=1)
    q = clustered(50, d, seed=2)
    index = ragcore.HNSWIndex(d, "ip", M=8, ef_construction=32)
    index.add(x[:1000])
    errors, done = [], threading.Event()

    def writer():
        try:
            for start in range(1000, 6000, 1000):
                index.add(x[start : start + 1000], ids=np.arange(start, start + 1000), n_threads=2)
                index.remove(np.arange(start - 1000, start - 900))
        except Exception as err:  # surfaced by the main thread
            errors.append(err)
        finally:
            done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    searches = 0
    while not done.is_set() or searches < 5:
        hits = index.search(q, 5, ef=16, n_threads=2)
        ids = hits.ids
        assert ((ids >= 0) & (ids < 6000)).all()
        assert (np.diff(hits.scores, axis=1) <= 0).all()
        searches += 1
    thread.join()
    assert not errors, errors
    kept = np.setdiff1d(np.arange(6000), np.concatenate(
        [np.arange(s - 1000, s - 900) for s in range(1000, 6000, 1000)]))
    assert len(index) == len(kept)
    truth = reference.flat_search(x[kept], q, 5, ids=kept).ids
    # The two-thread build is not deterministic, so a recall threshold at a small ef would be
    # flaky; with ef >= n the walk reaches every live node (the reachability repair), so the
    # graph left by the concurrent adds and removes must give the exact answer.
    assert recall(index.search(q, 5, ef=len(index)).ids, truth) == 1.0


def test_concurrent_searches_give_the_single_threaded_answer():
    x = clustered(2000, 8, seed=3)
    index = ragcore.HNSWIndex(8, "l2", M=6)
    index.add(x)
    want = index.search(x[:64], 4, ef=20).ids
    got = [None] * 4

    def run(i):
        got[i] = index.search(x[:64], 4, ef=20, n_threads=2).ids

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for g in got:
        np.testing.assert_array_equal(g, want)


@pytest.mark.parametrize("cls", [ragcore.HNSWIndex, ragcore.FlatIndex])
def test_automatic_ids_stop_at_the_largest_id(tmp_path, cls):
    """Automatic ids end at 2**63 - 2, the largest id an explicit add or a load accepts;
    an index holding that id saves and loads, and asks for ids from then on."""
    index = cls(2)
    index.add(np.ones((1, 2), np.float32), ids=[2**63 - 4])
    assert index.add(np.ones((2, 2), np.float32)).tolist() == [2**63 - 3, 2**63 - 2]
    with pytest.raises(ValueError, match="no automatic ids left.*pass ids"):
        index.add(np.ones((1, 2), np.float32))
    index.save(tmp_path / "full.rc")
    loaded = cls.load(tmp_path / "full.rc")
    with pytest.raises(ValueError, match="no automatic ids left"):
        loaded.add(np.ones((1, 2), np.float32))
    assert loaded.add(np.ones((1, 2), np.float32), ids=[5]).tolist() == [5]
    assert sorted(loaded.ids.tolist()) == [5, 2**63 - 4, 2**63 - 3, 2**63 - 2]
