"""Sharded search on Ray: ``ShardedIndex`` holds shards of any ragcore index in Ray actors,
fans every search out to them and merges the per-shard top-k (``merge_hits``);
``ShardedCollection`` does the same for Collections, with replicas and global BM25 statistics
(``is_sharded_collection(path)``: whether a directory holds one).

Ray is imported only when a ShardedIndex is made (install it with ``pip install 'ray>=2.9'``,
the ``dist`` extra); ``merge_hits``, ``shard_of`` and ``shard_paths`` are plain numpy.
"""

from .merge import merge_hits
from .routing import shard_of, shard_paths
from ..errors import ShardError
from .sharded import ShardedIndex
from .sharded_collection import ShardedCollection
from .routing import document_shards
from ._manifest import present as is_sharded_collection

__all__ = ["ShardError", "ShardedCollection", "ShardedIndex", "document_shards",
           "is_sharded_collection", "merge_hits", "shard_of", "shard_paths"]
