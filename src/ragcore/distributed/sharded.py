"""ShardedIndex: one index split into shards, each held by a Ray actor."""

from __future__ import annotations

import os
import threading

import numpy as np

from .._util.arrays import check_positive_int, raw_ids
from .._util.ids import auto_ids, check_new_ids
from ..hits import Hits
from ..sparse.statistics import combine_statistics
from ._actors import actor_options_per_shard, gather, start_actors
from ._checks import as_items, check_disjoint, common_params, take
from ._ray import connect
from .merge import merge_hits
from .routing import shard_of, shard_paths


_INLINE_BYTES = 64 * 1024  # below Ray's limit for inlined task arguments (100 KiB)


def _nbytes(queries) -> int:
    """About the bytes of queries: an array's, or a text batch's characters; other kinds
    count as large."""
    nbytes = getattr(queries, "nbytes", None)
    if isinstance(nbytes, (int, np.integer)):
        return int(nbytes)
    if isinstance(queries, str):
        return len(queries)
    if isinstance(queries, (list, tuple)) and all(isinstance(q, str) for q in queries):
        return sum(len(q) for q in queries)
    return _INLINE_BYTES + 1


class ShardedIndex:
    """The same ``search(queries, k) -> Hits`` over shards of an index held by Ray actors.

    Make one with ``build`` (split data over new shards) or ``from_files`` (each actor loads
    a saved index). Any ragcore retriever can be a shard: FlatIndex, IVFIndex, BM25Index.

    - search: every shard answers its own top-k at the same time; the results are merged
      (``merge_hits``): score descending, ties by id ascending, padded with (-1, -inf).
      Over FlatIndex shards the answer is exactly that of one FlatIndex over all vectors.
    - add: each id goes to shard ``shard_of(id, n_shards)`` (a hash of the id), after
      checking that no shard holds it yet; ids must be unique across shards.
    - remove: the ids are looked up on every shard (files loaded by ``from_files`` need not
      follow the hash), then removed where they are.
    - BM25 shards score with global statistics: a first phase gathers N, the total length
      and the query terms' document frequencies from every shard (``BM25Index.statistics``),
      the second scores every shard with their sum, so scores and hits equal one BM25Index
      over all documents (Elasticsearch's dfs_query_then_fetch). ``local_statistics=True``
      skips the first phase: each shard then scores with its own N, avgdl and df, and the
      scores differ from one index's.

    add/remove are not atomic across shards: if one shard fails, the others keep their
    change and the ShardError names the shard; a search running during an add may see it
    on some shards only. Use one ShardedIndex per set of actors.
    ``close()`` (or a ``with`` block) kills the actors, as Ray does once the ShardedIndex
    is garbage collected; Ray itself is left running (it is never shut down here).
    """

    def __init__(self, actors, infos, *, _ray):
        # Use build() or from_files(); this takes actors that already hold their shards.
        self._ray = _ray
        self._actors = list(actors)
        self._lock = threading.Lock()
        self._params = common_params(infos)
        self._type = infos[0]["type"]
        self._global_statistics = False  # set by _started: BM25 shards, more than one
        ids = self._gather([a.ids.remote() for a in self._actors], "ids")
        check_disjoint(ids)
        self._next_id = max((int(i.max()) + 1 for i in ids if len(i)), default=0)

    # ---- construction ---------------------------------------------------

    @classmethod
    def build(cls, factory, data, ids=None, n_shards: int = 2, *, num_cpus: float = 1,
              actor_options=None, address=None, local_statistics: bool = False,
              startup_timeout: float = 120.0) -> ShardedIndex:
        """Splits data over n_shards new actors, each adding its part to ``factory()``.

        factory: a picklable callable returning an empty index, called in each actor, e.g.
            ``lambda: FlatIndex(384)``; for IVFIndex it must return a trained index (train
            each on the same sample and seed, so all shards share the centroids).
        data: vectors (an array, one per row) or texts (a list, for BM25Index).
        ids: one unique non-negative id per item; default 0..n-1. Item i goes to shard
            ``shard_of(ids[i], n_shards)``; with fewer items than shards some stay empty.
        num_cpus: CPUs Ray reserves for each actor (and the threads each shard uses).
        actor_options: extra ``ray.remote`` options (e.g. ``scheduling_strategy`` for a
            placement group, ``resources``), one dict for all actors or a list of n_shards.
        address: the Ray cluster to join when Ray is not yet initialised in this process.
        local_statistics: BM25 shards score with their own statistics (one round trip
            less per search; scores differ from one index's).
        startup_timeout: seconds to wait for the actors to be placed before giving up.
        """
        n_shards = check_positive_int(n_shards, "n_shards")
        if not callable(factory):
            raise TypeError(f"factory must be a callable returning an empty index, "
                            f"got {type(factory).__name__}")
        options = actor_options_per_shard(num_cpus, actor_options, n_shards)
        items, count = as_items(data)
        ids = check_new_ids(None if ids is None else ids, count, np.empty(0, np.int64), 0)
        shard = shard_of(ids, n_shards)
        ray = connect(address)
        actors = start_actors(ray, options, startup_timeout)
        refs = []
        for i, actor in enumerate(actors):
            rows = np.flatnonzero(shard == i)
            # ray.put: a top-level ObjectRef argument reaches the actor without a second copy.
            refs.append(actor.build.remote(factory, ray.put(take(items, rows)),
                                           ray.put(ids[rows])))
        return cls._started(ray, actors, refs, "build", local_statistics)

    @classmethod
    def from_files(cls, paths, loader, *, num_cpus: float = 1, actor_options=None,
                   address=None, local_statistics: bool = False,
                   startup_timeout: float = 120.0) -> ShardedIndex:
        """One actor per path, each loading its shard with ``loader(path)``.

        paths: one file per shard, as the actors see them (on a cluster: a path on the
            actor's machine or a shared file system), e.g. ``shard_paths(dir, n)`` or the
            list ``save`` returned; relative paths are made absolute here.
        loader: ``FlatIndex.load``, ``IVFIndex.load``, ``BM25Index.load``, or the class
            itself. Other arguments as for ``build``.
        """
        if isinstance(paths, (str, bytes)) or not hasattr(paths, "__len__"):
            raise TypeError("paths must be a list of shard files, e.g. shard_paths(directory, n)")
        paths = [os.path.abspath(p) for p in paths]  # actors need not share our working dir
        if not paths:
            raise ValueError("paths is empty; pass one file per shard (n_shards must be >= 1)")
        if isinstance(loader, type):
            loader = getattr(loader, "load", None)
        if not callable(loader):
            raise TypeError("loader must be a callable path -> index, e.g. FlatIndex.load")
        options = actor_options_per_shard(num_cpus, actor_options, len(paths))
        ray = connect(address)
        actors = start_actors(ray, options, startup_timeout)
        refs = [actor.load.remote(loader, path) for actor, path in zip(actors, paths)]
        return cls._started(ray, actors, refs, "load", local_statistics)

    @classmethod
    def _started(cls, ray, actors, refs, what, local_statistics) -> ShardedIndex:
        """The index over actors whose build/load calls are refs; kills them on any error."""
        try:
            infos = gather(ray, refs, what)
            index = cls(actors, infos, _ray=ray)
            index._global_statistics = (len(actors) > 1 and not local_statistics
                                        and any(info["local_statistics"] for info in infos))
            return index
        except BaseException:
            for actor in actors:
                ray.kill(actor)
            raise

    # ---- properties -----------------------------------------------------

    @property
    def n_shards(self) -> int:
        return len(self._actors)

    @property
    def index_type(self) -> str:
        """The class name of the shards' indexes."""
        return self._type

    @property
    def dim(self):
        """Dimensions per vector (None for BM25 shards)."""
        return self._params.get("dim")

    def shard_sizes(self) -> list[int]:
        """Items held by each shard."""
        return [int(n) for n in self._gather([a.size.remote() for a in self._live()], "size")]

    def shard_ids(self) -> list[np.ndarray]:
        """The ids each shard holds."""
        return self._gather([a.ids.remote() for a in self._live()], "ids")

    def __len__(self) -> int:
        return sum(self.shard_sizes())

    def __repr__(self) -> str:
        state = "closed" if self._actors is None else f"n_shards={self.n_shards}"
        return f"ShardedIndex({state}, index_type={self._type!r}, params={self._params})"

    # ---- search ---------------------------------------------------------

    def search(self, queries, k: int, **search_args) -> Hits:
        """Top-k of each query over all shards: ``Hits`` [nq, k], as one index answers.

        search_args go to every shard's search (e.g. ``nprobe=`` for IVFIndex,
        ``allow=`` for a filter, ``n_threads=`` to override the per-actor default).
        """
        k = check_positive_int(k, "k")
        actors = self._live()
        self._check_queries(queries)
        # Large batches go to the object store once for all shards; small ones travel
        # inline with each call, which spares a round trip.
        shared = self._ray.put(queries) if _nbytes(queries) > _INLINE_BYTES else queries
        if self._global_statistics and "statistics" not in search_args:
            parts = self._gather([a.statistics.remote(shared) for a in actors], "statistics")
            search_args = {**search_args, "statistics": combine_statistics(parts)}
        refs = [a.search.remote(shared, k, search_args) for a in actors]
        return merge_hits(self._gather(refs, "search"), k)

    def _check_queries(self, queries) -> None:
        dim = self._params.get("dim")
        shape = getattr(queries, "shape", None)
        if dim is not None and shape is not None and len(shape) in (1, 2) and shape[-1] != dim:
            raise ValueError(f"queries have {shape[-1]} dimensions per vector, expected "
                             f"dim={dim}")

    # ---- mutation -------------------------------------------------------

    def add(self, data, ids=None) -> np.ndarray:
        """Adds vectors (or texts) to the shards their ids hash to; returns the ids.

        ids: unique non-negative ids held by no shard; default: consecutive after the
        largest id the shards held when this ShardedIndex was made or added since.
        """
        actors = self._live()
        items, count = as_items(data)
        with self._lock:
            if ids is None:
                new_ids = auto_ids(self._next_id, count)
            else:
                new_ids = check_new_ids(ids, count, np.empty(0, np.int64), 0)
                self._check_absent(actors, new_ids)
            shard = shard_of(new_ids, len(actors))
            refs, touched = [], []
            for i, actor in enumerate(actors):
                rows = np.flatnonzero(shard == i)
                if len(rows):
                    refs.append(actor.add.remote(take(items, rows), new_ids[rows]))
                    touched.append(i)
            self._gather(refs, "add", touched)
            if count:
                self._next_id = max(self._next_id, int(new_ids.max()) + 1)
        return new_ids.copy()

    def _check_absent(self, actors, new_ids: np.ndarray) -> None:
        shared = self._ray.put(new_ids)
        held = self._gather([a.has_ids.remote(shared) for a in actors], "add")
        for i, mask in enumerate(held):
            if mask.any():
                raise ValueError(f"ids: {int(new_ids[mask][0])} is already in shard {i}; "
                                 "ids must be unique across shards")

    def remove(self, ids) -> None:
        """Removes these ids from the shards that hold them; unknown ids are an error (nothing
        is removed)."""
        actors = self._live()
        arr = np.atleast_1d(raw_ids(ids, "ids"))
        if arr.size and arr.dtype.kind not in "iu":
            raise TypeError(f"ids must hold integers, got dtype {arr.dtype}")
        arr = arr.astype(np.int64, copy=False).ravel()
        with self._lock:
            shared = self._ray.put(arr)
            held = self._gather([a.has_ids.remote(shared) for a in actors], "remove")
            unknown = arr[~np.logical_or.reduce(held)]
            if unknown.size:
                shown = ", ".join(str(int(i)) for i in unknown[:5])
                raise ValueError(f"ids: {unknown.size} id(s) are in no shard (e.g. {shown}); "
                                 "nothing removed")
            touched = [i for i, mask in enumerate(held) if mask.any()]
            refs = [actors[i].remove.remote(arr[held[i]]) for i in touched]
            self._gather(refs, "remove", touched)

    # ---- persistence ----------------------------------------------------

    def save(self, directory) -> list[str]:
        """Each actor writes its shard to ``shard_paths(directory, n_shards)[i]`` on its own
        machine (a relative directory is taken from this process's working directory);
        returns those paths (what ``from_files`` takes)."""
        actors = self._live()
        paths = shard_paths(os.path.abspath(directory), len(actors))
        return self._gather([a.save.remote(p) for a, p in zip(actors, paths)], "save")

    # ---- lifecycle ------------------------------------------------------

    def close(self) -> None:
        """Kills the shard actors (their indexes are lost unless saved); idempotent."""
        actors, self._actors = self._actors, None
        for actor in actors or ():
            self._ray.kill(actor)

    def __enter__(self) -> ShardedIndex:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _live(self) -> list:
        if self._actors is None:
            raise RuntimeError("this ShardedIndex is closed; its actors were killed")
        return self._actors

    def _gather(self, refs, what: str, shards=None) -> list:
        return gather(self._ray, refs, what, shards)
