"""The body of a shard actor: one index, and the calls ShardedIndex makes on it.

A plain class, so it can be tested without Ray; ShardedIndex wraps it with ray.remote.
"""

from __future__ import annotations

import inspect
import os

import numpy as np

# Parameters that make scores of two indexes comparable; shards must agree on each one
# they have (a FlatIndex has dim and metric, a BM25Index k1, b, variant, ...).
_SCORE_PARAMS = ("dim", "metric", "k1", "b", "variant", "delta", "lucene_norms", "stopwords",
                 "stemmer")


class ShardHost:
    """Holds one shard's index inside an actor.

    n_threads: passed to the index's search/add when they take it and the caller did not,
    so that shards sharing a machine use the CPUs given to their actor, not all cores.
    """

    def __init__(self, n_threads: int):
        self._n_threads = n_threads
        self._index = None

    def ready(self) -> bool:
        return True

    def build(self, factory, data, ids) -> dict:
        index = factory()
        if len(ids):
            index.add(data, ids=ids, **self._threads(index.add, {}))
        self._index = index
        return self.info()

    def load(self, loader, path) -> dict:
        self._index = loader(path)
        return self.info()

    def info(self) -> dict:
        """Type, size and the scoring parameters of the index, for the driver's checks."""
        index = self._index
        params = {name: _plain(getattr(index, name)) for name in _SCORE_PARAMS
                  if hasattr(index, name)}
        return {"type": type(index).__name__, "n": len(index), "params": params,
                "local_statistics": _collection_dependent(index)}

    def ids(self) -> np.ndarray:
        return np.asarray(self._index.ids, dtype=np.int64)

    def has_ids(self, ids: np.ndarray) -> np.ndarray:
        return np.isin(ids, self._index.ids)

    def size(self) -> int:
        return len(self._index)

    def search(self, queries, k: int, kwargs: dict):
        search = self._index.search
        return search(queries, k, **self._threads(search, kwargs))

    def statistics(self, queries):
        """This shard's part of the global BM25 statistics of the queries."""
        return self._index.statistics(queries)

    def add(self, data, ids) -> int:
        self._index.add(data, ids=ids, **self._threads(self._index.add, {}))
        return len(self._index)

    def remove(self, ids) -> int:
        self._index.remove(ids)
        return len(self._index)

    def save(self, path: str) -> str:
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)  # on the actor's machine, not the driver's
        self._index.save(path)
        return path

    def _threads(self, method, kwargs: dict) -> dict:
        if "n_threads" in kwargs or "n_threads" not in inspect.signature(method).parameters:
            return kwargs
        return {**kwargs, "n_threads": self._n_threads}


def _plain(value):
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    return list(value) if isinstance(value, tuple) else value


def _collection_dependent(index) -> bool:
    """Whether scores depend on statistics of the whole collection (BM25: N, avgdl, df)."""
    from ..sparse.bm25 import BM25Index

    return isinstance(index, BM25Index)
