"""Which replicas of each shard hold every acknowledged write, kept on disk.

A write is acknowledged once every live replica of its shard committed it; a replica that
missed it leaves the in-sync set before the write is acknowledged, and rejoins once it has
caught up. When the sharded collection is opened again (the log of recent writes is gone
then), only an in-sync replica may lead its shard: a replica that missed writes, opened
while the one holding them is away, would otherwise serve without them and later have its
older database copied over theirs.

The file is small and changes only when a replica is lost or comes back, not on every
write. A missing file (a collection made before it existed) means every replica is in sync.
"""

from __future__ import annotations

import json
import os
import threading

from .._util.atomic_file import write_atomic
from ..errors import CollectionError
from ._manifest import read_json

NAME = "in-sync.json"
FORMAT_VERSION = 1


def read(path: str, n_shards: int, replicas: int) -> list[set]:
    """The in-sync replica numbers of every shard; every replica where there is no file."""
    file = os.path.join(path, NAME)
    if not os.path.exists(file):
        return [set(range(replicas)) for _ in range(n_shards)]
    recorded = read_json(file)
    if not isinstance(recorded, dict) or recorded.get("format_version") != FORMAT_VERSION:
        raise CollectionError(f"{file}: not an in-sync file of format_version {FORMAT_VERSION}")
    shards = recorded.get("shards")
    if not isinstance(shards, list) or len(shards) != n_shards or not all(
            isinstance(s, list) and s and all(type(r) is int and 0 <= r < replicas for r in s)
            for s in shards):
        raise CollectionError(f"{file}: expected, for each of the {n_shards} shards, a "
                              f"non-empty list of replica numbers in [0, {replicas})")
    return [set(s) for s in shards]


def write(path: str, in_sync: list) -> None:
    """Replaces the file atomically (a crash leaves the old sets or the new)."""
    write_atomic(os.path.join(path, NAME), json.dumps(
        {"format_version": FORMAT_VERSION, "shards": [sorted(s) for s in in_sync]}).encode())


class Record:
    """The in-sync sets of every shard, saved whole when one shard's set changes."""

    def __init__(self, path: str, in_sync: list):
        self._path = path
        self._in_sync = [set(s) for s in in_sync]
        self._mutex = threading.Lock()

    def __getitem__(self, shard: int) -> set:
        return set(self._in_sync[shard])

    def save(self, shard: int, numbers: set) -> None:
        with self._mutex:
            updated = list(self._in_sync)
            updated[shard] = set(numbers)
            write(self._path, updated)
            self._in_sync = updated
