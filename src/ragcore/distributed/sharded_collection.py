"""ShardedCollection: a Collection split into shards, each shard a set of replicas, each
replica a Collection held by a Ray actor on its own directory."""

from __future__ import annotations

import json
import os
import time
import uuid

import numpy as np

from .._util.arrays import check_choice, check_positive_int
from ..errors import CollectionError, ShardUnavailableError
from ..hits import PADDING_ID, Hits
from ..rag.collection import checks
from ..rag.collection.collection import (MODES, Document, Match, SearchResults,
                                         fusion_function, rerank_hits)
from ..rag.collection.locking import ReadWriteLock
from ..rag.defaults import DEFAULT_K0
from . import _in_sync, _manifest
from ._collection_host import CollectionHost
from ._ray import connect
from .merge import merge_hits
from .replicas import ReplicaSet, call_shards
from .routing import document_shards
from .statistics_cache import MAX_QUERIES, StatisticsCache

STAGES = ("encode", "first_phase", "sparse", "fuse", "rerank")
_OPTIONS = ("dense", "bm25", "metadata_schema")


class ShardedCollection:
    """The Collection API over shards of documents held by Ray actors, with replicas.

    Use ``create`` or ``open``; ``close()`` (or ``with``) writes every replica's index files
    and stops the actors. See the README section "Sharded collections on Ray" for the
    consistency it promises.
    """

    def __init__(self, path, manifest, sets, ray, encoder, timeout, statistics_cache):
        # Use create() or open().
        self.path = path
        self._manifest = manifest
        self._sets = sets
        self._ray = ray
        self._encoder = encoder
        self._timeout = timeout
        self._rw = ReadWriteLock()
        self._statistics = StatisticsCache(statistics_cache)
        self._closed = False

    # ---- create / open ------------------------------------------------------------

    @classmethod
    def create(cls, path, n_shards: int, replicas: int = 1, address=None, *, encoder=None,
               chunker=None, num_cpus: float = 0, replica_options=None, timeout: float = 60.0,
               statistics_cache: int = MAX_QUERIES, **collection_options) -> ShardedCollection:
        """Creates a sharded collection in a new (or empty) directory.

        n_shards: how many shards the documents are spread over (by a hash of their id).
        replicas: copies of each shard, each on its own actor and directory; with 2 or more
            a search is answered while one copy is lost.
        address: the Ray cluster to join when Ray is not initialised in this process.
        encoder, chunker: as Collection.create; the encoder (picklable) goes to every
            replica (which embeds its documents) and encodes queries here.
        num_cpus: CPUs Ray reserves for each replica actor.
        replica_options: extra ``ray.remote`` options per replica number (a list of
            ``replicas`` dicts), e.g. ``{"resources": {"rack_a": 1}}`` to keep the copies of a
            shard on different machines.
        timeout: seconds a search or write may wait for the shards before it fails with
            ShardUnavailableError.
        statistics_cache: how many query texts' global BM25 statistics are remembered until
            the next write (a query among them skips the statistics round); 0: none.
        collection_options: dense=, bm25=, metadata_schema= (as Collection.create).
        """
        n_shards = check_positive_int(n_shards, "n_shards")
        replicas = check_positive_int(replicas, "replicas")
        unknown = sorted(set(collection_options) - set(_OPTIONS))
        if unknown:
            raise TypeError(f"unknown collection option {unknown[0]!r}; expected one of "
                            f"{', '.join(_OPTIONS)}")
        path = os.path.abspath(os.fspath(path))
        os.makedirs(path, exist_ok=True)
        if os.listdir(path):
            raise CollectionError(f"{path}: the directory is not empty; a sharded collection "
                                  "is created in a new or empty directory")
        manifest = _manifest.write(path, n_shards, replicas, collection_options)
        return cls._started(path, manifest, True, address, encoder, chunker, num_cpus,
                            replica_options, timeout, statistics_cache)

    @classmethod
    def open(cls, path, address=None, *, encoder=None, chunker=None, num_cpus: float = 0,
             replica_options=None, timeout: float = 60.0,
             statistics_cache: int = MAX_QUERIES) -> ShardedCollection:
        """Opens a sharded collection: every replica actor opens its directory (on a
        cluster: a path each replica's machine sees). Replicas that disagree are brought to
        the newest one's change number before they serve."""
        path = os.path.abspath(os.fspath(path))
        manifest = _manifest.read(path)
        return cls._started(path, manifest, False, address, encoder, chunker, num_cpus,
                            replica_options, timeout, statistics_cache)

    @classmethod
    def _started(cls, path, manifest, create, address, encoder, chunker, num_cpus,
                 replica_options, timeout, statistics_cache) -> ShardedCollection:
        if isinstance(statistics_cache, bool) or not isinstance(statistics_cache, int) or \
                statistics_cache < 0:
            raise ValueError(f"statistics_cache must be an int >= 0, got {statistics_cache!r}")
        n_replicas = manifest["replicas"]
        if replica_options is None:
            replica_options = [{} for _ in range(n_replicas)]
        if not isinstance(replica_options, (list, tuple)) or len(replica_options) != n_replicas \
                or not all(isinstance(o, dict) for o in replica_options):
            raise ValueError(f"replica_options must be a list of {n_replicas} dicts, one per "
                             "replica number")
        if not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ValueError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        ray = connect(address)
        remote = ray.remote(CollectionHost)
        options = dict(manifest["options"])

        def start_actor(replica: int, replica_path: str, create_it: bool):
            opts = {"num_cpus": num_cpus, "max_restarts": 0, **replica_options[replica]}
            return remote.options(**opts).remote(replica_path, create_it, options, encoder,
                                                 chunker)

        record = _in_sync.Record(path, _in_sync.read(path, len(manifest["shards"]), n_replicas))
        sets = [ReplicaSet(ray, s, [os.path.join(path, p) for p in paths], start_actor,
                           in_sync=record[s], save_in_sync=record.save)
                for s, paths in enumerate(manifest["shards"])]
        try:
            for replica_set in sets:
                replica_set.start(create, timeout)
                if not replica_set.live():
                    raise CollectionError(
                        f"{path}: no replica of shard {replica_set.shard} that holds every "
                        "acknowledged write could be opened (those that do: replica "
                        f"{', '.join(map(str, sorted(replica_set.in_sync)))}); bring one of "
                        "them back (its directory, its node) and open again")
                replica_set.heal(timeout)  # those behind the newest catch up first
        except BaseException:
            for replica_set in sets:
                replica_set.close()
            raise
        return cls(path, manifest, sets, ray, encoder, timeout, statistics_cache)

    # ---- properties -----------------------------------------------------------------

    @property
    def n_shards(self) -> int:
        return len(self._sets)

    @property
    def replicas(self) -> int:
        return self._manifest["replicas"]

    def shard_actors(self) -> list[list]:
        """The Ray actor handle of every replica, by shard then replica number (None where a
        replica is down): for operators and tests."""
        return [[r.actor if r.live else None for r in s.replicas] for s in self._sets]

    def __repr__(self) -> str:
        return (f"ShardedCollection({self.path!r}, n_shards={self.n_shards}, "
                f"replicas={self.replicas})")

    # ---- reading --------------------------------------------------------------------

    def __len__(self) -> int:
        return self.count()

    def count(self, filter=None) -> int:
        """Documents (matching filter, if given), over every shard."""
        return sum(self._read("count", lambda s: (filter,), "count"))

    def get(self, ids) -> list[Document]:
        """The documents with these ids that exist, in the order asked."""
        ids = _check_ids(ids, "ids")
        groups = self._route(ids)
        found = {}
        for docs in self._read("get", lambda s: (groups.get(s, []),), "get"):
            found.update((d.id, d) for d in docs)
        return [found[i] for i in ids if i in found]

    def _read(self, method: str, args_of, what: str) -> list:
        self._check_open()
        with self._rw.read():
            return call_shards(self._ray, self._sets, method, args_of,
                               time.monotonic() + self._timeout, what)

    # ---- writing --------------------------------------------------------------------

    def add(self, texts, ids=None, metadata=None, embeddings=None) -> list:
        """Adds documents to the shards their ids hash to; returns their ids (default: new
        uuid strings). Nothing is written if an id exists on any shard (use upsert)."""
        texts = checks.check_texts(texts)
        ids = [uuid.uuid4().hex for _ in texts] if ids is None else _check_ids(ids, "ids")
        return self._write_documents("add", texts, ids, metadata, embeddings)

    def upsert(self, texts, ids, metadata=None, embeddings=None) -> list:
        """Adds documents, replacing those whose id exists."""
        if ids is None:
            raise CollectionError("upsert needs ids (the documents to replace or add)")
        return self._write_documents("upsert", checks.check_texts(texts),
                                     _check_ids(ids, "ids"), metadata, embeddings)

    def delete(self, ids, missing_ok: bool = False) -> int:
        """Deletes documents by id; returns how many. Unknown ids are a CollectionError naming
        them (nothing deleted) unless missing_ok."""
        ids = _check_ids(ids, "ids")
        self._check_open()
        with self._rw.write():
            self._heal_locked()
            present = set(self._existing(ids))
            unknown = [i for i in ids if i not in present]
            if unknown and not missing_ok:
                raise CollectionError(
                    f"delete: {len(unknown)} of the ids are not in the collection: "
                    f"{checks.listing(unknown)}; nothing deleted. Pass only existing ids, or "
                    "missing_ok=True to delete the others and skip these")
            kept = [i for i in ids if i in present]
            groups = self._route(kept)
            self._commit({s: ("delete", (group,), {}) for s, group in groups.items()})
            return len(kept)

    def _write_documents(self, op, texts, ids, metadata, embeddings) -> list:
        if len(ids) != len(texts):
            raise CollectionError(f"ids has {len(ids)} entries for {len(texts)} texts")
        if metadata is not None:
            metadata = list(metadata)
            if len(metadata) != len(texts):
                raise CollectionError(f"metadata has {len(metadata)} entries for "
                                      f"{len(texts)} texts")
        if embeddings is not None:
            embeddings = np.asarray(embeddings, dtype=np.float32)
            if embeddings.ndim != 2 or len(embeddings) != len(texts):
                raise CollectionError(f"embeddings must be [{len(texts)}, dim], got shape "
                                      f"{embeddings.shape}")
        self._check_open()
        with self._rw.write():
            self._heal_locked()
            ops = {}
            for s, at in _positions(ids, self.n_shards).items():
                kwargs = {"ids": [ids[i] for i in at]}
                if metadata is not None:
                    kwargs["metadata"] = [metadata[i] for i in at]
                if embeddings is not None:
                    kwargs["embeddings"] = embeddings[at]
                ops[s] = (op, ([texts[i] for i in at],), kwargs)
            # Every shard checks its part first, so that bad input writes nothing anywhere.
            shards = sorted(ops)
            existing = call_shards(
                self._ray, [self._sets[s] for s in shards], "check_write",
                lambda i: (ops[shards[i]][1][0], ops[shards[i]][2]["ids"],
                           ops[shards[i]][2].get("metadata"), ops[shards[i]][2].get("embeddings")),
                time.monotonic() + self._timeout, "write check")
            existing = [uid for part in existing for uid in part]
            if op == "add" and existing:
                raise CollectionError(
                    f"ids: {len(existing)} already in the collection: "
                    f"{checks.listing(existing)}; use upsert to replace them (nothing was "
                    "written)")
            self._commit(ops)
        return ids

    def _commit(self, ops: dict) -> None:
        """Every shard's write to all its live replicas at once; returns once each live
        replica committed (or died: then it is down until healed)."""
        missing = [s for s in ops if not self._sets[s].live()]
        if missing:
            raise ShardUnavailableError(f"shard {missing[0]} has no live replica; nothing was "
                                        "written", missing[0])
        deadline = time.monotonic() + self._timeout
        self._statistics.invalidate()
        sent = {s: self._sets[s].submit_write(*op) for s, op in ops.items()}
        failure = None
        for s, refs in sent.items():
            try:
                self._sets[s].finish_write(refs, *ops[s], deadline)
            except BaseException as err:  # noqa: BLE001 - the other shards are still awaited
                failure = failure or err
        if failure is not None:
            raise failure

    def _existing(self, ids: list) -> list:
        groups = self._route(ids)
        found = call_shards(self._ray, self._sets, "existing",
                            lambda s: (groups.get(s, []),),
                            time.monotonic() + self._timeout, "existence check")
        present = {i for part in found for i in part}
        return [i for i in ids if i in present]

    def _route(self, ids: list) -> dict:
        groups = {}
        for uid, s in zip(ids, document_shards(ids, self.n_shards).tolist()):
            groups.setdefault(s, []).append(uid)
        return groups

    # ---- replicas -------------------------------------------------------------------

    def heal(self, probe: bool = True) -> int:
        """Restarts the replicas that are down and catches them up with a live replica of
        their shard (writes do this first too, and a search that finds a shard without a
        live replica); returns how many serve again. probe: first ask every replica that
        is thought live whether it still answers (the others go down)."""
        self._check_open()
        with self._rw.write():
            if probe:
                for replica_set in self._sets:
                    replica_set.probe(self._timeout)
            return self._heal_locked()

    def _heal_locked(self) -> int:
        return sum(s.heal(self._timeout) for s in self._sets
                   if len(s.live()) < len(s.replicas))

    # ---- search ---------------------------------------------------------------------

    def search(self, query, k: int = 10, mode: str = "hybrid", filter=None, fusion=None,
               rerank=None, k0: int = DEFAULT_K0, by: str = "chunk", query_vector=None):
        """As Collection.search: one query (a str: SearchResults) or a list of queries.

        Every shard runs the filter and its first stage; the driver merges each modality
        over the shards, then fuses and reranks as one Collection does. BM25 scores with
        the statistics of all shards: gathered in the same round as the dense candidates,
        or remembered from an earlier search since the last write (then the whole search is
        one round trip).
        A match's chunk_id is the shard's chunk id * n_shards + the shard.
        """
        self._check_open()
        single = isinstance(query, str)
        queries = [query] if single else checks.check_queries(query)
        mode = check_choice(mode, "mode", MODES)
        k = check_positive_int(k, "k")
        k0 = max(check_positive_int(k0, "k0"), k)
        by = check_choice(by, "by", ("chunk", "document"))
        fuse = fusion_function(fusion)
        timings = dict.fromkeys(STAGES, 0.0)
        vectors = None
        if mode != "sparse":
            t = time.perf_counter()
            vectors = self._query_vectors(queries, query_vector)
            timings["encode"] = time.perf_counter() - t
        width = k0 if (mode == "hybrid" or rerank is not None or by == "document") else k
        try:
            with self._rw.read():
                hits, rows = self._first_stage(queries, vectors, width, mode, filter, fuse,
                                               timings)
        except ShardUnavailableError:  # one bounded retry, once the lost replicas are back
            if not self.heal(probe=False):
                raise
            with self._rw.read():
                hits, rows = self._first_stage(queries, vectors, width, mode, filter, fuse,
                                               timings)
        if rerank is not None:
            t = time.perf_counter()
            hits = rerank_hits(rerank, queries, hits, rows)
            timings["rerank"] = time.perf_counter() - t
        results = [SearchResults(_matches(hits, r, rows, k, by), timings,
                                 Hits(hits.scores[r:r + 1].copy(), hits.ids[r:r + 1].copy()))
                   for r in range(len(queries))]
        return results[0] if single else results

    def _first_stage(self, queries, vectors, width, mode, filter, fuse, timings):
        """One round trip to every shard when the queries' BM25 statistics are known since
        the last write (or the mode is dense); else a first round gathers them with the
        dense candidates, and a second scores BM25 under their sum."""
        deadline = time.monotonic() + self._timeout
        n = self.n_shards
        generation = self._statistics.generation()
        known = None if mode == "dense" else self._statistics.lookup(queries)
        t = time.perf_counter()
        first = call_shards(self._ray, self._sets, "first_phase",
                            lambda s: (queries, width, mode, filter, vectors, known), deadline,
                            "search")
        timings["first_phase"] = time.perf_counter() - t
        lists, rows = [], {}
        if mode != "sparse":
            lists.append(_merged([part[0] for part in first], n, width, rows))
        if mode != "dense":
            if known is not None:
                second = [part[2] for part in first]
            else:
                t = time.perf_counter()
                stats = self._statistics.store(queries, [part[1] for part in first],
                                               generation)
                second = call_shards(self._ray, self._sets, "sparse",
                                     lambda s: (queries, width, filter, stats), deadline,
                                     "search")
                timings["sparse"] = time.perf_counter() - t
            lists.append(_merged(second, n, width, rows))
        t = time.perf_counter()
        hits = fuse(lists, width) if len(lists) > 1 else lists[0]
        timings["fuse"] = time.perf_counter() - t
        return hits, rows

    def _query_vectors(self, queries, query_vector):
        if query_vector is not None:
            x = np.ascontiguousarray(np.asarray(query_vector, dtype=np.float32))
            x = x[None, :] if x.ndim == 1 else x
            if x.ndim != 2 or len(x) != len(queries) or not np.isfinite(x).all():
                raise CollectionError(f"query_vector must be finite, [{len(queries)}, dim]; "
                                      f"got shape {x.shape}")
            return x
        encoder = self._encoder
        if encoder is None:
            encoder = self._encoder = self._bundled_encoder()
        if hasattr(encoder, "encode_queries"):
            vectors = encoder.encode_queries(queries)
        elif checks.is_bi_encoder(encoder):
            vectors = encoder.encode(queries, warn=False)
        else:
            vectors = encoder.encode(queries)
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def _bundled_encoder(self):
        """The bundled model at the precision the shards' vectors were made with: queries of
        a collection made under an earlier default, or another machine's "auto", are encoded
        as its documents were."""
        from ..encoders import default_encoder

        precisions = set(self._read("bundled_precision", lambda s: (), "search"))
        if len(precisions) != 1:
            raise CollectionError(f"the shards of {self.path} were made with different encoders "
                                  f"({sorted(map(str, precisions))}); pass encoder= to open")
        precision = precisions.pop()
        return default_encoder() if precision is None else default_encoder(precision)

    # ---- lifecycle ------------------------------------------------------------------

    def close(self) -> None:
        """Closes every replica's Collection (writing its index files) and stops the
        actors; idempotent. Ray itself is left running."""
        if self._closed:
            return
        with self._rw.write():
            self._closed = True
            for replica_set in self._sets:
                replica_set.close()

    def __enter__(self) -> ShardedCollection:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise CollectionError("this ShardedCollection is closed")


def _merged(parts: list, n_shards: int, width: int, rows: dict) -> Hits:
    """One modality's candidates of every shard, under global chunk keys (shard chunk id *
    n_shards + shard), merged into the best width; their rows go into rows."""
    lists = []
    for s, (hits, shard_rows) in enumerate(parts):
        ids = np.where(hits.ids == PADDING_ID, PADDING_ID, hits.ids * n_shards + s)
        lists.append(Hits(hits.scores, ids))
        rows.update((c * n_shards + s, row) for c, row in shard_rows.items())
    return merge_hits(lists, width)


def _positions(ids: list, n_shards: int) -> dict:
    """shard -> the positions in ids of the documents routed to it."""
    out = {}
    for i, s in enumerate(document_shards(ids, n_shards).tolist()):
        out.setdefault(s, []).append(i)
    return out


def _matches(hits: Hits, r: int, rows: dict, k: int, by: str) -> list:
    out, seen = [], set()
    for cid, score in zip(hits.ids[r].tolist(), hits.scores[r].tolist()):
        if cid == PADDING_ID or len(out) == k:
            break
        uid, position, start, end, text, meta = rows[cid]
        if by == "document":
            if uid in seen:
                continue
            seen.add(uid)
        out.append(Match(uid, cid, position, start, end, text, float(score), json.loads(meta)))
    return out


def _check_ids(ids, name: str) -> list:
    if isinstance(ids, (str, int, np.integer)) and not isinstance(ids, bool):
        ids = [ids]
    if isinstance(ids, np.ndarray):
        ids = ids.tolist()
    try:
        out = [int(v) if isinstance(v, np.integer) else v for v in ids]
    except TypeError:
        raise TypeError(f"{name} must be a list of str or int ids, got "
                        f"{type(ids).__name__}") from None
    checks.refuse(name, [p for i, v in enumerate(out) for p in checks.id_problems(name, i, v)],
                  len(out))
    if len({type(v) for v in out}) > 1:
        raise TypeError(f"{name} mixes int and str ids; use one type")
    if len(set(out)) != len(out):
        raise CollectionError(f"{name}: ids appear more than once; ids must be unique")
    return out
