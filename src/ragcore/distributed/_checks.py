"""Driver-side checks and splitting of the data given to ShardedIndex."""

from __future__ import annotations

import numpy as np

from .._util.arrays import to_numpy


def common_params(infos: list[dict]) -> dict:
    """The scoring parameters all shards share; ValueError naming the first disagreement."""
    first = infos[0]
    for i, info in enumerate(infos[1:], 1):
        if info["type"] != first["type"]:
            raise ValueError(f"shards hold different index types: shard 0 a {first['type']}, "
                             f"shard {i} a {info['type']}")
        for name in sorted(set(first["params"]) | set(info["params"])):
            a, b = first["params"].get(name), info["params"].get(name)
            if a != b:
                raise ValueError(f"shards disagree on {name}: shard 0 has {a!r}, shard {i} has "
                                 f"{b!r}; their scores could not be merged")
    return dict(first["params"])


def check_disjoint(ids: list[np.ndarray]) -> None:
    shard = np.concatenate([np.full(len(x), i) for i, x in enumerate(ids)]) if ids else []
    all_ids = np.concatenate(ids) if ids else np.empty(0, np.int64)
    order = np.argsort(all_ids, kind="stable")
    srt = all_ids[order]
    dup = np.flatnonzero(srt[1:] == srt[:-1])
    if dup.size:
        j = dup[0]
        raise ValueError(f"id {int(srt[j])} is in shard {int(shard[order[j]])} and in shard "
                         f"{int(shard[order[j + 1]])}; ids must be unique across shards")


def as_items(data):
    """(items, count): vectors as an array indexed by row, texts as a list."""
    if isinstance(data, (str, bytes)):
        data = [data]
    if isinstance(data, (list, tuple)):
        return list(data), len(data)
    arr = to_numpy(data, "data")
    if arr.ndim != 2:
        raise ValueError(f"data must be 2-D vectors (one per row) or a list of texts, "
                         f"got shape {arr.shape}")
    return arr, arr.shape[0]


def take(items, rows: np.ndarray):
    if isinstance(items, list):
        return [items[i] for i in rows]
    return np.ascontiguousarray(items[rows])
