"""The dense and BM25 indexes of a Collection, keyed by chunk id, and their files.

The indexes are a cache of the database: on open they are loaded from their files and
brought up to the database by the difference of chunk ids (chunk ids are never reused, so
an id the database lacks is a deleted chunk and an id the index lacks a new one), with the
stored embeddings and texts: nothing is encoded again. A file that is missing or damaged
is rebuilt the same way from nothing.

Files: dense-<change>.rci and bm25-<change>.rci (ragcore index files: versioned and
checksummed), and indexes.json naming the pair and the database change number they
reflect, and the change number of the last re-embedding: a dense file written before
the database's last re-embedding holds the old vectors under the same chunk ids, so it is
rebuilt from the stored embeddings. Each file is written under a temporary name and renamed, then indexes.json is
replaced the same way, so a crash leaves the old pair or the new pair, never a mix.

Deleted chunks leave BM25 at once (its statistics must be those of the live chunks) and
the dense index lazily: they are tombstones, skipped by over-fetching, until enough of
them pile up to be worth one removal pass.
"""

from __future__ import annotations

import json
import os

import numpy as np

from ..._util.atomic_file import write_atomic
from ...dense.flat import FlatIndex
from ...dense.hnsw import HNSWIndex
from ...dense.ivf import IVFIndex
from ...errors import IndexFileError
from ...hits import PADDING_ID, Hits
from ...sparse.bm25 import BM25Index
from . import store
from . import manifest
from .manifest import NAME as MANIFEST, ids_digest

_MAX_TOMBSTONES = 1024
# A filter allowing at most this many chunks is answered by gathering their vectors and
# scoring them alone (at 10,000 of 100,000 the filtered scan of everything was faster).
_EXACT_ALLOW_MAX = 4096
_IVF_TRAIN_PER_LIST = 30  # IVF trains once this many vectors per list exist (flat before)
# The index file kinds each dense setting accepts on open (an IVF collection is flat until
# it has enough vectors to train).
_FILE_KINDS = {"flat": ("FlatIndex",), "ivf": ("FlatIndex", "IVFIndex"), "hnsw": ("HNSWIndex",)}
_LOADERS = {"FlatIndex": FlatIndex.load, "IVFIndex": IVFIndex.load, "HNSWIndex": HNSWIndex.load}


class Indexes:
    def __init__(self, settings: dict):
        self.settings = settings
        self.dense = None  # created at the first vectors (their dimension is learnt then)
        self.bm25 = BM25Index(**settings["bm25"])
        self.tombstones: set[int] = set()
        self.change = 0
        self.unsaved = 0  # chunks added or removed since the files were written
        self._ivf_trained_at = 0
        self.version = 0  # counts changes to the dense index (keys _order_cache)
        self._order_cache = (-1, None, None)  # (version, argsort of the dense ids, ids)

    # ---- building ----------------------------------------------------------

    def _new_dense(self, dim: int):
        cfg = self.settings["dense"]
        if cfg["kind"] == "hnsw":
            # seed 0; the graph is built with all cores, so a graph rebuilt from the
            # database (a damaged file) may differ from the lost one: both are approximate.
            return HNSWIndex(dim, cfg["metric"], cfg["M"], cfg["ef_construction"], cfg["dtype"],
                             seed=0, ef=cfg["ef"])
        return FlatIndex(dim, metric=cfg["metric"], dtype=cfg.get("dtype", "float32"))

    def add(self, chunk_ids: np.ndarray, texts: list, vectors: np.ndarray) -> None:
        if not len(chunk_ids):
            return
        if self.dense is None:
            self.dense = self._new_dense(vectors.shape[1])
        self.bm25.add(texts, ids=chunk_ids)
        self.dense.add(vectors, ids=chunk_ids)
        self.version += 1
        self._maybe_train_ivf()
        self.unsaved += len(chunk_ids)

    def remove(self, chunk_ids: np.ndarray) -> None:
        if not len(chunk_ids):
            return
        self.bm25.remove(chunk_ids)
        self.tombstones.update(int(i) for i in chunk_ids)
        self.unsaved += len(chunk_ids)
        if len(self.tombstones) > _MAX_TOMBSTONES:
            self.drop_tombstones()

    def drop_tombstones(self) -> None:
        if self.tombstones and self.dense is not None:
            self.dense.remove(np.fromiter(self.tombstones, dtype=np.int64))
            self.version += 1
        self.tombstones = set()

    def _ivf_config(self):
        cfg = self.settings["dense"]
        return cfg if cfg["kind"] == "ivf" else None

    def _maybe_train_ivf(self) -> None:
        """Moves the vectors into a trained IVF index once there are enough of them (a flat
        index serves until then)."""
        cfg = self._ivf_config()
        if cfg is None or not isinstance(self.dense, FlatIndex):
            return
        vectors, ids = self.dense.stored_vectors(), self.dense.ids
        if len(ids) < cfg["nlist"] * _IVF_TRAIN_PER_LIST:
            return
        ivf = IVFIndex(vectors.shape[1], cfg["nlist"], metric=cfg["metric"],
                       dtype=cfg.get("dtype", "float32"), seed=0)
        sample = vectors[np.random.default_rng(0).permutation(len(ids))[: cfg["nlist"] * 256]]
        ivf.train(sample)
        ivf.add(vectors, ids=ids)
        self.dense = ivf
        self._ivf_trained_at = len(ids)

    def ivf_drifted(self) -> bool:
        """Whether the IVF lists have drifted from their centroids' training: twice the
        vectors they were trained on, or one list holding over 4x the mean."""
        if not isinstance(self.dense, IVFIndex):
            return False
        sizes = self.dense.list_sizes()
        n = int(sizes.sum())
        return n >= 2 * max(self._ivf_trained_at, 1) or (n and sizes.max() > 4 * n / len(sizes))

    def retrain_ivf(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        cfg = self._ivf_config()
        self.dense = FlatIndex(vectors.shape[1], metric=cfg["metric"])
        if len(ids):
            self.dense.add(vectors, ids=ids)
        self._ivf_trained_at = 0
        self.version += 1
        self._maybe_train_ivf()

    # ---- search --------------------------------------------------------------

    def search_dense(self, vectors: np.ndarray, k: int, allow, conn) -> Hits:
        nq = len(vectors)
        if self.dense is None or len(self.dense) == 0 or (allow is not None and not len(allow)):
            return empty_hits(nq, k)
        # HNSWIndex chooses between its filtered walk and scoring the allowed vectors
        # exactly itself (a measured threshold), from vectors in memory, not the database.
        if allow is not None and len(allow) <= _EXACT_ALLOW_MAX and \
                not isinstance(self.dense, HNSWIndex):
            return self._exact_dense(vectors, k, allow, conn)
        options = {}
        if isinstance(self.dense, IVFIndex):
            options["nprobe"] = min(self.settings["dense"]["nprobe"], self.dense.nlist)
        elif isinstance(self.dense, HNSWIndex):
            options["ef"] = self.settings["dense"]["ef"]
        if allow is not None:  # the allow-set comes from the database: no tombstone in it
            return self.dense.search(vectors, k, allow=allow, **options)
        fetch = min(k + len(self.tombstones), len(self.dense))
        hits = self.dense.search(vectors, fetch, **options)
        return _without(hits, self.tombstones, k)

    def _exact_dense(self, vectors, k, allow, conn) -> Hits:
        """Scores the allowed chunks alone, with the flat kernel."""
        if isinstance(self.dense, FlatIndex) and self.dense.dtype == "float32":
            stored, ids = self.dense.stored_arrays()[:2]
            version, order, ordered_ids = self._order_cache
            if version != self.version or len(ordered_ids) != len(ids):
                order = np.argsort(ids, kind="stable")
                ordered_ids = ids[order]
                self._order_cache = (self.version, order, ordered_ids)
            at = np.searchsorted(ordered_ids, allow)
            if len(allow) and (at.max() >= len(ordered_ids) or
                               not np.array_equal(ordered_ids[at], allow)):
                # the indexes hold the snapshot's chunks (the search caught them up)
                raise store.damaged(conn.path, "a filter allows chunk ids the dense index "
                                               "lacks (verify() says which part is damaged)")
            subset = stored[order[at]]
        else:
            subset = store.chunk_vectors(conn, allow, vectors.shape[1])
        exact = FlatIndex(vectors.shape[1], metric=self.settings["dense"]["metric"])
        exact.add(subset, ids=allow)
        return exact.search(vectors, k)

    def search_sparse(self, queries: list, k: int, allow) -> Hits:
        if len(self.bm25) == 0 or (allow is not None and not len(allow)):
            return empty_hits(len(queries), k)
        return self.bm25.search(queries, k, allow=allow)

    # ---- files ---------------------------------------------------------------

    def save(self, directory: str, change: int, embeddings_change: int) -> None:
        """Writes both files stamped with change, then the manifest; removes older files.
        embeddings_change: the database's (see store.embeddings_change)."""
        dense_name, bm25_name = f"dense-{change}.rci", f"bm25-{change}.rci"
        written = {"format_version": store.FORMAT_VERSION, "change": change,
                   "bm25": bm25_name, "dense": None, "ivf_trained_at": self._ivf_trained_at,
                   "embeddings_change": embeddings_change}
        if self.dense is not None:
            self.drop_tombstones()
            self.dense.save(os.path.join(directory, dense_name))
            written["dense"] = dense_name
            written["dense_ids"] = ids_digest(self.dense.ids)
        self.bm25.save(os.path.join(directory, bm25_name))
        written["bm25_ids"] = ids_digest(self.bm25.ids)
        written["chunks"] = manifest.ids_summary(self.bm25.ids)  # BM25 holds every live chunk
        write_atomic(os.path.join(directory, MANIFEST), json.dumps(written).encode())
        keep = {MANIFEST, dense_name, bm25_name}
        for name in os.listdir(directory):
            if name.endswith(".rci") and name not in keep or name.startswith(".ragcore-"):
                try:
                    os.unlink(os.path.join(directory, name))
                except FileNotFoundError:
                    pass
        self.change = change
        self.unsaved = 0

    @classmethod
    def load(cls, directory: str, settings: dict, conn, dim) -> tuple[Indexes, bool]:
        """The indexes as of the database that conn reads; and whether the files had to
        be repaired (missing, damaged, older than the database, or holding other chunks
        than it)."""
        idx = cls(settings)
        recorded = manifest.read(directory, store.FORMAT_VERSION)
        repaired = recorded is None
        if recorded is not None:
            idx.change = recorded["change"]
            idx._ivf_trained_at = recorded.get("ivf_trained_at", 0)
            try:
                idx.bm25 = BM25Index.load(os.path.join(directory, recorded["bm25"]))
                _check_ids(idx.bm25.ids, recorded.get("bm25_ids"))
            except (OSError, IndexFileError):
                idx.bm25, repaired = BM25Index(**settings["bm25"]), True
            # A manifest without the key predates re-embedding: its vectors are the first.
            stale = recorded.get("embeddings_change", 0) != store.embeddings_change(conn)
            if stale:
                idx._ivf_trained_at, repaired = 0, True
            elif recorded.get("dense"):
                idx.dense = _load_dense(os.path.join(directory, recorded["dense"]),
                                        settings["dense"]["kind"], recorded.get("dense_ids"), dim)
                repaired |= idx.dense is None
        change = store.change_number(conn)
        # Files stamped with the database's change number reflect it, unless its chunks
        # were changed without it: then their ids differ from those the files hold (no
        # dense file holds none).
        if not repaired and idx.change == change:
            repaired = _chunks_changed(conn, recorded, idx.dense is not None)
        if repaired or idx.change != change:
            idx.catch_up(conn, dim)
            repaired = True
        idx.change = change
        return idx, repaired

    def drop_dense(self) -> None:
        """Forgets the dense index (its vectors were replaced); catch_up rebuilds it."""
        self.dense, self.tombstones, self._ivf_trained_at = None, set(), 0
        self.version += 1

    def disagreements(self, live: np.ndarray) -> list[str]:
        """How the indexes differ from the database's chunk ids live; empty when they agree."""
        dense = np.empty(0, np.int64) if self.dense is None else \
            np.setdiff1d(self.dense.ids, np.fromiter(self.tombstones, np.int64))
        out = []
        for name, ids in (("BM25", np.asarray(self.bm25.ids)), ("dense", dense)):
            lacks, extra = np.setdiff1d(live, ids), np.setdiff1d(ids, live)
            if len(lacks):
                out.append(f"the {name} index lacks {len(lacks)} chunks of the database")
            if len(extra):
                out.append(f"the {name} index holds {len(extra)} chunks the database lacks")
        return out

    def catch_up(self, conn, dim) -> bool:
        """Brings both indexes to the chunks of the database (in conn's snapshot), by the
        difference of ids; returns whether anything changed."""
        live = store.live_chunk_ids(conn)
        bm25_ids = np.sort(self.bm25.ids)
        dense_ids = np.sort(self.dense.ids) if self.dense is not None else np.empty(0, np.int64)
        if self.dense is not None and dim is not None and self.dense.dim != dim:
            self.dense, dense_ids = None, np.empty(0, np.int64)
        changed = False
        gone = np.setdiff1d(bm25_ids, live, assume_unique=True)
        if len(gone):
            self.bm25.remove(gone)
            changed = True
        gone = np.setdiff1d(dense_ids, live, assume_unique=True)
        gone = gone[~np.isin(gone, np.fromiter(self.tombstones, np.int64))]
        if len(gone):
            self.dense.remove(gone)
            self.version += 1
            changed = True
        need_bm25 = np.setdiff1d(live, bm25_ids, assume_unique=True)
        need_dense = np.setdiff1d(live, dense_ids, assume_unique=True)
        if len(need_bm25) or len(need_dense):
            first = int(min(need_bm25.min(initial=2**62), need_dense.min(initial=2**62)))
            ids, texts, vectors = store.all_chunks(conn, dim, with_vectors=len(need_dense) > 0,
                                                   after=first - 1)
            take = np.isin(ids, need_bm25)
            if take.any():
                self.bm25.add([t for t, keep in zip(texts, take) if keep], ids=ids[take])
            take = np.isin(ids, need_dense)
            if take.any():
                if self.dense is None:
                    self.dense = self._new_dense(dim)
                self.dense.add(vectors[take], ids=ids[take])
                self.version += 1
                self._maybe_train_ivf()
            changed = True
        return changed


def _load_dense(path: str, kind: str, recorded_ids, dim):
    """The dense index in path, or None when it is missing, damaged, of a kind the
    collection's setting does not take, of another dimension than the stored vectors, or
    holding other chunks than the manifest recorded."""
    try:
        file_kind = _peek_kind(path)
        if file_kind not in _FILE_KINDS[kind]:
            raise IndexFileError(f"a {file_kind} file for a {kind} collection")
        dense = _LOADERS[file_kind](path)
        _check_ids(dense.ids, recorded_ids)
    except (OSError, IndexFileError, ValueError):
        return None
    return dense if dim is not None and dense.dim == dim else None


def _chunks_changed(conn, recorded: dict, has_dense: bool) -> bool:
    """Whether the database's chunk ids differ from those the manifest recorded: by the
    summary SQL computes where the manifest has one, else by the digest of every id."""
    if recorded.get("chunks") is not None:
        count = recorded["chunks"][0]
        return store.chunk_ids_summary(conn) != recorded["chunks"] or (count and not has_dense)
    live = manifest.ids_digest(store.live_chunk_ids(conn))
    dense = recorded.get("dense_ids") if has_dense else manifest.ids_digest(np.empty(0, np.int64))
    return any(d is not None and d != live for d in (recorded.get("bm25_ids"), dense))


def _check_ids(ids, recorded) -> None:
    """Raises IndexFileError when the loaded index's ids are not those the manifest recorded
    (manifests written before the digest existed record none: nothing to compare)."""
    if recorded is not None and manifest.ids_digest(ids) != recorded:
        raise IndexFileError("the index file holds other chunks than the manifest recorded")


def _peek_kind(path: str) -> str:
    """The kind named in an index file's header (read_index checks the rest)."""
    import struct

    with open(path, "rb") as f:
        prefix = f.read(16)
        if len(prefix) < 16:
            raise IndexFileError(f"{path}: truncated")
        _, _, header_len = struct.unpack("<8sII", prefix)
        if header_len > 1 << 24:
            raise IndexFileError(f"{path}: header too long")
        try:
            header = json.loads(f.read(header_len))
        except ValueError:
            raise IndexFileError(f"{path}: damaged header") from None
        if not isinstance(header, dict):
            raise IndexFileError(f"{path}: damaged header")
        return header.get("kind", "")


def empty_hits(nq: int, k: int) -> Hits:
    return Hits(np.full((nq, k), -np.inf, dtype=np.float32), np.full((nq, k), PADDING_ID, np.int64))


def _without(hits: Hits, dead: set, k: int) -> Hits:
    """The first k hits of each row that are not tombstones."""
    if not dead:
        return _padded(hits, k)
    keep = ~np.isin(hits.ids, np.fromiter(dead, np.int64)) & (hits.ids != PADDING_ID)
    out = empty_hits(len(hits.ids), k)
    for row in range(len(hits.ids)):
        ids, scores = hits.ids[row][keep[row]][:k], hits.scores[row][keep[row]][:k]
        out.ids[row, : len(ids)], out.scores[row, : len(ids)] = ids, scores
    return out


def _padded(hits: Hits, k: int) -> Hits:
    out = empty_hits(len(hits.ids), k)
    width = min(k, hits.ids.shape[1])
    out.ids[:, :width], out.scores[:, :width] = hits.ids[:, :width], hits.scores[:, :width]
    return out
