"""Sharded search on Ray (ragcore.distributed): the merge against the reference, shards
against one index, routing, files, errors and lifecycle.

One local Ray (2 CPUs) serves the whole module; actors ask for num_cpus=0 so that more
shards than CPUs can be placed.
"""

import sys
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ray = pytest.importorskip("ray")

import ragcore  # noqa: E402
from ragcore import BM25Index, FlatIndex, IVFIndex, reference  # noqa: E402
from ragcore.distributed import (  # noqa: E402
    ShardedIndex, ShardError, merge_hits, shard_of, shard_paths,
)
from ragcore.hits import Hits  # noqa: E402

from _hits_check import assert_hits_equal  # noqa: E402

CPUS = {"num_cpus": 0}


pytestmark = pytest.mark.usefixtures("local_ray")  # tests/distributed/conftest.py


def integer_data(n, d, nq, seed):
    """Small integers: every score is exact in float32, and many are tied."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, (n, d)).astype(np.float32)
    q = rng.integers(-2, 3, (nq, d)).astype(np.float32)
    ids = rng.choice(10 * n + 10, n, replace=False).astype(np.int64)  # not 0..n-1
    return x, q, ids


def single_flat(x, ids, metric="ip"):
    index = FlatIndex(x.shape[1], metric)
    index.add(x, ids)
    return index


# ---- the merge (no Ray) -----------------------------------------------------------


def shard_results(draw_lists, k_per_shard):
    """Hits of one shard from per-query (id, score) lists already in ragcore's order."""
    nq = len(draw_lists)
    scores = np.full((nq, k_per_shard), -np.inf, dtype=np.float32)
    ids = np.full((nq, k_per_shard), -1, dtype=np.int64)
    for row, pairs in enumerate(draw_lists):
        for col, (i, s) in enumerate(pairs[:k_per_shard]):
            ids[row, col], scores[row, col] = i, s
    return Hits(scores, ids)


@st.composite
def sharded_rows(draw):
    """(per-shard Hits, per-shard per-query pair lists, k): ids unique across shards."""
    n_shards = draw(st.integers(1, 5))
    nq = draw(st.integers(1, 4))
    pool = draw(st.lists(st.integers(0, 60), min_size=0, max_size=40, unique=True))
    shard_of_id = {i: draw(st.integers(0, n_shards - 1)) for i in pool}
    hits, lists = [], []
    for s in range(n_shards):
        k_s = draw(st.integers(1, 8))
        rows = []
        for _ in range(nq):
            mine = [i for i in pool if shard_of_id[i] == s and draw(st.booleans())]
            # Few distinct scores, so that ties across shards are common.
            pairs = [(i, float(draw(st.integers(-3, 3)))) for i in mine]
            pairs.sort(key=lambda p: (-p[1], p[0]))
            rows.append(pairs[:k_s])
        hits.append(shard_results(rows, k_s))
        lists.append(rows)
    return hits, lists, draw(st.integers(1, 12))


@settings(max_examples=300, deadline=None)
@given(sharded_rows())
def test_merge_matches_reference_heap_merge(case):
    hits, lists, k = case
    got = merge_hits(hits, k)
    assert got.ids.shape == (hits[0].nq, k)
    for row in range(got.nq):
        want = reference.merge_topk([shard[row] for shard in lists], k)
        assert got.to_lists()[row] == want
        assert (got.ids[row, len(want):] == -1).all()
        assert np.isneginf(got.scores[row, len(want):]).all()


def test_merge_worked_example_ties_and_padding():
    a = Hits(np.array([[5, 3, -np.inf]], np.float32), np.array([[9, 4, -1]]))
    b = Hits(np.array([[5, 3]], np.float32), np.array([[2, 7]]))
    got = merge_hits([a, b], 5)
    np.testing.assert_array_equal(got.ids, [[2, 9, 4, 7, -1]])
    np.testing.assert_array_equal(got.scores, np.array([[5, 5, 3, 3, -np.inf]], np.float32))


def test_merge_refuses_bad_input():
    a = Hits(np.array([[1.0]], np.float32), np.array([[3]]))
    with pytest.raises(ValueError, match="id 3 was returned by more than one shard"):
        merge_hits([a, a], 2)
    two_rows = Hits(np.zeros((2, 1), np.float32), np.array([[1], [2]]))
    with pytest.raises(ValueError, match="same queries"):
        merge_hits([a, two_rows], 1)
    with pytest.raises(ValueError, match="k must be >= 1"):
        merge_hits([a], 0)
    with pytest.raises(TypeError, match="list of Hits"):
        merge_hits(a, 1)


def test_shard_of_is_deterministic_and_spreads_strided_ids():
    ids = np.arange(0, 4 * 4000, 4)  # all multiples of the shard count: id % 4 would put all on 0
    shard = shard_of(ids, 4)
    np.testing.assert_array_equal(shard, shard_of(ids.copy(), 4))
    counts = np.bincount(shard, minlength=4)
    assert counts.min() > 850 and counts.max() < 1150  # binomial: 1000 +- 27 (one sd)
    assert shard_of(ids, 1).max() == 0
    with pytest.raises(ValueError, match="n_shards must be >= 1"):
        shard_of(ids, 0)


def test_shard_paths(tmp_path):
    paths = shard_paths(tmp_path / "idx", 3)
    assert paths == [str(tmp_path / "idx" / f"shard-0000{i}-of-00003.rc") for i in range(3)]
    with pytest.raises(ValueError, match="n_shards must be >= 1"):
        shard_paths(tmp_path, 0)


def test_missing_ray_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    x, _, ids = integer_data(4, 3, 1, 0)
    with pytest.raises(ImportError, match=r"pip install .ray>=2.9. \(the dist extra\)"):
        ShardedIndex.build(lambda: FlatIndex(3), x, ids, n_shards=2, **CPUS)


# ---- dense shards against one index --------------------------------------------------


@pytest.mark.parametrize("n_shards", [1, 2, 3])
@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_flat_shards_equal_one_index_with_ties(n_shards, metric):
    x, q, ids = integer_data(40, 6, 7, seed=n_shards)
    single = single_flat(x, ids, metric)
    with ShardedIndex.build(lambda: FlatIndex(6, metric), x, ids, n_shards, **CPUS) as index:
        assert sum(index.shard_sizes()) == 40 == len(index)
        for k in (1, 5, 17, 45):  # 17 and 45 exceed every shard's size, 45 all vectors
            got = index.search(q, k)
            assert_hits_equal(got, single.search(q, k))
            assert_hits_equal(got, reference.flat_search(x, q, k, metric, ids))


def test_flat_shards_equal_one_index_on_float_data():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((300, 32)).astype(np.float32)
    q = rng.standard_normal((20, 32)).astype(np.float32)
    ids = np.arange(300, dtype=np.int64) * 3
    single = FlatIndex(32, "cosine")
    single.add(x, ids)
    with ShardedIndex.build(lambda: FlatIndex(32, "cosine"), x, ids, 3, **CPUS) as index:
        for k in (1, 10, 150):
            assert_hits_equal(index.search(q, k), single.search(q, k))
        assert_hits_equal(index.search(q[0], 10), single.search(q[0], 10))  # one 1-D query


def test_a_large_query_batch_equals_one_index():
    x, _, ids = integer_data(50, 32, 1, seed=4)
    q = integer_data(1, 32, 700, seed=5)[1]  # 90 KB: put in the object store once, not inline
    single = single_flat(x, ids)
    with ShardedIndex.build(lambda: FlatIndex(32), x, ids, 2, **CPUS) as index:
        assert_hits_equal(index.search(q, 7), single.search(q, 7))


def test_more_shards_than_vectors():
    x, q, ids = integer_data(3, 4, 5, seed=3)
    single = single_flat(x, ids)
    with ShardedIndex.build(lambda: FlatIndex(4), x, ids, 5, **CPUS) as index:
        sizes = index.shard_sizes()
        assert sum(sizes) == 3 and sizes.count(0) >= 2
        got = index.search(q, 4)
        assert_hits_equal(got, single.search(q, 4))
        assert (got.ids[:, 3] == -1).all() and np.isneginf(got.scores[:, 3]).all()


def test_ivf_shards_with_nprobe_nlist_equal_exact_search():
    x, q, ids = integer_data(120, 8, 9, seed=11)
    sample = x[:60].copy()

    def trained_ivf():  # each actor trains on the same sample and seed: equal centroids
        index = IVFIndex(8, nlist=4, seed=3)
        index.train(sample, n_threads=1)
        return index

    single = single_flat(x, ids)
    with ShardedIndex.build(trained_ivf, x, ids, 3, **CPUS) as index:
        assert index.index_type == "IVFIndex"
        for k in (1, 10, 130):
            assert_hits_equal(index.search(q, k, nprobe=4), single.search(q, k))


# ---- BM25: global statistics by default, local ones on request -------------------------

DOCS = [
    "the cat sat on the mat", "a dog chased the cat", "cats and dogs living together",
    "the quick brown fox", "a lazy dog sleeps all day long in the sun",
    "fox and dog and cat", "mat mat mat", "nothing relevant here at all",
    "dog dog dog dog", "the cat", "brown mat for the cat", "sun and fox",
]
QUERIES = ["cat mat", "dog", "brown fox sun", "unknown words only"]


@pytest.mark.parametrize("n_shards", [2, 3])
def test_bm25_shards_score_with_global_statistics_as_one_index(n_shards):
    single = BM25Index()
    single.add(DOCS)
    with ShardedIndex.build(BM25Index, DOCS, n_shards=n_shards, **CPUS) as index:
        assert_hits_equal(index.search(QUERIES, 6), single.search(QUERIES, 6))


def test_bm25_one_shard_equals_one_index():
    single = BM25Index()
    single.add(DOCS)
    with ShardedIndex.build(BM25Index, DOCS, n_shards=1, **CPUS) as index:
        assert_hits_equal(index.search(QUERIES, 5), single.search(QUERIES, 5))


def test_bm25_local_statistics_score_each_shard_on_its_own():
    """What local_statistics=True computes: every shard's BM25 over its own documents,
    merged; which is not one index's BM25 over all documents."""
    tokens = ragcore.tokenize(DOCS, stopwords="en")  # as BM25Index() tokenizes
    with ShardedIndex.build(BM25Index, DOCS, n_shards=3, local_statistics=True,
                            **CPUS) as index:
        got = index.search(QUERIES, 6)
        per_shard = index.shard_ids()
    single = BM25Index()
    single.add(DOCS)
    for row, query in enumerate(QUERIES):
        q_tokens = ragcore.tokenize(query, stopwords="en")
        lists = []
        for ids in per_shard:
            docs = [tokens[i] for i in ids]  # build()'s default ids are the positions
            scores = reference.bm25_scores(docs, q_tokens).astype(np.float32)
            held = reference.bm25_matches(docs, q_tokens)
            lists.append(reference.bm25_top_matches(scores, held, np.asarray(ids), 6).to_lists()[0])
        want = reference.merge_topk(lists, 6)
        assert [i for i, _ in got.to_lists()[row]] == [i for i, _ in want]
        np.testing.assert_allclose([s for _, s in got.to_lists()[row]],
                                   [s for _, s in want], rtol=1e-5)
    assert not np.array_equal(got.scores, single.search(QUERIES, 6).scores)


# ---- routing, add and remove --------------------------------------------------------


def test_add_and_remove_are_routed_and_match_one_index():
    x, q, ids = integer_data(30, 5, 6, seed=21)
    single = single_flat(x[:20], ids[:20])
    with ShardedIndex.build(lambda: FlatIndex(5), x[:20], ids[:20], 3, **CPUS) as index:
        added = index.add(x[20:], ids[20:])
        single.add(x[20:], ids[20:])
        np.testing.assert_array_equal(added, ids[20:])
        for s, held in enumerate(index.shard_ids()):
            assert (shard_of(held, 3) == s).all()  # built and added by the same hash
        removed = ids[[0, 5, 25]]
        index.remove(removed)
        single.remove(removed)
        assert len(index) == 27
        assert_hits_equal(index.search(q, 12), single.search(q, 12))
        fresh = index.add(x[:2])  # default ids continue after the largest id
        np.testing.assert_array_equal(fresh, [ids.max() + 1, ids.max() + 2])


def test_add_and_remove_refuse_bad_ids():
    x, _, ids = integer_data(10, 3, 1, seed=5)
    with ShardedIndex.build(lambda: FlatIndex(3), x, ids, 2, **CPUS) as index:
        with pytest.raises(ValueError, match=f"ids: {ids[4]} is already in shard"):
            index.add(x[:1], ids[4:5])
        with pytest.raises(ValueError, match="more than once"):
            index.add(x[:2], [10**6, 10**6])
        with pytest.raises(ValueError, match="in no shard"):
            index.remove([ids[0], 10**6])
        assert len(index) == 10  # nothing removed
        with pytest.raises(ValueError, match="k must be >= 1"):
            index.search(x[:1], 0)
        with pytest.raises(ValueError, match="expected dim=3"):
            index.search(np.zeros((1, 4), np.float32), 1)


def test_build_refuses_bad_arguments():
    x, _, ids = integer_data(6, 3, 1, seed=6)
    with pytest.raises(ValueError, match="n_shards must be >= 1"):
        ShardedIndex.build(lambda: FlatIndex(3), x, ids, 0, **CPUS)
    with pytest.raises(ValueError, match="more than once"):
        ShardedIndex.build(lambda: FlatIndex(3), x, [1, 1, 2, 3, 4, 5], 2, **CPUS)
    with pytest.raises(ValueError, match="1-D array of 6 ids"):
        ShardedIndex.build(lambda: FlatIndex(3), x, ids[:5], 2, **CPUS)
    with pytest.raises(TypeError, match="factory must be a callable"):
        ShardedIndex.build(FlatIndex(3), x, ids, 2, **CPUS)
    with pytest.raises(ValueError, match="list of 2 dicts"):
        ShardedIndex.build(lambda: FlatIndex(3), x, ids, 2, actor_options=[{}], **CPUS)
    with pytest.raises(ValueError, match="num_cpus must be a number >= 0"):
        ShardedIndex.build(lambda: FlatIndex(3), x, ids, 2, num_cpus=-1)
    with pytest.raises(ValueError, match="already initialised"):
        ShardedIndex.build(lambda: FlatIndex(3), x, ids, 2, address="auto", **CPUS)


# ---- files ------------------------------------------------------------------------


def test_save_then_from_files_gives_the_same_answers(tmp_path):
    x, q, ids = integer_data(25, 4, 4, seed=8)
    with ShardedIndex.build(lambda: FlatIndex(4, "l2"), x, ids, 3, **CPUS) as index:
        paths = index.save(tmp_path / "sharded")
        before = index.search(q, 9)
    assert paths == shard_paths(tmp_path / "sharded", 3)
    assert all(FlatIndex.load(p).metric == "l2" for p in paths)
    with ShardedIndex.from_files(paths, FlatIndex, **CPUS) as index:
        assert index.n_shards == 3 and len(index) == 25
        assert_hits_equal(index.search(q, 9), before)


def test_relative_directories_are_resolved_by_the_caller(tmp_path, monkeypatch):
    x, q, ids = integer_data(9, 3, 2, seed=15)
    monkeypatch.chdir(tmp_path)
    with ShardedIndex.build(lambda: FlatIndex(3), x, ids, 2, **CPUS) as index:
        paths = index.save("rel")
    assert paths == shard_paths(tmp_path / "rel", 2)
    with ShardedIndex.from_files(["rel/" + p.rsplit("/", 1)[1] for p in paths], FlatIndex,
                                 **CPUS) as index:
        assert_hits_equal(index.search(q, 9), single_flat(x, ids).search(q, 9))


def save_flat(path, x, ids, metric="ip"):
    single_flat(x, ids, metric).save(path)
    return str(path)


def test_from_files_refuses_duplicate_ids_and_mismatched_shards(tmp_path):
    x, _, ids = integer_data(6, 3, 1, seed=9)
    a = save_flat(tmp_path / "a.rc", x[:4], ids[:4])
    b = save_flat(tmp_path / "b.rc", x[3:], ids[3:])  # ids[3] in both
    with pytest.raises(ValueError, match=f"id {ids[3]} is in shard 0 and in shard 1"):
        ShardedIndex.from_files([a, b], FlatIndex.load, **CPUS)
    wide = save_flat(tmp_path / "wide.rc", np.ones((2, 5), np.float32), [100, 101])
    with pytest.raises(ValueError, match="disagree on dim: shard 0 has 3, shard 1 has 5"):
        ShardedIndex.from_files([a, wide], FlatIndex.load, **CPUS)
    l2 = save_flat(tmp_path / "l2.rc", x[4:], ids[4:], "l2")
    with pytest.raises(ValueError, match="disagree on metric"):
        ShardedIndex.from_files([a, l2], FlatIndex.load, **CPUS)
    with pytest.raises(ValueError, match="paths is empty"):
        ShardedIndex.from_files([], FlatIndex.load, **CPUS)


# ---- failures and lifecycle --------------------------------------------------------


def test_a_shard_that_raises_is_named(tmp_path):
    x, _, ids = integer_data(6, 3, 1, seed=10)
    good = save_flat(tmp_path / "good.rc", x, ids)
    (tmp_path / "bad.rc").write_bytes(b"not an index file")
    with pytest.raises(ShardError, match="shard 1 failed in load: IndexFileError") as err:
        ShardedIndex.from_files([good, str(tmp_path / "bad.rc")], FlatIndex.load, **CPUS)
    assert err.value.shard == 1 and isinstance(err.value.cause, ragcore.IndexFileError)
    with ShardedIndex.from_files([good], FlatIndex.load, **CPUS) as index:
        with pytest.raises(ShardError, match="shard 0 failed in search: TypeError.*nprobe"):
            index.search(x, 2, nprobe=3)  # FlatIndex.search takes no nprobe


def dies(actor, timeout=30.0) -> bool:
    """Whether the actor is dead within timeout (ray.kill takes effect asynchronously)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            ray.get(actor.ready.remote(), timeout=timeout)
        except ray.exceptions.RayActorError:
            return True
        time.sleep(0.05)
    return False


def test_a_dead_actor_is_named():
    x, q, ids = integer_data(12, 3, 2, seed=12)
    with ShardedIndex.build(lambda: FlatIndex(3), x, ids, 2, **CPUS) as index:
        ray.kill(index._actors[1])
        assert dies(index._actors[1])
        with pytest.raises(ShardError, match="shard 1 is gone"):
            index.search(q, 3)


def test_unplaceable_actors_time_out_with_a_clear_error():
    x, _, ids = integer_data(4, 3, 1, seed=13)
    with pytest.raises(RuntimeError, match="num_cpus=3 each and the cluster has 2 CPUs"):
        ShardedIndex.build(lambda: FlatIndex(3), x, ids, 1, num_cpus=3, startup_timeout=1)


def test_close_kills_the_actors_and_leaves_ray_running():
    x, q, ids = integer_data(8, 3, 1, seed=14)
    index = ShardedIndex.build(lambda: FlatIndex(3), x, ids, 2, **CPUS)
    actors = list(index._actors)
    with index:
        index.search(q, 2)
    with pytest.raises(RuntimeError, match="closed"):
        index.search(q, 2)
    index.close()  # idempotent
    assert all(dies(actor) for actor in actors)
    assert ray.is_initialized()
