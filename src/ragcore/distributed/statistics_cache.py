"""The global BM25 statistics of recent queries, kept by a ShardedCollection between writes.

The statistics of a query (N, total length, its terms' document frequencies over every
shard) change only when the collection does, and every write goes through the
ShardedCollection that holds this cache (its replicas hold the writer locks). So a query
seen since the last write needs no statistics round: its search is one round trip.
"""

from __future__ import annotations

import collections
import threading

from ..sparse.statistics import BM25Statistics, combine_statistics

MAX_QUERIES = 4096  # query texts remembered, least recently used out first


class StatisticsCache:
    def __init__(self, max_queries: int = MAX_QUERIES):
        self._max = max_queries
        self._by_query: collections.OrderedDict = collections.OrderedDict()
        self._generation = 0
        self._mutex = threading.Lock()

    def invalidate(self) -> None:
        """After a write: every statistic may have changed."""
        with self._mutex:
            self._by_query.clear()
            self._generation += 1

    def generation(self) -> int:
        with self._mutex:
            return self._generation

    def lookup(self, queries: list) -> BM25Statistics | None:
        """Statistics covering every query of the batch, or None if one is not known."""
        if not self._max:
            return None
        with self._mutex:
            parts = []
            for q in queries:
                stats = self._by_query.get(q)
                if stats is None:
                    return None
                self._by_query.move_to_end(q)
                parts.append(stats)
        if len(parts) == 1:
            return parts[0]
        freqs = {}
        for part in parts:
            freqs.update(part.doc_freqs)
        return BM25Statistics(parts[0].n_docs, parts[0].total_length, freqs)

    def store(self, queries: list, parts: list, generation: int) -> BM25Statistics:
        """Combines the shards' statistics of a batch and remembers them for each of its
        queries, unless a write came since generation was read; returns the combination."""
        stats = combine_statistics(parts)
        with self._mutex:
            if generation == self._generation and self._max:
                for q in queries:
                    self._by_query[q] = stats
                    self._by_query.move_to_end(q)
                while len(self._by_query) > self._max:
                    self._by_query.popitem(last=False)
        return stats
