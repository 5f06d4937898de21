"""Where ids go: the shard of an id for add(), and the file names of saved shards."""

from __future__ import annotations

import hashlib
import os

import numpy as np

from .._util.arrays import check_positive_int

# splitmix64 (one step): consecutive or strided ids spread over the shards as if at random,
# where a plain id % n_shards would put ids that are multiples of n_shards on one shard.
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def shard_of(ids, n_shards: int) -> np.ndarray:
    """The shard (0..n_shards-1) each non-negative int64 id is routed to; deterministic."""
    n_shards = check_positive_int(n_shards, "n_shards")
    x = np.asarray(ids, dtype=np.int64).astype(np.uint64) + _GAMMA
    x = (x ^ (x >> np.uint64(30))) * _M1  # uint64 arrays wrap around silently, as intended
    x = (x ^ (x >> np.uint64(27))) * _M2
    x = x ^ (x >> np.uint64(31))
    return (x % np.uint64(n_shards)).astype(np.int64)


def shard_paths(directory, n_shards: int) -> list[str]:
    """The file of each shard of a saved ShardedIndex: directory/shard-00001-of-00004.rc."""
    n_shards = check_positive_int(n_shards, "n_shards")
    directory = os.fspath(directory)
    return [os.path.join(directory, f"shard-{i:05d}-of-{n_shards:05d}.rc")
            for i in range(n_shards)]


def document_shards(ids, n_shards: int) -> np.ndarray:
    """The shard of each document id (int or str) of a ShardedCollection: ints as
    ``shard_of``; a str by the first 8 bytes of its blake2b digest, so every process and
    machine routes it alike (Python's own str hash changes between processes)."""
    keys = np.empty(len(ids), dtype=np.int64)
    for i, uid in enumerate(ids):
        if isinstance(uid, str):
            digest = hashlib.blake2b(uid.encode("utf-8"), digest_size=8).digest()
            keys[i] = int.from_bytes(digest, "little") >> 1  # non-negative int64
        else:
            keys[i] = int(uid)
    return shard_of(keys, n_shards)
