"""ShardedCollection with replicas=2 on a simulated two-node Ray cluster
(ray.cluster_utils.Cluster), while replica actors are killed: a killer thread kills a
replica whenever every replica serves, during a stream of writes and searches; twice a
whole node is removed and a new one added. Every search answer is checked against one
Collection that took the acknowledged writes, and at the end every acknowledged document
is on every replica of its shard.
"""

import collections
import os
import random
import threading
import time

import pytest

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

import _sharded_data  # noqa: E402
from _sharded_data import WordHashEncoder, assert_same_matches, real_text  # noqa: E402
from ragcore import Collection, ShardUnavailableError  # noqa: E402
from ragcore.distributed import ShardedCollection  # noqa: E402

ray.cloudpickle.register_pickle_by_value(_sharded_data)

SIDES = ("side_a", "side_b")  # one custom resource per simulated node: a replica per side
MIN_KILLS = 50


@pytest.fixture(scope="module")
def cluster():
    if ray.is_initialized():
        ray.shutdown()
    c = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "resources": {SIDES[0]: 100}, "include_dashboard": False})
    nodes = {SIDES[0]: None, SIDES[1]: c.add_node(num_cpus=1, resources={SIDES[1]: 100})}
    ray.init(address=c.address, logging_level="ERROR", log_to_driver=False)
    yield c, nodes
    ray.shutdown()
    c.shutdown()


def options():
    return [{"resources": {side: 1}} for side in SIDES]


class Killer(threading.Thread):
    """Kills one replica actor at a time, only while every replica serves (so each shard
    keeps a live one); counts the kills."""

    def __init__(self, sc, seed: int, pause: float, killed=None):
        super().__init__(daemon=True)
        self.sc, self.rng, self.pause = sc, random.Random(seed), pause
        self.kills, self.stop = 0, threading.Event()
        self.killed = set() if killed is None else killed

    def run(self):
        while not self.stop.is_set():
            time.sleep(self.rng.uniform(0, self.pause))
            actors = [a for shard in self.sc.shard_actors() for a in shard]
            if any(a is None or a._actor_id in self.killed for a in actors):
                continue  # a replica is still down: wait until it is healed
            victim = self.rng.choice(actors)
            self.killed.add(victim._actor_id)
            ray.kill(victim, no_restart=True)
            self.kills += 1


def test_replicas_survive_kills_during_searches_and_writes(cluster, tmp_path):
    c, nodes = cluster
    texts, ids, metadata, queries = real_text(160, 8, seed=1)
    seed_n = 100
    reference = Collection.create(tmp_path / "reference", encoder=WordHashEncoder())
    sc = ShardedCollection.create(tmp_path / "sc", n_shards=2, replicas=2,
                                  encoder=WordHashEncoder(), replica_options=options(),
                                  timeout=60)
    try:
        for target in (reference, sc):
            target.add(texts[:seed_n], ids=ids[:seed_n], metadata=metadata[:seed_n])
        rng = random.Random(0)
        acknowledged = set(ids[:seed_n])
        next_doc, searches, writes = seed_n, 0, 0
        killer = Killer(sc, seed=1, pause=0.3)
        killer.start()
        node_kills = 0
        deadline = time.monotonic() + 600
        while killer.kills + _resume.total < MIN_KILLS and time.monotonic() < deadline:
            if node_kills < 2 and killer.kills + _resume.total >= 15 * (node_kills + 1):
                killer.stop.set()
                killer.join()
                alive = [shard[1] for shard in sc.shard_actors()
                         if shard[1] is not None and shard[1]._actor_id not in killer.killed]
                _replace_node(c, nodes, SIDES[1])  # every side_b replica dies at once
                _resume.total += len(alive)
                node_kills += 1
                sc.heal()  # finds them dead and restarts them on the new node
                killer = _resume(killer, sc)
            op = rng.random()
            if op < 0.5:  # a write of one document (one shard): acknowledged or not at all
                uid = None
                if op < 0.3 and next_doc < len(texts):
                    uid, action = ids[next_doc], "add"
                    args = ([texts[next_doc]], [uid], [metadata[next_doc]])
                    next_doc += 1
                elif op < 0.4:
                    uid, action = rng.choice(sorted(acknowledged)), "upsert"
                    args = ([f"rewritten {uid} text {writes}"], [uid], [{"module": "x"}])
                elif len(acknowledged) > 20:
                    uid, action = rng.choice(sorted(acknowledged)), "delete"
                    args = ([uid],)
                if uid is None:
                    continue
                _write(sc, action, args)
                _write(reference, action, args)
                if action == "delete":
                    acknowledged.discard(uid)
                else:
                    acknowledged.add(uid)
                writes += 1
            else:
                q = rng.choice(queries)
                mode = rng.choice(["sparse", "dense", "hybrid"])
                got = sc.search(q, k=8, mode=mode)
                assert_same_matches(list(got), list(reference.search(q, k=8, mode=mode)),
                                    1e-5 if mode == "hybrid" else 0.0)
                searches += 1
        killer.stop.set()
        killer.join()
        total = killer.kills + _resume.total
        assert total >= MIN_KILLS, f"only {total} kills in the time allowed"
        assert searches > 20 and writes > 20
        sc.heal()
        restarts = sum(r.restarts for shard in sc._sets for r in shard.replicas)
        catch_ups = sum((shard.catch_ups for shard in sc._sets), start=collections.Counter())
        print(f"kills {total} (node removals {node_kills}), restarts {restarts}, catch-ups "
              f"{dict(catch_ups)}, searches {searches}, writes {writes}")
        assert restarts >= total and catch_ups["replayed"] > 0
        assert all(a is not None for shard in sc.shard_actors() for a in shard)
        assert len(sc) == len(reference) == len(acknowledged)
        got = {d.id: d.text for d in sc.get(sorted(acknowledged))}
        want = {d.id: d.text for d in reference.get(sorted(acknowledged))}
        assert got == want
        for shard in sc._sets:  # every replica of a shard holds the same documents
            held = [sorted(ray.get(r.actor.ids.remote())) for r in shard.replicas]
            changes = [ray.get(r.actor.ready.remote()) for r in shard.replicas]
            assert held[0] == held[1] and changes[0] == changes[1]
    finally:
        sc.close()
        reference.close()


def _write(target, action, args):
    if action == "add":
        target.add(args[0], ids=args[1], metadata=args[2])
    elif action == "upsert":
        target.upsert(args[0], ids=args[1], metadata=args[2])
    else:
        target.delete(args[0])


def _replace_node(c, nodes, side):
    node = nodes[side]
    c.remove_node(node, allow_graceful=False)
    nodes[side] = c.add_node(num_cpus=1, resources={side: 100})
    c.wait_for_nodes()


def _resume(killer, sc):
    _resume.total += killer.kills
    fresh = Killer(sc, seed=killer.kills + 7, pause=killer.pause, killed=killer.killed)
    fresh.start()
    return fresh


_resume.total = 0


def test_a_search_no_replica_can_answer_fails_within_the_timeout(cluster, tmp_path):
    with ShardedCollection.create(tmp_path / "sc", n_shards=2, replicas=2,
                                  encoder=WordHashEncoder(), replica_options=options(),
                                  timeout=20) as sc:
        sc.add(["alpha beta", "gamma delta", "epsilon"], ids=[1, 2, 3])
        shard = sc._sets[0]
        for actor in sc.shard_actors()[0]:
            ray.kill(actor, no_restart=True)
        # Their directories are lost too, so neither can be restarted.
        for replica in shard.replicas:
            os.rename(replica.path, replica.path + ".lost")
        start = time.monotonic()
        with pytest.raises(ShardUnavailableError, match="shard 0: no live replica"):
            sc.search("alpha", k=2, mode="sparse")
        assert time.monotonic() - start < 20
        with pytest.raises(ShardUnavailableError, match="shard 0.* no live replica"):
            sc.add(["zeta"], ids=[_id_on_shard(sc, 0)])
        for replica in shard.replicas:
            os.rename(replica.path + ".lost", replica.path)
        assert sc.heal() == 2  # both restart from their directories
        assert [m.id for m in sc.search("alpha", k=2, mode="sparse")] == [1]
        assert len(sc) == 3


def _id_on_shard(sc, shard: int) -> int:
    from ragcore.distributed import document_shards
    return next(i for i in range(100, 1000) if document_shards([i], sc.n_shards)[0] == shard)
