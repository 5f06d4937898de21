"""The replicas of one shard of a ShardedCollection, each a Ray actor holding a Collection.

- A read goes to one live replica, and to the next when that one dies (``call_shards``).
- A write goes to every live replica and is acknowledged once each of them committed it;
  every committed write raises a replica's change number by one, so the replicas of a
  shard that took the same writes hold the same change number.
- A replica that died or fell behind is down until ``heal`` restarts it on its directory
  and brings it to the live replicas' change number: the writes it missed (those of a
  higher change number) are replayed from the shard's log of acknowledged writes, or, when
  the log does not reach back that far, it copies a live replica's database. Only then
  does it serve again.
- When every replica of a shard was down, all are restarted before any serves: the one with
  the highest change number leads, and only once it holds every acknowledged write (replayed
  from the log if need be); otherwise the shard stays down rather than lose them.
"""

from __future__ import annotations

import collections
import threading
import time
from dataclasses import dataclass, field

from ..errors import ShardError, ShardUnavailableError

LOG_LIMIT = 10_000  # acknowledged writes kept per shard for replay


@dataclass
class Replica:
    index: int
    path: str
    actor: object = None
    live: bool = False
    change: int = -1
    restarts: int = field(default=0)


class ReplicaSet:
    """One shard's replicas. start_actor(replica index, path, create) -> actor handle.
    in_sync: the replica numbers that hold every acknowledged write (default: all);
    save_in_sync(shard, numbers) records a change of them durably (_in_sync.py)."""

    def __init__(self, ray, shard: int, paths: list, start_actor, in_sync=None,
                 save_in_sync=None):
        self.ray, self.shard = ray, shard
        self.replicas = [Replica(i, p) for i, p in enumerate(paths)]
        self._start_actor = start_actor
        self.in_sync = set(range(len(paths)) if in_sync is None else in_sync)
        self._save_in_sync = save_in_sync or (lambda shard, numbers: None)
        self._log = collections.deque(maxlen=LOG_LIMIT)  # (change, op, args, kwargs)
        self._turn = 0
        self._acknowledged = -1  # the change number of the last acknowledged write
        self._mutex = threading.Lock()
        # How replicas came back: "current" (nothing missed), "replayed", "copied", and
        # "led" (every replica was down: the one with the newest writes serves first).
        self.catch_ups = collections.Counter()

    # ---- state --------------------------------------------------------------

    def live(self) -> list:
        with self._mutex:
            return [r for r in self.replicas if r.live]

    def pick(self, exclude=()):
        """A live replica not in exclude (indexes), taking turns; None if there is none."""
        with self._mutex:
            live = [r for r in self.replicas if r.live and r.index not in exclude]
            if not live:
                return None
            self._turn += 1
            return live[self._turn % len(live)]

    def mark_down(self, replica: Replica, actor) -> None:
        """The replica stops serving (if actor is still its actor); it is killed, so that a
        slow one cannot commit later."""
        with self._mutex:
            if replica.actor is not actor or not replica.live:
                return
            replica.live = False
        _kill(self.ray, actor)

    # ---- starting and healing -------------------------------------------------

    def start(self, create: bool, timeout: float) -> None:
        """Starts every replica (create: new collections; else opened from their files).
        Creating needs them all; opening leaves the ones that fail down (heal retries)."""
        actors = [self._start_actor(r.index, r.path, create) for r in self.replicas]
        for replica, actor in zip(self.replicas, actors):
            replica.actor = actor
        refs = [a.ready.remote() for a in actors]
        for replica, ref in zip(self.replicas, refs):
            try:
                replica.change = self.ray.get(ref, timeout=timeout)
                replica.live = True
            except Exception as err:  # noqa: BLE001 - an actor that cannot start stays down
                if create:
                    raise ShardError(f"shard {self.shard} replica {replica.index} could not be "
                                     f"created: {_summary(err)}", self.shard, err) from err
                _kill(self.ray, replica.actor)
        live = self.live()
        leaders = [r for r in live if r.index in self.in_sync]
        newest = max((r.change for r in leaders), default=-1)
        self._acknowledged = newest
        for r in live:  # only an in-sync replica may lead; the others catch up from it
            if r.index not in self.in_sync:
                self.mark_down(r, r.actor)
                r.change = -1  # what it holds after the writes it missed is unknown: copied
            elif r.change != newest:  # opened after an unclean stop
                self.mark_down(r, r.actor)

    def probe(self, timeout: float) -> None:
        """Asks every live replica whether it answers; one that does not goes down."""
        sent = [(r, r.actor, r.actor.ready.remote()) for r in self.live()]
        for replica, actor, ref in sent:
            try:
                self.ray.get(ref, timeout=timeout)
            except Exception:  # noqa: BLE001 - dead, unreachable or hung
                self.mark_down(replica, actor)

    def heal(self, timeout: float) -> int:
        """Restarts the down replicas and brings them up to date; returns how many serve
        again. One that cannot start within timeout stays down."""
        down = [r for r in self.replicas if not r.live]
        if down and len(down) == len(self.replicas):
            return self._heal_all(timeout)
        healed = 0
        for replica in down:
            try:
                self._catch_up(replica, self._restart(replica, timeout), timeout)
                healed += 1
            except Exception:  # noqa: BLE001 - it stays down; the next heal tries again
                _kill(self.ray, replica.actor)
        return healed

    def _heal_all(self, timeout: float) -> int:
        """Every replica was down: all are restarted first, and the one with the highest
        change number leads (brought up to the last acknowledged write from the log if it
        is behind; if it cannot be, none serves). Letting the first to start lead would
        copy its older database over a replica holding acknowledged writes."""
        started = []
        for replica in self.replicas:
            try:
                started.append((replica, self._restart(replica, timeout)))
            except Exception:  # noqa: BLE001 - it stays down; the next heal tries again
                _kill(self.ray, replica.actor)
        if not started:
            return 0
        leaders = [pair for pair in started if pair[0].index in self.in_sync]
        if not leaders:  # one whose writes are the log's up to its change may replay the rest
            leaders = [pair for pair in started if pair[1] == pair[0].change]
        if not leaders:
            for replica, _ in started:
                _kill(self.ray, replica.actor)
            return 0
        leader, change = max(leaders, key=lambda pair: pair[1])
        try:
            change = self._replay(leader, change, self._acknowledged, timeout)
        except Exception:  # noqa: BLE001 - it could not take the writes it missed
            change = -1
        if change < self._acknowledged:  # the acknowledged writes are on no replica that runs
            for replica, _ in started:
                _kill(self.ray, replica.actor)
            return 0
        self._join_in_sync(leader)
        with self._mutex:
            leader.change, leader.live = change, True
        self.catch_ups["led"] += 1
        healed = 1
        for replica, change in started:
            if replica is leader:
                continue
            try:
                self._catch_up(replica, change, timeout)
                healed += 1
            except Exception:  # noqa: BLE001 - it stays down; the next heal tries again
                _kill(self.ray, replica.actor)
        return healed

    def _restart(self, replica: Replica, timeout: float) -> int:
        """A new actor on the replica's directory (not serving yet); returns its change."""
        _kill(self.ray, replica.actor)
        actor = self._start_actor(replica.index, replica.path, False)
        replica.actor = actor
        replica.restarts += 1
        return self.ray.get(actor.ready.remote(), timeout=timeout)

    def _replay(self, replica: Replica, change: int, target: int, timeout: float) -> int:
        """Replays the logged writes after change up to target, if the log holds every one
        of them; returns the replica's change number after it."""
        missed = [entry for entry in self._log if change < entry[0] <= target]
        if change < target and missed and missed[0][0] == change + 1 and \
                missed[-1][0] == target:
            for expected, op, args, kwargs in missed:
                change = self.ray.get(replica.actor.write.remote(op, args, kwargs),
                                      timeout=timeout)
                if change != expected:
                    break
        return change

    def _catch_up(self, replica: Replica, change: int, timeout: float) -> None:
        """Brings a restarted replica to the newest live one's change number (replaying
        the log, else copying that replica's database), then lets it serve."""
        sources = self.live()
        if not sources:  # the others went down meanwhile: the next heal restarts them all
            raise ShardError(f"shard {self.shard}: no live replica to catch up from",
                             self.shard)
        source = max(sources, key=lambda r: r.change)
        target = source.change
        how = "current" if change == target else "replayed"
        # Only a replica at the change it was last seen to commit holds the log's writes up
        # to there; one that committed more unseen (its answer was lost) may hold a write
        # the others never took under the same change number.
        trusted = change == replica.change
        if trusted:
            change = self._replay(replica, change, target, timeout)
        if not trusted or change != target:
            database = self.ray.get(source.actor.snapshot.remote(), timeout=timeout)
            change = self.ray.get(replica.actor.restore.remote(database), timeout=timeout)
            how = "copied"
        if change != target:
            raise ShardError(f"shard {self.shard} replica {replica.index} did not reach change "
                             f"{target} (it has {change})", self.shard)
        self._join_in_sync(replica)
        with self._mutex:
            replica.change, replica.live = change, True
        self.catch_ups[how] += 1

    def _join_in_sync(self, replica: Replica) -> None:
        """Recorded before the replica serves (a failed save leaves it down)."""
        if replica.index not in self.in_sync:
            self._set_in_sync(self.in_sync | {replica.index})

    def _set_in_sync(self, numbers: set) -> None:
        self._save_in_sync(self.shard, numbers)
        self.in_sync = set(numbers)

    # ---- writes ---------------------------------------------------------------

    def submit_write(self, op: str, args: tuple, kwargs: dict) -> list:
        """Sends a write to every live replica; returns [(replica, actor, ref)]."""
        return [(r, r.actor, r.actor.write.remote(op, args, kwargs)) for r in self.live()]

    def finish_write(self, sent: list, op: str, args: tuple, kwargs: dict, deadline: float) -> int:
        """Waits for every replica's commit; acknowledges (logs) the write if at least one
        live replica committed it. Replicas that died, timed out or disagree go down."""
        ray = self.ray
        committed, refused, lost = [], [], []
        for replica, actor, ref in sent:
            try:
                change = ray.get(ref, timeout=max(0.0, deadline - time.monotonic()))
                committed.append((replica, actor, change))
            except ray.exceptions.RayTaskError as err:
                refused.append((replica, actor, err))
            except Exception as err:  # noqa: BLE001 - died, unreachable or too slow
                lost.append((replica, actor, err))
        for replica, actor, _ in lost:
            self.mark_down(replica, actor)
        if not committed:
            if refused:
                raise _cause(refused[0][2])
            raise ShardUnavailableError(
                f"shard {self.shard}: no replica committed the {op} (every one died or timed "
                f"out: {_summary(lost[0][2]) if lost else 'none was live'}); it was not "
                "acknowledged", self.shard, lost[0][2] if lost else None)
        for replica, actor, _ in refused:  # the others committed: this one is out of step
            self.mark_down(replica, actor)
        changes = collections.Counter(change for _, _, change in committed)
        agreed = max(changes, key=lambda c: (changes[c], c))
        for replica, actor, change in committed:
            if change != agreed:
                self.mark_down(replica, actor)
            else:
                replica.change = change
        holders = {replica.index for replica, _, change in committed if change == agreed}
        if holders != self.in_sync:  # recorded before the write is acknowledged
            self._set_in_sync(holders)
        self._log.append((agreed, op, args, kwargs))
        self._acknowledged = max(self._acknowledged, agreed)
        return agreed

    def close(self) -> None:
        for replica in self.replicas:
            if replica.live:
                try:
                    self.ray.get(replica.actor.close.remote(), timeout=30)
                except Exception:  # noqa: BLE001 - a dead replica has nothing to close
                    pass
            _kill(self.ray, replica.actor)
            replica.live = False


def call_shards(ray, sets: list, method: str, args_of, deadline: float, what: str) -> list:
    """method(*args_of(i)) on one live replica of every shard of sets (i: its place in
    sets), all at once; a replica
    that dies is replaced by the next live one (each tried once). An error the call raises
    itself (bad filter, ...) is raised as it is. ShardUnavailableError when a shard has no
    replica left, or the deadline passes."""
    tried = [set() for _ in sets]
    pending = {}

    def submit(s: int) -> None:
        replica = sets[s].pick(exclude=tried[s])
        if replica is None:
            shard = sets[s].shard
            raise ShardUnavailableError(
                f"shard {shard}: no live replica could answer the {what} (tried "
                f"{len(tried[s])}); the lost replicas come back with heal() or the next write",
                shard)
        tried[s].add(replica.index)
        actor = replica.actor
        pending[s] = (replica, actor, getattr(actor, method).remote(*args_of(s)))

    for s in range(len(sets)):
        submit(s)
    results = [None] * len(sets)
    while pending:
        s = next(iter(pending))
        replica, actor, ref = pending.pop(s)
        try:
            results[s] = ray.get(ref, timeout=max(0.0, deadline - time.monotonic()))
        except ray.exceptions.RayTaskError as err:
            raise _cause(err) from None
        except ray.exceptions.GetTimeoutError:
            raise ShardUnavailableError(f"shard {sets[s].shard}: no answer to the {what} "
                                        "within the timeout", sets[s].shard) from None
        except ray.exceptions.RayError:
            sets[s].mark_down(replica, actor)
            submit(s)
    return results


def _cause(err):
    """The exception a remote call raised itself (Ray wraps it in RayTaskError)."""
    cause = getattr(err, "cause", None)
    return cause if isinstance(cause, BaseException) else err


def _kill(ray, actor) -> None:
    if actor is None:
        return
    try:
        ray.kill(actor, no_restart=True)
    except Exception:  # noqa: BLE001 - already gone
        pass


def _summary(err) -> str:
    text = str(err).strip()
    return text.splitlines()[-1] if text else repr(err)
