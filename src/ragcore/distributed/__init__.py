"""Sharded search on Ray: ``ShardedIndex`` holds shards of any ragcore index in Ray actors,
fans every search out to them and merges the per-shard top-k (``merge_hits``).

Ray is imported only when a ShardedIndex is made (install it with ``pip install 'ray>=2.9'``,
the ``dist`` extra); ``merge_hits``, ``shard_of`` and ``shard_paths`` are plain numpy.
"""

from .merge import merge_hits
from .routing import shard_of, shard_paths
from ..errors import ShardError
from .sharded import ShardedIndex

__all__ = ["ShardError", "ShardedIndex", "merge_hits", "shard_of", "shard_paths"]
