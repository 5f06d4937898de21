"""FlatIndex under concurrent use from Python threads.

The documented contract: ``search`` may run from several threads at once, and
concurrently with ``add``/``remove``; each search sees the index as it was when
it started. The native search releases the GIL.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from ragcore import FlatIndex
from _hits_check import assert_hits_equal


def run_threads(targets, timeout: float = 60.0) -> None:
    """Runs the callables in threads started together; re-raises the first exception."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(targets))

    def wrap(fn):
        def body():
            try:
                barrier.wait()
                fn()
            except BaseException as err:  # noqa: BLE001 - reported in the main thread
                errors.append(err)
                barrier.abort()
        return body

    threads = [threading.Thread(target=wrap(fn), daemon=True) for fn in targets]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "threads did not finish in time (deadlock?)"
    if errors:
        raise errors[0]


# ---- many readers ------------------------------------------------------------


@pytest.mark.parametrize("metric", ("ip", "cosine", "l2"))
def test_concurrent_searches_equal_sequential(metric):
    rng = np.random.default_rng(0)
    d, n, k = 32, 3000, 10
    index = FlatIndex(d, metric=metric)
    index.add(rng.standard_normal((n, d)).astype(np.float32), ids=rng.permutation(n) * 3 + 1)
    blocks = [rng.standard_normal((64, d)).astype(np.float32) for _ in range(6)]

    def config(thread: int, i: int):
        block = (thread * 20 + i) % len(blocks)
        batch = 1 if (thread + i) % 2 else 64
        n_threads = 1 + (thread * 7 + i) % 2
        return block, batch, n_threads

    def query(block: int, batch: int):
        return blocks[block][:batch]

    expected = {
        (b, batch, nt): index.search(query(b, batch), k, n_threads=nt)
        for b in range(len(blocks)) for batch in (1, 64) for nt in (1, 2)
    }
    # Deterministic across thread counts (ties by id, no order-dependent reductions).
    for b in range(len(blocks)):
        for batch in (1, 64):
            assert_hits_equal(expected[(b, batch, 1)], expected[(b, batch, 2)])

    results: dict = {}

    def reader(thread: int):
        def body():
            for i in range(20):
                block, batch, nt = config(thread, i)
                results[(thread, i)] = index.search(query(block, batch), k, n_threads=nt)
        return body

    run_threads([reader(t) for t in range(8)])
    assert len(results) == 8 * 20
    for (thread, i), hits in results.items():
        block, batch, nt = config(thread, i)
        assert_hits_equal(hits, expected[(block, batch, nt)])


# ---- readers and a writer ----------------------------------------------------


@pytest.mark.parametrize("metric", ("l2", "ip"))
def test_search_while_adding_and_removing(metric):
    rng = np.random.default_rng(1)
    d, k = 16, 10
    original_ids = np.arange(400)
    extra_ids = np.arange(1000, 1600)
    vectors = {int(i): v for i, v in zip(np.concatenate([original_ids, extra_ids]),
                                         rng.standard_normal((1000, d)).astype(np.float32))}
    stable = original_ids[:200]  # never removed: present in every snapshot
    stable_matrix = np.stack([vectors[int(i)] for i in stable]).astype(np.float64)

    index = FlatIndex(d, metric=metric)
    index.add(np.stack([vectors[int(i)] for i in original_ids]), ids=original_ids)
    allowed = set(vectors)
    present = set(original_ids.tolist())
    queries = rng.standard_normal((40, d)).astype(np.float32)

    def ref_scores(q: np.ndarray, rows: np.ndarray) -> np.ndarray:
        q64 = q.astype(np.float64)
        if metric == "ip":
            return rows @ q64
        return -((rows - q64) ** 2).sum(axis=1)

    done = threading.Event()
    writer_steps = []

    def writer():
        added, removable_originals = [], list(original_ids[200:])
        step = 0
        try:
            for start in range(0, len(extra_ids), 20):
                chunk = extra_ids[start : start + 20]
                index.add(np.stack([vectors[int(i)] for i in chunk]), ids=chunk)
                present.update(chunk.tolist())
                added.extend(chunk.tolist())
                gone = added[:10] + removable_originals[:5]
                del added[:10], removable_originals[:5]
                index.remove(gone)
                present.difference_update(gone)
                step += 1
                writer_steps.append(step)
        finally:
            done.set()

    checked = []

    def reader(seed: int):
        def body():
            local = np.random.default_rng(seed)
            count = 0
            while count < 30 or not done.is_set():
                batch = int(local.choice([1, 16]))
                start = int(local.integers(0, len(queries) - batch + 1))
                q = queries[start : start + batch]
                hits = index.search(q, k, n_threads=int(local.choice([1, 2])))
                assert hits.ids.shape == (batch, k)
                for row in range(batch):
                    ids, scores = hits.ids[row], hits.scores[row].astype(np.float64)
                    assert (ids != -1).all(), "padding inside a full row"
                    assert set(ids.tolist()) <= allowed, "unknown id returned"
                    assert len(set(ids.tolist())) == k, "duplicate ids in a row"
                    assert (np.diff(scores) <= 0).all(), "scores not sorted descending"
                    # every score belongs to the vector of its id (no torn rows)
                    want = ref_scores(q[row], np.stack([vectors[int(i)] for i in ids]).astype(np.float64))
                    np.testing.assert_allclose(scores, want, rtol=1e-5, atol=1e-4)
                    # nothing from the always-present set that is clearly better is missing
                    stable_scores = ref_scores(q[row], stable_matrix)
                    must = set(stable[stable_scores > scores[-1] + 1e-3].tolist())
                    assert must <= set(ids.tolist()), "a better, always-present vector is missing"
                count += 1
            checked.append(count)
        return body

    run_threads([writer] + [reader(s) for s in range(4)])
    assert writer_steps and writer_steps[-1] == 30
    assert len(checked) == 4 and min(checked) >= 30
    # the final state is exactly what the writer did
    assert set(index.ids.tolist()) == present
    assert len(index) == len(present) == 400 + 600 - 30 * 15
    final = index.search(queries, k)
    rows = np.stack([vectors[i] for i in index.ids.tolist()]).astype(np.float64)
    for row in range(len(queries)):
        np.testing.assert_allclose(np.sort(ref_scores(queries[row], rows))[::-1][:k],
                                   final.scores[row], rtol=1e-5, atol=1e-4)


# ---- the GIL -----------------------------------------------------------------


class _Counter(threading.Thread):
    """Counts loop iterations in pure Python and remembers every stall longer than 1 ms."""

    def __init__(self):
        super().__init__(daemon=True)
        self.count = 0
        self.stalls: list[tuple[float, float]] = []
        self.running = True

    def run(self):
        last = time.perf_counter()
        while self.running:
            now = time.perf_counter()
            if now - last > 1e-3:
                self.stalls.append((last, now))
            last = now
            self.count += 1

    def longest_stall_within(self, t0: float, t1: float) -> float:
        longest = 0.0
        for a, b in list(self.stalls):
            overlap = min(b, t1) - max(a, t0)
            longest = max(longest, overlap)
        return longest


@pytest.fixture(scope="module")
def big_index():
    rng = np.random.default_rng(2)
    index = FlatIndex(128)
    index.add(rng.standard_normal((200_000, 128), dtype=np.float32))
    return index, rng.standard_normal((4096, 128), dtype=np.float32)


def test_native_search_releases_the_gil(big_index):
    """A pure-Python thread keeps running while a long search runs in native code.

    If the search held the GIL, the counter thread would be stalled for the whole
    native call (and count almost nothing); with the GIL released it is stalled at
    most for the GIL hand-overs at the start and the end (a few switch intervals).
    The criterion is relative to the measured duration, so it does not depend on
    the speed of the machine.
    """
    index, queries = big_index
    batch = 256
    while True:  # a search long enough to measure (at least 0.2 s)
        t = time.perf_counter()
        index.search(queries[:batch], 10, n_threads=1)
        if time.perf_counter() - t >= 0.2 or batch == len(queries):
            break
        batch *= 2

    counter = _Counter()
    counter.start()
    try:
        while counter.count == 0:
            time.sleep(0.001)
        attempts = []
        for _ in range(3):
            c0, t0 = counter.count, time.perf_counter()
            hits = index.search(queries[:batch], 10, n_threads=1)
            t1, c1 = time.perf_counter(), counter.count
            duration, stall = t1 - t0, counter.longest_stall_within(t0, t1)
            attempts.append(dict(duration=duration, increments=c1 - c0, longest_stall=stall))
            assert hits.ids.shape == (batch, 10) and (hits.ids >= 0).all()
            if c1 - c0 > 1000 and stall < 0.5 * duration:
                break
        else:
            pytest.fail(f"the counter thread was blocked during native search: {attempts}")
    finally:
        counter.running = False
        counter.join(5)
