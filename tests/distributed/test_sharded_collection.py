"""ShardedCollection against one Collection over the same real text: dense (exact), BM25
under global statistics, hybrid and filtered searches; the Collection API; the manifest.

One local Ray serves the module; actors ask for num_cpus=0.
"""

import os
import time

import numpy as np
import pytest

ray = pytest.importorskip("ray")

import _sharded_data  # noqa: E402
from _sharded_data import WordHashEncoder, assert_same_matches, real_text  # noqa: E402
from ragcore import (Collection, CollectionError, CollectionLockedError,  # noqa: E402
                     ShardUnavailableError)
from ragcore.distributed import ShardedCollection, document_shards  # noqa: E402

ray.cloudpickle.register_pickle_by_value(_sharded_data)  # the actors cannot import tests/

N_DOCS, N_QUERIES = 300, 12


pytestmark = pytest.mark.usefixtures("local_ray")  # tests/distributed/conftest.py


@pytest.fixture(scope="module")
def corpus():
    return real_text(N_DOCS, N_QUERIES)


@pytest.fixture(scope="module")
def single(tmp_path_factory, corpus):
    texts, ids, metadata, _ = corpus
    with Collection.create(tmp_path_factory.mktemp("one"), encoder=WordHashEncoder()) as c:
        c.add(texts, ids=ids, metadata=metadata)
        yield c


@pytest.fixture(scope="module", params=[2, 4])
def sharded(request, tmp_path_factory, corpus):
    texts, ids, metadata, _ = corpus
    path = tmp_path_factory.mktemp(f"sharded{request.param}")
    with ShardedCollection.create(path, n_shards=request.param,
                                  encoder=WordHashEncoder()) as sc:
        half = len(texts) // 2  # two writes: the shards see more than one change
        sc.add(texts[:half], ids=ids[:half], metadata=metadata[:half])
        sc.add(texts[half:], ids=ids[half:], metadata=metadata[half:])
        yield sc


def compare(sharded, single, queries, k, tol=0.0, **options):
    got = sharded.search(queries, k=k, **options)
    want = single.search(queries, k=k, **options)
    for g, w in zip(got, want):
        assert_same_matches(list(g), list(w), tol)
    return got


@pytest.mark.parametrize("k", [1, 10, 60])
def test_dense_equals_one_collection(sharded, single, corpus, k):
    got = compare(sharded, single, corpus[3], k, mode="dense")
    assert all(len(r) == k for r in got)


@pytest.mark.parametrize("k", [1, 10, 60])
def test_sparse_equals_one_collection(sharded, single, corpus, k):
    got = compare(sharded, single, corpus[3], k, mode="sparse")
    assert sum(len(r) for r in got) > 0


def test_sparse_scores_use_global_statistics(sharded, single, corpus):
    """Shard-local statistics would give other scores: the global ones are in use."""
    stats = [ray.get(s.replicas[0].actor.first_phase.remote(corpus[3], 5, "sparse", None,
                                                             None))[1]
             for s in sharded._sets]
    assert sum(st.n_docs for st in stats) == single.indexes.bm25.statistics(corpus[3]).n_docs
    compare(sharded, single, corpus[3], 10, mode="sparse")


@pytest.mark.parametrize("fusion", [None, "wsum", "combmnz"])
def test_hybrid_equals_one_collection(sharded, single, corpus, fusion):
    compare(sharded, single, corpus[3], 10, tol=1e-5, mode="hybrid", fusion=fusion)


def untied(single, queries, k0=50):
    """The queries whose dense and BM25 candidates hold no tied scores: rank fusion (RRF)
    gives tied candidates ranks in chunk id order, and chunk ids differ between one
    Collection and shards, so only there must RRF agree to the score."""
    out = []
    for q in queries:
        scores = [np.array([m.score for m in single.search(q, k=k0, mode=mode)])
                  for mode in ("dense", "sparse")]
        if all(len(np.unique(s)) == len(s) for s in scores):
            out.append(q)
    return out


def test_hybrid_rrf_equals_one_collection_without_ties(sharded, single, corpus):
    queries = untied(single, corpus[3])
    assert len(queries) >= 3
    compare(sharded, single, queries, 10, tol=1e-6, mode="hybrid", fusion="rrf")


@pytest.mark.parametrize("mode", ["dense", "sparse", "hybrid"])
def test_filtered_equals_one_collection(sharded, single, corpus, mode):
    flt = {"$or": [{"size": {"$lte": 1}}, {"module": "json"}]}
    got = compare(sharded, single, corpus[3], 10, tol=1e-5, mode=mode, filter=flt)
    for row in got:
        assert all(m.metadata["size"] <= 1 or m.metadata["module"] == "json" for m in row)


def test_remembered_statistics_are_dropped_by_a_write(tmp_path, corpus):
    """A repeated query is one round trip (its statistics are remembered); a write that
    changes them makes the next search gather them again, so it still equals one
    Collection."""
    texts, ids, metadata, queries = corpus
    with ShardedCollection.create(tmp_path / "sc", n_shards=3, encoder=WordHashEncoder()) as sc, \
            Collection.create(tmp_path / "one", encoder=WordHashEncoder()) as one:
        for c in (sc, one):
            c.add(texts[:100], ids=ids[:100])
        for _ in range(2):
            for mode in ("sparse", "hybrid"):
                for g, w in zip(sc.search(queries, k=10, mode=mode),
                                one.search(queries, k=10, mode=mode)):
                    assert_same_matches(list(g), list(w), 1e-5)
        assert sc.search(queries, k=10, mode="sparse")[0].timings["sparse"] == 0.0  # one round
        for c in (sc, one):
            c.add(queries, ids=[f"q{i}" for i in range(len(queries))])  # every query term
        got = sc.search(queries, k=10, mode="sparse")
        assert got[0].timings["sparse"] > 0.0  # gathered again
        for g, w in zip(got, one.search(queries, k=10, mode="sparse")):
            assert_same_matches(list(g), list(w))


class OverlapReranker:
    """Scores a passage by the query words it holds (a stand-in for a cross-encoder)."""

    def score(self, query, passages):
        words = set(query.lower().split())
        return [float(len(words & set(p.lower().split()))) + 1.0 / (1 + len(p))
                for p in passages]


def test_rerank_and_given_query_vectors_equal_one_collection(sharded, single, corpus):
    compare(sharded, single, corpus[3], 5, tol=1e-5, rerank=OverlapReranker())
    vectors = WordHashEncoder().encode(corpus[3])
    compare(sharded, single, corpus[3], 10, mode="dense", query_vector=vectors)


def test_by_document_and_count_equal_one_collection(sharded, single, corpus):
    compare(sharded, single, corpus[3], 10, tol=1e-5, by="document")
    assert len(sharded) == len(single) == N_DOCS
    assert sharded.count({"size": 3}) == single.count({"size": 3})


def test_documents_are_routed_by_id_hash(sharded, corpus):
    _, ids, _, _ = corpus
    shards = document_shards(ids, sharded.n_shards)
    counts = [ray.get(s.replicas[0].actor.count.remote()) for s in sharded._sets]
    assert counts == np.bincount(shards, minlength=sharded.n_shards).tolist()
    held = ray.get(sharded._sets[1].replicas[0].actor.ids.remote())
    assert set(held) == {i for i, s in zip(ids, shards) if s == 1}


def test_collection_api(tmp_path, corpus):
    texts, ids, metadata, queries = corpus
    with ShardedCollection.create(tmp_path / "sc", n_shards=3, encoder=WordHashEncoder(),
                                  metadata_schema={"size": "int"}) as sc, \
            Collection.create(tmp_path / "one", encoder=WordHashEncoder(),
                              metadata_schema={"size": "int"}) as one:
        for c in (sc, one):
            c.add(texts[:40], ids=ids[:40], metadata=metadata[:40])
            c.upsert(["replaced text about json parsing"] + texts[40:50], ids=ids[:1] + ids[40:50],
                     metadata=metadata[:1] + metadata[40:50])
            assert c.delete(ids[5:10]) == 5
            assert c.delete([ids[5], ids[11]], missing_ok=True) == 1
        assert len(sc) == len(one) == 44
        assert [d.text for d in sc.get(ids[:12])] == [d.text for d in one.get(ids[:12])]
        assert sc.get(ids[0])[0].text == "replaced text about json parsing"
        for r_sc, r_one in zip(sc.search(queries[:4], k=5), one.search(queries[:4], k=5)):
            assert_same_matches(list(r_sc), list(r_one), 1e-5)
        with pytest.raises(CollectionError, match="already in the collection"):
            sc.add(texts[:2], ids=ids[:1] + ["new-id"])
        assert not sc.get(["new-id"])  # nothing written
        # Bad input on one shard writes nothing on any: every shard checks its part first.
        many = [f"fresh-{i}" for i in range(12)]
        bad_meta = [{"size": 1}] * 11 + [{"size": "not an int"}]
        with pytest.raises(TypeError, match="size.*must be int"):
            sc.add(["some fresh text"] * 12, ids=many, metadata=bad_meta)
        with pytest.raises(TypeError, match="size.*must be int"):
            sc.upsert(["some fresh text"] * 12, ids=many, metadata=bad_meta)
        assert not sc.get(many)
        with pytest.raises(CollectionError, match="not in the collection"):
            sc.delete([ids[6], ids[0]])
        assert sc.get(ids[0])  # nothing deleted
        generated = sc.add(["a text without an id"])
        assert isinstance(generated[0], str) and sc.get(generated)[0].text == "a text without an id"
        actors = sc.shard_actors()
        assert len(actors) == 3 and all(len(r) == 1 and r[0] is not None for r in actors)
    with ShardedCollection.open(tmp_path / "sc", encoder=WordHashEncoder()) as sc:
        assert len(sc) == 45
        assert sc.search(queries[0], k=3, mode="sparse")


def test_manifest_and_bad_arguments(tmp_path):
    with ShardedCollection.create(tmp_path / "m", n_shards=2, replicas=2,
                                  encoder=WordHashEncoder()) as sc:
        sc.add(["one text", "two texts"], ids=[1, 2])
    import json
    manifest = json.loads((tmp_path / "m" / "sharded-collection.json").read_text())
    assert manifest["n_shards"] == 2 and manifest["replicas"] == 2
    for shard in manifest["shards"]:
        for rel in shard:
            assert os.path.isfile(tmp_path / "m" / rel / "collection.sqlite")
    with pytest.raises(CollectionError, match="not a sharded collection"):
        ShardedCollection.open(tmp_path / "nothing")
    with pytest.raises(CollectionError, match="not empty"):
        ShardedCollection.create(tmp_path / "m", n_shards=2)
    with pytest.raises(ValueError, match="n_shards"):
        ShardedCollection.create(tmp_path / "x", n_shards=0)
    with pytest.raises(TypeError, match="unknown collection option 'dims'"):
        ShardedCollection.create(tmp_path / "y", n_shards=1, dims=3)


def killed(actor) -> None:
    """Kills an actor and returns once it is gone: ray.kill does not wait, and a call sent
    right after it may still be answered by the actor."""
    ray.kill(actor, no_restart=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            ray.get(actor.ready.remote(), timeout=10)
        except ray.exceptions.RayActorError:
            return
        time.sleep(0.05)
    pytest.fail("the actor still answers 60 s after ray.kill")


def test_a_replica_behind_catches_up_by_replay_or_by_copy(tmp_path):
    topics = ["apple", "banana", "cherry", "damson", "elder", "fig", "grape"]
    texts = [f"document number {i} about {topics[i % 7]}" for i in range(30)]
    with ShardedCollection.create(tmp_path / "sc", n_shards=1, replicas=2,
                                  encoder=WordHashEncoder()) as sc:
        sc.add(texts[:10], ids=list(range(10)))
        killed(sc.shard_actors()[0][1])
        sc.add(texts[10:20], ids=list(range(10, 20)))  # replica 1 misses it
        assert sc.shard_actors()[0][1] is None  # down from that write on
        sc.delete([3])  # a write heals first: replica 1 replays the add it missed
        assert sc._sets[0].catch_ups["replayed"] == 1
        assert sc.shard_actors()[0][1] is not None and sc.heal() == 0
        killed(sc.shard_actors()[0][1])
        sc.add(texts[20:], ids=list(range(20, 30)))
    # Reopened, the log is gone: the replica behind copies the newest one's database.
    with ShardedCollection.open(tmp_path / "sc", encoder=WordHashEncoder()) as sc:
        assert sc._sets[0].catch_ups["copied"] == 1
        held = [sorted(ray.get(r.actor.ids.remote())) for r in sc._sets[0].replicas]
        assert held[0] == held[1] == sorted(set(range(30)) - {3})
        answers = []
        for replica in (0, 1):  # each replica answers alike
            sc._sets[0]._turn = replica
            answers.append([(m.id, m.score) for m in sc.search("cherry", k=3, mode="sparse")])
        assert answers[0] == answers[1]
        assert {i for i, _ in answers[0]} <= {2, 9, 16, 23} and len(answers[0]) == 3


def test_when_every_replica_was_down_the_one_with_the_acknowledged_writes_leads(tmp_path):
    """Replica 0 dies, a write goes to replica 1 alone (acknowledged), then replica 1 dies
    too. Healing must not let replica 0 lead from its older change number: replica 1's
    database holds an acknowledged write, and copying replica 0's over it would lose it."""
    texts = [f"document number {i} about topic {i % 5}" for i in range(20)]
    with ShardedCollection.create(tmp_path / "sc", n_shards=1, replicas=2,
                                  encoder=WordHashEncoder()) as sc:
        sc.add(texts[:10], ids=list(range(10)))
        killed(sc.shard_actors()[0][0])
        sc.add(texts[10:], ids=list(range(10, 20)))  # acknowledged by replica 1 alone
        killed(sc.shard_actors()[0][1])
        assert sc.heal() == 2
        assert len(sc) == 20
        held = [sorted(ray.get(r.actor.ids.remote())) for r in sc._sets[0].replicas]
        assert held[0] == held[1] == list(range(20))


def _replica_one_cannot_start(replica_set):
    start = replica_set._start_actor

    def start_actor(index, path, create):
        if index == 1:
            raise RuntimeError("replica 1's node is gone")
        return start(index, path, create)

    replica_set._start_actor = start_actor


@pytest.mark.parametrize("log_reaches_back", [True, False])
def test_an_acknowledged_write_on_no_running_replica_is_replayed_or_nothing_serves(
        tmp_path, log_reaches_back):
    """As above, but replica 1 (the only one holding the last write) cannot start again:
    replica 0 leads only once the log brought it up to that write; without the log the
    shard stays down (ShardUnavailableError) rather than serve without the write."""
    texts = [f"document number {i} about topic {i % 5}" for i in range(20)]
    with ShardedCollection.create(tmp_path / "sc", n_shards=1, replicas=2,
                                  encoder=WordHashEncoder()) as sc:
        sc.add(texts[:10], ids=list(range(10)))
        killed(sc.shard_actors()[0][0])
        sc.add(texts[10:], ids=list(range(10, 20)))
        killed(sc.shard_actors()[0][1])
        _replica_one_cannot_start(sc._sets[0])
        if not log_reaches_back:
            sc._sets[0]._log.clear()
        healed = sc.heal()
        if log_reaches_back:
            assert healed == 1 and len(sc) == 20
            assert sorted(ray.get(sc._sets[0].replicas[0].actor.ids.remote())) == \
                list(range(20))
            assert [m.id for m in sc.search("13", k=1, mode="sparse")] == [13]
        else:
            assert healed == 0
            with pytest.raises(ShardUnavailableError, match="shard 0"):
                sc.search("13", k=1, mode="sparse")


def test_reopened_only_a_replica_holding_every_acknowledged_write_leads(tmp_path):
    """Replica 0 misses a write; the collection is closed, and opened again while replica
    1's directory is away: the open refuses (naming replica 1) instead of serving replica
    0's older documents, and once replica 1 is back both hold every write."""
    texts = [f"document number {i} about topic {i % 5}" for i in range(20)]
    with ShardedCollection.create(tmp_path / "sc", n_shards=1, replicas=2,
                                  encoder=WordHashEncoder()) as sc:
        sc.add(texts[:10], ids=list(range(10)))
        killed(sc.shard_actors()[0][0])
        sc.add(texts[10:], ids=list(range(10, 20)))  # replica 0 leaves the in-sync set
    one = tmp_path / "sc" / "shard-00000" / "replica-1"
    one.rename(tmp_path / "away")
    with pytest.raises(CollectionError, match="those that do: replica 1"):
        ShardedCollection.open(tmp_path / "sc", encoder=WordHashEncoder())
    (tmp_path / "away").rename(one)
    with ShardedCollection.open(tmp_path / "sc", encoder=WordHashEncoder()) as sc:
        assert len(sc) == 20 and sc._sets[0].in_sync == {0, 1}
        held = [sorted(ray.get(r.actor.ids.remote())) for r in sc._sets[0].replicas]
        assert held[0] == held[1] == list(range(20))


def _opened_once_unlocked(path) -> Collection:
    """The collection at path, once the killed actor's process has let go of its lock."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return Collection.open(path, encoder=WordHashEncoder())
        except CollectionLockedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_a_replica_that_committed_unseen_is_copied_not_trusted_by_its_change_number(tmp_path):
    """Replica 0 dies during a write the driver never sees it commit; a write stands in
    for that commit, so replica 0 reaches the live replica's change number with other
    documents. Healing must copy the live replica, not call it current by the number."""
    texts = [f"document number {i} about topic {i % 5}" for i in range(12)]
    with ShardedCollection.create(tmp_path / "sc", n_shards=1, replicas=2,
                                  encoder=WordHashEncoder()) as sc:
        sc.add(texts[:10], ids=list(range(10)))
        killed(sc.shard_actors()[0][0])
        sc.add([texts[10]], ids=[10])  # replica 0 is found dead: replica 1 alone takes it
        with _opened_once_unlocked(tmp_path / "sc" / "shard-00000" / "replica-0") as behind:
            behind.add([texts[11]], ids=[11])  # the same change number, another write
        assert sc.heal() == 1
        assert sc._sets[0].catch_ups["copied"] == 1
        held = [sorted(ray.get(r.actor.ids.remote())) for r in sc._sets[0].replicas]
        assert held[0] == held[1] == list(range(11))
