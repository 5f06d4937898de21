"""Collection: a persistent, incremental, filtered hybrid store.

A collection is a directory holding a SQLite database (documents, chunks, metadata, the
chunk embeddings: the source of truth; see _store) and the dense and BM25 index files it
keeps current (see _indexes). Documents are chunked, embedded once per distinct chunk text
(sha256 of the text), and searchable as soon as ``add`` returns; a deleted document never
appears again. Metadata filters (see _filters) are evaluated by SQLite into the chunk ids
they allow, which go into the native scans.

One writer at a time (across processes: a file lock); any number of readers, in threads
of the writer's process or in other processes (``open(path, readonly=True)``), each
search reading one consistent snapshot.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import uuid
from dataclasses import dataclass

import numpy as np

from ..._util.arrays import check_choice, check_positive_int
from ...errors import CollectionCorruptError, CollectionError
from ...hits import PADDING_ID, Hits
from . import store
from . import checks
from . import database_checks
from . import fingerprint
from ..defaults import DEFAULT_FUSION, DEFAULT_K0
from .allow_cache import AllowCache
from ...sparse.statistics import BM25Statistics
from .indexes import Indexes, empty_hits
from .locking import ReadWriteLock, WriterLock

MODES = ("hybrid", "dense", "sparse")
FUSIONS = ("rrf", "wsum", "combsum", "combmnz")
STAGES = ("filter", "encode", "dense", "sparse", "fuse", "rerank", "fetch")
_AUTOSAVE_MIN = 1000      # index files are rewritten once this many chunks changed ...
_AUTOSAVE_FRACTION = 0.1  # ... and at least this fraction of the collection

__all__ = ["Collection", "Document", "Match", "SearchResults", "fusion_function", "rerank_hits"]


@dataclass(frozen=True)
class Document:
    id: object
    text: str
    metadata: dict


@dataclass(frozen=True)
class Match:
    """One search result: a chunk of a document, with text == document text[start:end]."""

    id: object        # the document's id
    chunk_id: int
    position: int     # the chunk's index within its document
    start: int
    end: int
    text: str
    score: float
    metadata: dict


class SearchResults(list):
    """The matches of one query, best first, with the batch's per-stage timings (seconds)."""

    def __init__(self, matches, timings: dict, hits: Hits):
        super().__init__(matches)
        self.timings = timings
        self.hits = hits  # chunk ids and scores, as the retrievers returned them


class Collection:
    """A directory of documents searchable by dense, BM25 and hybrid retrieval.

    Use ``Collection.create(path, ...)`` or ``Collection.open(path)``; close it (or use
    ``with``) to release the writer lock and write the index files.
    """

    def __init__(self, path, settings, conn, readonly, encoder, chunker, writer_lock):
        self.path = path
        self.readonly = readonly
        self._settings = settings
        self._conn = conn
        self._encoder = encoder
        self._chunker = chunker
        self._chunker_given = chunker is not None  # else made from the encoder's tokenizer
        self._writer_lock = writer_lock
        self._write_mutex = threading.Lock()
        self._rw = ReadWriteLock()
        self._local = threading.local()
        self._fields = store.read_fields(conn)
        self._fingerprint = store.read_fingerprint(conn)  # None: not recorded yet
        self._embeddings_change = store.embeddings_change(conn)
        self._allow_cache = AllowCache()
        self._closed = False
        self.indexes, self.repaired = Indexes.load(path, settings, conn, settings.get("dim"))
        if self.repaired and not readonly:
            self._save()

    # ---- create / open ---------------------------------------------------------

    @classmethod
    def create(cls, path, encoder=None, chunker=None, dense="flat", bm25=None,
               metadata_schema=None) -> Collection:
        """Creates a collection in a new (or empty) directory.

        encoder: anything with ``encode(list of str) -> float32 [n, dim]`` (a BiEncoder);
            None: the bundled all-MiniLM-L6-v2 (int8), loaded when first needed. Its
            fingerprint (see fingerprint: model file and checksum, or class name; dimension;
            normalisation) is recorded, the bundled one's at the first add that loads it.
        chunker: a ragcore Chunker, None (a Chunker with its defaults: 200 tokens,
            overlap 40) or "none" (each document is one chunk).
        dense: "flat" (exact), "ivf", "hnsw", or a dict of options ({"kind": "ivf",
            "nlist": 256, "nprobe": 32, "dtype": "float32"}, {"kind": "flat", "dtype":
            "float16"}, {"kind": "hnsw", "M": 16, "ef_construction": 200, "ef": 64, "dtype":
            "float32" | "float16" | "bfloat16" | "int8"}). "hnsw" is approximate; it applies a
            filter inside the graph walk, or scores the allowed chunks exactly when they
            are few (HNSWIndex's threshold); the other kinds score a filter allowing at
            most 4,096 chunks exactly.
        bm25: BM25Index options (k1, b, variant, stopwords, ...).
        metadata_schema: {field: "str" | "int" | "float" | "bool"}: fields indexed in
            SQLite and whose values are type-checked; other fields may still be used.
        """
        path = os.fspath(path)
        settings = {"encoder": "bundled" if encoder is None else checks.describe(encoder),
                    "chunker": checks.chunker_settings(chunker),
                    "dense": checks.dense_settings(dense), "bm25": checks.bm25_settings(bm25),
                    "dim": None, "id_type": None, "schema": checks.check_schema(metadata_schema)}
        checks.prepare_directory(path)
        db = os.path.join(path, store.DB_NAME)
        lock = WriterLock(path)
        try:
            conn = store.connect(db, readonly=False)
            store.create_schema(conn, settings, settings["schema"],
                                None if encoder is None else fingerprint.of(encoder))
        except BaseException:
            lock.release()
            if os.path.exists(db):
                os.unlink(db)
            raise
        return cls(path, settings, conn, False, encoder, chunker, lock)

    @classmethod
    def open(cls, path, readonly: bool = False, encoder=None, chunker=None) -> Collection:
        """Opens an existing collection; index files that are missing, damaged or older
        than the database are repaired from the stored embeddings (nothing re-encoded).

        readonly: search only, without the writer lock (other processes may write); each
            search first catches up with what writers committed.
        encoder, chunker: needed again only when the collection was created with a custom
            encoder (for dense queries and adds) or chunker (for adds). An encoder other
            than the one that made the stored vectors (another model file, dimension or
            normalisation: see fingerprint) is refused, naming both; to change models,
            open without it and call reembed(encoder). A collection that has no recorded
            fingerprint (written by a ragcore that did not record one) accepts any encoder
            of its dimension and records the encoder of its first add.

        A damaged database raises CollectionCorruptError, here or at the first read that
        meets the damage; open does not read every page (verify() does).
        """
        path = os.fspath(path)
        db = os.path.join(path, store.DB_NAME)
        if not os.path.isdir(path):
            raise CollectionError(f"{path}: no such directory; create the collection first "
                                  "(Collection.create)")
        if not os.path.isfile(db):
            raise CollectionError(f"{path}: not a ragcore collection (no {store.DB_NAME})")
        if not readonly and not os.access(path, os.W_OK):
            raise PermissionError(f"{path}: no write permission; open it with readonly=True")
        lock, conn = None if readonly else WriterLock(path), None
        try:
            conn = store.connect(db, readonly=readonly)
            meta = store.collection_meta(conn, path)
            settings = store.stored(db, json.loads, meta["settings"])
            version = store.stored(db, int, meta["format_version"])
            if version > store.FORMAT_VERSION:
                raise CollectionError(
                    f"{path}: written by a newer ragcore (collection format {version}; this "
                    f"version reads up to {store.FORMAT_VERSION}); upgrade ragcore")
            if version < 1 or meta["format_version"] != str(version):
                raise store.damaged(db, f"the format version is {meta['format_version']!r}")
            database_checks.check_schema(conn, db)
            settings = database_checks.check_meta(conn, db, meta, settings)
            settings["dim"] = store.stored(db, int, meta["dim"]) if "dim" in meta else None
            settings["id_type"] = meta.get("id_type")
            if encoder is not None:
                _refuse_other_encoder(path, store.read_fingerprint(conn), encoder,
                                      settings["dim"], "encoder")
            return cls(path, settings, conn, readonly, encoder, chunker, lock)
        except BaseException:
            if conn is not None:
                conn.close()
            if lock is not None:
                lock.release()
            raise

    def close(self) -> None:
        """Writes the index files (if anything changed) and releases the writer lock."""
        if self._closed:
            return
        with self._write_mutex:
            if not self.readonly and self.indexes.unsaved:
                self._save()
            self._closed = True
            self._conn.close()
            local = getattr(self._local, "conn", None)  # this thread's reader (others end with it)
            if local is not None:
                local.close()
                self._local.conn = None
            if self._writer_lock is not None:
                self._writer_lock.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self) -> str:
        mode = "readonly" if self.readonly else "writer"
        return f"Collection({self.path!r}, {mode}, documents={len(self)})"

    # ---- reading ---------------------------------------------------------------

    def __len__(self) -> int:
        return self.count()

    def count(self, filter=None) -> int:
        """Documents (matching filter, if given)."""
        self._check_open()
        with self._snapshot() as conn:
            return store.count_documents(conn, filter, self._fields_now(conn))

    def ids(self, filter=None) -> list:
        """Every document id (matching filter, if given), in the order they were added."""
        self._check_open()
        with self._snapshot() as conn:
            ids = store.document_ids(conn, filter, self._fields_now(conn))
            db, id_type = conn.path, self._settings["id_type"]
        return [database_checks.check_user_id(db, i, id_type) for i in ids]

    def get(self, ids) -> list[Document]:
        """The documents with these ids that exist, in the order asked."""
        self._check_open()
        ids = self._check_ids(ids, "ids", allow_new_type=True)
        with self._snapshot() as conn:
            found = store.get_documents(conn, ids)
            db, id_type = conn.path, self._settings["id_type"]
        for i in found:
            database_checks.check_user_id(db, i, id_type)
        return [Document(i, *found[i]) for i in ids if i in found]

    # ---- writing ---------------------------------------------------------------

    def add(self, texts, ids=None, metadata=None, embeddings=None) -> list:
        """Adds documents (chunked, embedded, indexed in both indexes); returns their ids.

        texts: a list of str. ids: one per text, all int or all str, new and distinct
        (default: random uuid strings). metadata: one JSON-serialisable dict per text.
        embeddings: float32 [len(texts), dim] computed elsewhere (only with chunker="none":
        one chunk per document), stored instead of encoding.
        Nothing is written if any argument is bad or any id exists (use upsert).
        """
        return self._write(texts, ids, metadata, embeddings, replace=False)

    def upsert(self, texts, ids, metadata=None, embeddings=None) -> list:
        """Adds documents, replacing (chunks, embeddings, metadata) those whose id exists."""
        if ids is None:
            raise CollectionError("upsert needs ids (the documents to replace or add)")
        return self._write(texts, ids, metadata, embeddings, replace=True)

    def check_write(self, texts, ids, metadata=None, embeddings=None) -> list:
        """Runs the checks of add/upsert (texts, ids, metadata, embeddings, chunking) without
        writing; raises what they would raise and returns the ids that already exist (add
        refuses them). Failures of the encoder itself cannot be foreseen."""
        self._check_writable()
        texts = checks.check_texts(texts)
        self._check_metadata(metadata, len(texts))
        self._check_embeddings(embeddings, len(texts))
        ids = self._check_ids(ids, "ids")
        if len(ids) != len(texts):
            raise CollectionError(f"ids has {len(ids)} entries for {len(texts)} texts")
        checks.refuse("texts", [(False, f"texts[{i}] gave no chunks (is it only punctuation?)")
                                for i, text in enumerate(texts) if not self._chunk(text)],
                      len(texts))
        with self._write_mutex:
            return store.existing_ids(self._conn, ids)

    def delete(self, ids, missing_ok: bool = False) -> int:
        """Deletes documents by id; returns how many were deleted. Unknown ids are a
        CollectionError naming them (nothing deleted) unless missing_ok, which skips them."""
        self._check_writable()
        ids = self._check_ids(ids, "ids", allow_new_type=True)
        if not ids:
            return 0
        with self._write_mutex:
            conn = self._conn
            found = set(store.existing_ids(conn, ids))
            unknown = [i for i in ids if i not in found]
            if unknown and not missing_ok:
                raise CollectionError(
                    f"delete: {len(unknown)} of the ids are not in the collection: "
                    f"{checks.listing(unknown)}; nothing deleted. Pass only existing ids, or "
                    "missing_ok=True to delete the others and skip these")
            present = [i for i in ids if i in found]
            if not present:
                return 0
            with self._rw.write():
                with store.transaction(conn):
                    dead = store.delete_documents(conn, present)
                    change = store.bump_change(conn)
                self._apply(lambda: self.indexes.remove(dead), change)
            self._maybe_save()
            return len(present)

    def flush(self) -> None:
        """Writes the index files now (open() then has nothing to catch up)."""
        self._check_writable()
        with self._write_mutex:
            self._save()

    def compact(self) -> None:
        """Drops tombstones from the dense index, retrains the IVF lists when they drifted,
        deletes embeddings no chunk uses, checkpoints the database and writes the files."""
        self._check_writable()
        with self._write_mutex:
            conn = self._conn
            with self._rw.write():
                self.indexes.drop_tombstones()
                if self.indexes.ivf_drifted():
                    ids, _, vectors = store.all_chunks(conn, self._settings["dim"], True)
                    self.indexes.retrain_ivf(vectors, ids)
            with store.transaction(conn):
                store.prune_embeddings(conn)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._save()

    def rebuild(self) -> None:
        """Rebuilds both indexes from the database (stored embeddings; nothing encoded)."""
        self._check_writable()
        with self._write_mutex, self._rw.write():
            fresh = Indexes(self._settings)
            fresh.catch_up(self._conn, self._settings["dim"])
            fresh.change = store.change_number(self._conn)
            self.indexes = fresh
            self._save()

    def reembed(self, encoder, show_progress: bool | None = None, batch_size: int = 256) -> int:
        """Encodes every chunk again with encoder, which becomes the collection's: its
        vectors (of any dimension), its fingerprint and the dense index are replaced; the
        chunks stay as they are. Returns how many distinct chunk texts were encoded.

        All or nothing: every chunk is encoded first, then the vectors and the fingerprint
        are committed in one transaction, so an error or a crash before the commit leaves
        the collection as it was (a crash after it: open rebuilds the dense index from the
        new vectors). Searches go on meanwhile, on the old vectors.

        show_progress: a progress bar on stderr: True, False, or None (when stderr is a
            terminal). batch_size: chunk texts per encode call.
        """
        self._check_writable()
        checks.describe(encoder)
        batch_size = check_positive_int(batch_size, "batch_size")
        with self._write_mutex:
            conn = self._conn
            vectors, dim = self._encode_every_chunk(conn, encoder, show_progress, batch_size)
            fp = fingerprint.with_dim(fingerprint.of(encoder), dim)
            settings = {**self._settings, "encoder": checks.describe(encoder)}
            with self._rw.write():
                with store.transaction(conn):
                    change = store.bump_change(conn)
                    store.replace_embeddings(conn, vectors, change)
                    if dim is None:
                        store.delete_meta(conn, "dim")
                    else:
                        store.set_meta(conn, "dim", str(dim))
                    store.write_fingerprint(conn, fp)
                    # as create wrote them: the meta table holds dim and id_type
                    store.write_settings(conn, {**settings, "dim": None, "id_type": None})
                # Committed: from here on the collection is the new model's.
                self._settings.update(encoder=settings["encoder"], dim=dim)
                self._fingerprint, self._encoder = fp, encoder
                self._embeddings_change = change
                if not self._chunker_given:  # new adds count the new model's tokens
                    self._chunker = None

                def rebuild_dense():
                    self.indexes.drop_dense()
                    self.indexes.catch_up(conn, dim)

                self._apply(rebuild_dense, change)
            self._save()
        return len(vectors)

    def _encode_every_chunk(self, conn, encoder, show_progress, batch_size):
        """(hash -> float32 bytes of every distinct chunk text encoded by encoder, their
        dimension: the encoder's declared one when there is no chunk)."""
        from ..._util.progress import Progress

        vectors, dim = {}, fingerprint.declared_dim(encoder)
        with store.transaction(conn, write=False):
            progress = Progress(store.count_chunk_texts(conn), "re-embedding", show_progress)
            try:
                for rows in store.chunk_texts_by_hash(conn, batch_size):
                    x = _encoded(encoder, [r[1] for r in rows], dim)
                    dim = x.shape[1]
                    vectors.update((r[0], v.tobytes()) for r, v in zip(rows, x))
                    progress.update(len(vectors))
            finally:
                progress.close()
        return vectors, dim

    def verify(self) -> None:
        """Checks the whole collection: the database (SQLite's integrity_check, and a stored
        embedding for every chunk), then that the indexes hold exactly its chunks. Raises
        CollectionCorruptError saying what is wrong and what to do. Reads every page of the
        database: for a large collection it takes a while."""
        self._check_open()
        db = os.path.join(self.path, store.DB_NAME)
        with self._snapshot() as conn, self._search_lock(conn):
            problems = store.integrity_problems(conn, self._settings["dim"])
            if problems:
                raise CollectionCorruptError(store.damage_message(
                    db, f"the collection's database is damaged: {checks.listing(problems)}"))
            problems = self.indexes.disagreements(store.live_chunk_ids(conn))
        if problems:
            raise CollectionCorruptError(
                f"{self.path}: the indexes disagree with the database, which is sound: "
                f"{'; '.join(problems)}; rebuild() remakes them from the database"
                + ("" if not self.readonly else " (open the collection for writing first)"))

    # ---- search ----------------------------------------------------------------

    def search(self, query, k: int = 10, mode: str = "hybrid", filter=None, fusion=None,
               rerank=None, k0: int = DEFAULT_K0, by: str = "chunk", query_vector=None):
        """Searches one query (a str: returns SearchResults) or a list of queries (a list
        of SearchResults, one per query).

        mode: "hybrid" (dense and BM25, k0 candidates each, fused), "dense" or "sparse".
        filter: a metadata filter (see ragcore.rag.collection.filters); applied inside the scans,
            so k results come back whenever k chunks match.
        fusion: None (rag.defaults.DEFAULT_FUSION: convex, z-scores, 0.7 on dense, the
            package's one default, also HybridRetriever's), "rrf" (r0 = 60), "wsum",
            "combsum", "combmnz", a dict of ragcore.rag.fusion.combine
            options ({"method": "wsum", "norm": "zscore", "weights": [0.7, 0.3]}), or a
            function (list of Hits, k) -> Hits (e.g. one of ragcore.rag.fusion's), or a
            ragcore.rag.fusion.FusionSetting (what fusion.tune chooses).
        rerank: None, or anything with ``score(query, passages) -> scores`` (a
            CrossEncoder); it reorders the k0 fused candidates.
        by: "chunk" (each match a chunk) or "document" (each document once, its best chunk).
        query_vector: the queries' vectors ([dim] or [nq, dim]) when computed elsewhere
            (the dense side then encodes nothing).
        """
        self._check_open()
        single = isinstance(query, str)
        queries = [query] if single else checks.check_queries(query)
        mode = check_choice(mode, "mode", MODES)
        timings = dict.fromkeys(STAGES, 0.0)
        vectors = None
        if query_vector is not None and mode != "sparse":
            vectors = self._query_vectors(query_vector, len(queries))
        elif mode != "sparse" and self._settings["dim"] is not None:
            t = time.perf_counter()
            vectors = self._encode(queries, warn=False, queries=True)
            timings["encode"] = time.perf_counter() - t
        results = self._search(queries, vectors, k, mode, filter, fusion, rerank, k0, by, timings)
        return results[0] if single else results

    def search_by_vector(self, vectors, k: int = 10, filter=None, by: str = "chunk"):
        """Dense search with query vectors already computed: one vector (1-D: returns
        SearchResults) or a matrix [nq, dim] (a list of SearchResults)."""
        self._check_open()
        single = np.ndim(vectors) == 1
        nq = 1 if single else len(vectors)
        vectors = self._query_vectors(vectors, nq)
        results = self._search([""] * nq, vectors, k, "dense", filter, "rrf", None, k, by,
                               dict.fromkeys(STAGES, 0.0))
        return results[0] if single else results

    # ---- the first stage alone (what a sharded collection merges across shards) -----

    @property
    def change(self) -> int:
        """The change number: every committed add, upsert or delete raises it by one."""
        self._check_open()
        with self._snapshot() as conn:
            return store.change_number(conn)

    def bm25_statistics(self, queries) -> BM25Statistics:
        """This collection's part of the global BM25 statistics of queries (a list of str):
        its chunks (BM25's documents), their total length, the query terms' frequencies."""
        self._check_open()
        queries = checks.check_queries(queries)
        with self._snapshot() as conn, self._search_lock(conn):
            return self.indexes.bm25.statistics(queries)

    def candidates(self, queries, k: int, modality: str, filter=None, query_vector=None,
                   statistics: BM25Statistics | None = None,
                   decode_metadata: bool = True) -> tuple[Hits, dict]:
        """One retriever's top k chunks of each query (a list of str), before fusion, and
        the rows of those chunks: chunk id -> (document id, position, start, end, text,
        metadata dict), both read from one snapshot.

        modality: "dense" (query_vector [nq, dim] given, or the queries encoded) or "sparse"
        (BM25; with ``statistics``, scored under them: see BM25Index.search).
        decode_metadata: False leaves each row's metadata as its stored JSON text (for a
        caller that decodes only the rows it keeps)."""
        self._check_open()
        queries = checks.check_queries(queries)
        modality = check_choice(modality, "modality", ("dense", "sparse"))
        k = check_positive_int(k, "k")
        vectors = None
        if modality == "dense" and self._settings["dim"] is not None:
            vectors = (self._query_vectors(query_vector, len(queries)) if query_vector is not None
                       else self._encode(queries, warn=False, queries=True))
        with self._snapshot() as conn, self._search_lock(conn):
            allow = None if filter is None else self._allowed(conn, filter)
            if modality == "sparse":
                if statistics is not None and len(self.indexes.bm25) and \
                        (allow is None or len(allow)):
                    hits = self.indexes.bm25.search(queries, k, allow=allow, statistics=statistics)
                else:
                    hits = self.indexes.search_sparse(queries, k, allow)
            elif vectors is None:
                hits = empty_hits(len(queries), k)
            else:
                hits = self.indexes.search_dense(vectors, k, allow, conn)
            rows = self._fetch_chunks(conn, hits)
        if not decode_metadata:
            return hits, rows
        db = os.path.join(self.path, store.DB_NAME)
        return hits, {c: row[:5] + (store.stored_metadata(db, row[5]),)
                      for c, row in rows.items()}

    def _query_vectors(self, vectors, nq: int):
        """float32 [nq, dim] query vectors, or None while the collection has no vectors."""
        from ..._util.arrays import as_float_matrix

        dim = self._settings["dim"]
        if dim is None:
            return None
        x = np.ascontiguousarray(as_float_matrix(vectors, "query_vector", dim), dtype=np.float32)
        if len(x) != nq:
            raise CollectionError(f"query_vector has {len(x)} rows for {nq} queries")
        return x

    def _search(self, queries, vectors, k, mode, filter, fusion, rerank, k0, by, timings):
        k = check_positive_int(k, "k")
        k0 = max(check_positive_int(k0, "k0"), k)
        by = check_choice(by, "by", ("chunk", "document"))
        fuse = fusion_function(fusion)
        with self._snapshot() as conn, self._search_lock(conn):
            allow = None
            if filter is not None:
                t = time.perf_counter()
                allow = self._allowed(conn, filter)
                timings["filter"] = time.perf_counter() - t
            width = k0 if (mode == "hybrid" or rerank is not None or by == "document") else k
            lists = []
            if mode != "sparse":
                t = time.perf_counter()
                if vectors is None:
                    lists.append(empty_hits(len(queries), width))
                else:
                    lists.append(self.indexes.search_dense(vectors, width, allow, conn))
                timings["dense"] = time.perf_counter() - t
            if mode != "dense":
                t = time.perf_counter()
                lists.append(self.indexes.search_sparse(queries, width, allow))
                timings["sparse"] = time.perf_counter() - t
            t = time.perf_counter()
            hits = fuse(lists, width) if len(lists) > 1 else lists[0]
            timings["fuse"] = time.perf_counter() - t
            t = time.perf_counter()
            rows = self._fetch_chunks(conn, hits)
            timings["fetch"] = time.perf_counter() - t
        if rerank is not None:
            t = time.perf_counter()
            hits = rerank_hits(rerank, queries, hits, rows)
            timings["rerank"] = time.perf_counter() - t
        db = os.path.join(self.path, store.DB_NAME)
        return [SearchResults(_matches(hits, r, rows, k, by, db), timings, _row(hits, r))
                for r in range(len(queries))]

    def _fetch_chunks(self, conn, hits: Hits) -> dict:
        """The rows of the chunks in hits, each with a document id of the collection's id
        type. The indexes hold exactly the chunks of the snapshot conn reads (the search holds
        the lock that writes take to change both), so a chunk the database does not return
        is damage, not a race."""
        wanted = np.unique(hits.ids[hits.ids != PADDING_ID])
        rows = store.chunks_by_ids(conn, wanted)
        if len(rows) < len(wanted):
            lost = [int(c) for c in wanted if int(c) not in rows]
            raise CollectionCorruptError(store.damage_message(
                os.path.join(self.path, store.DB_NAME),
                f"the indexes return chunks that the database lacks (chunk ids "
                f"{checks.listing(lost)}), so the database or the index files are damaged "
                "(verify() says which; if only the index files are, rebuild() remakes them)"))
        for row in rows.values():
            database_checks.check_user_id(conn.path, row[0], self._settings["id_type"])
        return rows

    # ---- internals ---------------------------------------------------------------

    def _write(self, texts, ids, metadata, embeddings, replace: bool) -> list:
        self._check_writable()
        texts = checks.check_texts(texts)
        metadata = self._check_metadata(metadata, len(texts))
        given = self._check_embeddings(embeddings, len(texts))
        with self._write_mutex:
            conn = self._conn
            if ids is None:
                ids = self._generated_ids(len(texts))
            ids = self._check_ids(ids, "ids")
            if len(ids) != len(texts):
                raise CollectionError(f"ids has {len(ids)} entries for {len(texts)} texts")
            existing = store.existing_ids(conn, ids)
            if existing and not replace:
                known = set(existing)
                raise CollectionError(
                    f"ids: {len(existing)} already in the collection: "
                    f"{checks.listing(i for i in ids if i in known)}; use upsert to replace "
                    "them (nothing was written)")
            chunked = [self._chunk(text) for text in texts]
            checks.refuse("texts", [(False, f"texts[{i}] gave no chunks (is it only punctuation?)")
                                    for i, doc in enumerate(chunked) if not doc], len(texts))
            hashes = [[store.content_hash(c[2]) for c in doc] for doc in chunked]
            if given is None:
                new_vectors = self._embed_missing(conn, chunked, hashes)
            else:
                new_vectors = {h[0]: v.tobytes() for h, v in zip(hashes, given)}
            dim = self._settings["dim"]
            with self._rw.write():
                with store.transaction(conn):
                    if dim is None and new_vectors:
                        dim = len(next(iter(new_vectors.values()))) // 4
                        store.set_meta(conn, "dim", str(dim))
                    if self._settings["id_type"] is None:
                        store.set_meta(conn, "id_type", type(ids[0]).__name__)
                    recorded = self._record_fingerprint(conn, dim)
                    dead = store.delete_documents(conn, existing) if existing else \
                        np.empty(0, np.int64)
                    conn.executemany("INSERT OR IGNORE INTO embeddings VALUES (?, ?)",
                                     list(new_vectors.items()))
                    fields = dict(self._fields)
                    store.record_fields(conn, fields, metadata)
                    chunk_ids = []
                    for uid, text, meta, doc, digests in zip(ids, texts, metadata, chunked, hashes):
                        chunk_ids += store.insert_document(
                            conn, uid, text, meta, [c + (h,) for c, h in zip(doc, digests)])
                    change = store.bump_change(conn)
                # Committed: from here on the write is acknowledged.
                self._fields = fields
                self._fingerprint = recorded
                self._settings["dim"] = dim
                self._settings["id_type"] = type(ids[0]).__name__
                chunk_ids = np.array(chunk_ids, dtype=np.int64)
                chunk_texts = [c[2] for doc in chunked for c in doc]
                vectors = store.chunk_vectors(conn, chunk_ids, dim)

                def apply():
                    self.indexes.remove(dead)
                    self.indexes.add(chunk_ids, chunk_texts, vectors)

                self._apply(apply, change)
            self._maybe_save()
        return ids

    def _record_fingerprint(self, conn, dim):
        """Inside a write's transaction: records the encoder's fingerprint where none is
        recorded yet, with the dimension of the vectors where the encoder did not declare
        one; returns the fingerprint now stored (None while no encoder is known)."""
        fp = self._fingerprint
        if fp is None and self._encoder is not None:
            fp = fingerprint.of(self._encoder)
        if fp is None:
            return None
        fp = fingerprint.with_dim(fp, dim)
        if fp != self._fingerprint:
            store.write_fingerprint(conn, fp)
        return fp

    def _apply(self, change_indexes, change: int) -> None:
        """Applies a committed change to the in-memory indexes; if that fails, they are
        rebuilt from the database instead (the change is already durable)."""
        try:
            change_indexes()
        except BaseException:
            fresh = Indexes(self._settings)
            fresh.catch_up(self._conn, self._settings["dim"])
            self.indexes = fresh
            raise
        finally:
            self.indexes.change = change

    @contextlib.contextmanager
    def _search_lock(self, conn):
        """The in-memory lock a search holds: shared; exclusive in a read-only collection
        whose indexes must first catch up with the snapshot conn reads."""
        if self.readonly and store.change_number(conn) != self.indexes.change:
            with self._rw.write():
                self._refresh(conn)
                yield
        else:
            with self._rw.read():
                yield

    def _refresh(self, conn) -> None:
        """Read-only: catches the indexes up with the snapshot conn reads."""
        change = store.change_number(conn)
        if change == self.indexes.change:
            return
        meta = store.collection_meta(conn, self.path)
        settings = database_checks.check_meta(  # as open checks them
            conn, conn.path, meta, store.stored(conn.path, json.loads, meta["settings"]))
        if "dim" in meta:  # set by the first add; changed by a re-embedding
            self._settings["dim"] = int(meta["dim"])
        self._settings["id_type"] = meta.get("id_type")
        self._fingerprint = store.read_fingerprint(conn)  # another process's first add sets it
        if store.embeddings_change(conn) != self._embeddings_change:
            self._follow_reembedding(conn, settings)
        self.indexes.catch_up(conn, self._settings["dim"])
        self.indexes.change = change

    def _follow_reembedding(self, conn, settings: dict) -> None:
        """Read-only: another process re-embedded the collection: the dense index is
        rebuilt from the new vectors, and an encoder of the old model is dropped, so a
        dense query asks for the new one instead of comparing vectors of two models."""
        self._embeddings_change = store.embeddings_change(conn)
        self._settings["encoder"] = settings["encoder"]
        self.indexes.drop_dense()
        if self._encoder is not None and self._fingerprint is not None and \
                fingerprint.differences(self._fingerprint, fingerprint.of(self._encoder)):
            self._encoder = None

    def _maybe_save(self) -> None:
        n = self.indexes.unsaved
        if n >= _AUTOSAVE_MIN and n >= _AUTOSAVE_FRACTION * len(self.indexes.bm25):
            self._save()

    def _save(self) -> None:
        # Called with the write mutex held: the indexes reflect the database's change number.
        self.indexes.save(self.path, store.change_number(self._conn),
                          store.embeddings_change(self._conn))

    def _snapshot(self):
        """A read transaction on this thread's connection: one consistent snapshot."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            db = os.path.join(self.path, store.DB_NAME)
            conn = self._local.conn = store.connect(db, readonly=True)
        return store.transaction(conn, write=False)

    def _allowed(self, conn, flt) -> np.ndarray:
        """The chunk ids flt allows in conn's snapshot (cached until the next change)."""
        key = AllowCache.key(flt, store.change_number(conn))
        allow = self._allow_cache.get(key)
        if allow is None:
            allow = store.filtered_chunk_ids(conn, flt, self._fields_now(conn))
            self._allow_cache.put(key, allow)
        return allow

    def _fields_now(self, conn) -> dict:
        return store.read_fields(conn) if self.readonly else self._fields

    def _embed_missing(self, conn, chunked, hashes) -> dict:
        """hash -> float32 bytes for the chunk texts whose embedding is not stored yet."""
        todo = {}
        flat_hashes = [h for doc in hashes for h in doc]
        known = store.known_hashes(conn, list(set(flat_hashes)))
        for doc, digests in zip(chunked, hashes):
            for chunk, digest in zip(doc, digests):
                if digest not in known and digest not in todo:
                    todo[digest] = chunk[2]
        if not todo:
            return {}
        vectors = self._encode(list(todo.values()))
        dim = self._settings["dim"]
        if vectors.ndim != 2 or len(vectors) != len(todo) or (dim is not None and vectors.shape[1] != dim):
            raise CollectionError(f"the encoder returned shape {vectors.shape} for {len(todo)} "
                                  f"texts; expected ({len(todo)}, {dim or 'dim'})")
        if not np.isfinite(vectors).all():
            raise CollectionError("the encoder returned NaN or infinite values")
        return {h: v.tobytes() for h, v in zip(todo, vectors)}

    def _encode(self, texts, warn: bool = True, queries: bool = False) -> np.ndarray:
        """Vectors of texts; queries go through the encoder's encode_queries if it has one
        (models that embed queries differently from passages)."""
        encoder = self._get_encoder()
        if queries and hasattr(encoder, "encode_queries"):
            vectors = encoder.encode_queries(texts)
        elif checks.is_bi_encoder(encoder):
            vectors = encoder.encode(texts, warn=warn)
        else:
            vectors = encoder.encode(texts)
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def _get_encoder(self):
        if self._encoder is None:
            if self._settings["encoder"] != "bundled":
                raise CollectionError(
                    f"this collection was created with the encoder {self._settings['encoder']}; "
                    "pass it again: Collection.open(path, encoder=...)")
            from ...encoders import default_encoder
            from ...encoders.defaults import bundled_precision

            # A collection made with another precision of the bundled model (an earlier
            # default, or another machine's "auto") keeps it; a new one takes the default.
            precision = bundled_precision(self._fingerprint)
            encoder = default_encoder() if precision is None else default_encoder(precision)
            # Which bundled model loads depends on the machine (a precision falls back
            # where it cannot be derived): it must be the one the vectors were made with.
            _refuse_other_encoder(self.path, self._fingerprint, encoder, self._settings["dim"],
                                  "the bundled encoder")
            self._encoder = encoder
        return self._encoder

    def _use_encoder(self, encoder, name: str = "encoder") -> None:
        """Makes encoder the collection's (an adapter's), refused as open refuses it."""
        checks.describe(encoder)
        _refuse_other_encoder(self.path, self._fingerprint, encoder, self._settings["dim"], name)
        self._encoder = encoder

    def _chunk(self, text: str) -> list[tuple]:
        cfg = self._settings["chunker"]
        if cfg == "none":
            return [(0, len(text), text)]
        if self._chunker is None:
            from ..chunking import Chunker

            tokenizer = self._encoder if checks.is_bi_encoder(self._encoder) else None
            try:  # the stored settings: create checked them against this tokenizer
                self._chunker = Chunker(tokenizer, cfg["chunk_size"], cfg["overlap"])
            except ValueError as err:
                raise store.damaged(os.path.join(self.path, store.DB_NAME),
                                    f"the stored chunker settings are refused: {err}") from None
        return [(c.start, c.end, c.text) for c in self._chunker.chunk(text)]

    def _generated_ids(self, n: int) -> list:
        if self._settings["id_type"] == "int":
            top = self._conn.execute(
                "SELECT MAX(user_id) FROM documents WHERE typeof(user_id) = 'integer'"
            ).fetchone()[0]
            start = 0 if top is None else top + 1
            if start + n > 2**63:
                raise CollectionError(
                    f"{self.path}: ids after the largest, {top}, would not fit in 64 bits; "
                    "pass ids= to add (nothing was written)")
            return list(range(start, start + n))
        return [uuid.uuid4().hex for _ in range(n)]

    def _check_ids(self, ids, name: str, allow_new_type: bool = False) -> list:
        if isinstance(ids, (str, int, np.integer)) and not isinstance(ids, bool):
            ids = [ids]
        if isinstance(ids, np.ndarray):
            ids = ids.tolist()
        try:
            ids = list(ids)
        except TypeError:
            raise TypeError(f"{name} must be a list of str or int ids, got "
                            f"{type(ids).__name__}") from None
        out = [int(v) if isinstance(v, np.integer) else v for v in ids]
        checks.refuse(name, [p for i, v in enumerate(out) for p in checks.id_problems(name, i, v)],
                      len(out))
        kinds = {type(v).__name__ for v in out}
        if len(kinds) > 1:
            raise TypeError(f"{name} mixes int and str ids; use one type")
        have = self._settings["id_type"]
        if kinds and have is not None and kinds != {have} and not allow_new_type:
            raise TypeError(f"{name}: this collection's ids are {have}, got {kinds.pop()}")
        if len(set(out)) != len(out):
            seen, twice = set(), {}
            for v in out:
                if v in seen:
                    twice[v] = None
                seen.add(v)
            raise CollectionError(f"{name}: {len(twice)} ids appear more than once: "
                                  f"{checks.listing(twice)}; ids must be unique")
        return out

    def _check_embeddings(self, embeddings, n: int):
        if embeddings is None:
            return None
        if self._settings["chunker"] != "none":
            raise CollectionError("embeddings= needs a collection created with chunker='none' "
                                  "(one chunk, so one vector, per document)")
        from ..._util.arrays import as_float_matrix

        x = np.ascontiguousarray(as_float_matrix(embeddings, "embeddings"), dtype=np.float32)
        if len(x) != n:
            raise CollectionError(f"embeddings has {len(x)} rows for {n} texts")
        dim = self._settings["dim"] or self._encoder_dim()
        if dim is not None and x.shape[1] != dim:
            made_by = "its encoder" if self._fingerprint is None else \
                fingerprint.describe(self._fingerprint)
            raise CollectionError(
                f"embeddings has {x.shape[1]} dimensions per vector, but this collection's "
                f"vectors have {dim} (made by {made_by}); pass vectors made by that encoder, "
                "or first re-embed the collection with the model that made these "
                "(reembed(encoder)); nothing was written")
        return x

    def _encoder_dim(self):
        """The dimension of the encoder's vectors where it is known without encoding (the
        bundled encoder is loaded for it), else None."""
        if self._fingerprint is not None and self._fingerprint.get("dim") is not None:
            return self._fingerprint["dim"]
        if self._encoder is None and self._settings["encoder"] == "bundled":
            self._get_encoder()
        return None if self._encoder is None else fingerprint.declared_dim(self._encoder)

    def _check_metadata(self, metadata, n: int) -> list[dict]:
        if metadata is None:
            return [{} for _ in range(n)]
        if isinstance(metadata, dict):
            raise TypeError("metadata must be a list of dicts, one per text")
        metadata = list(metadata)
        if len(metadata) != n:
            raise CollectionError(f"metadata has {len(metadata)} entries for {n} texts")
        return checks.check_metadata_rows(metadata, self._settings["schema"])

    def _check_open(self) -> None:
        if self._closed:
            raise CollectionError(f"{self.path}: the collection is closed")

    def _check_writable(self) -> None:
        self._check_open()
        if self.readonly:
            raise CollectionError(f"{self.path}: opened readonly; open it with readonly=False "
                                  "to write")


def _refuse_other_encoder(path: str, stored, encoder, dim, name: str) -> None:
    """Raises CollectionError naming both models when encoder is not the one that made the
    stored vectors (stored: their fingerprint, None when none was recorded; dim: theirs)."""
    current = fingerprint.of(encoder)
    if stored is None:  # nothing recorded: only a dimension can be compared
        given = current["dim"]
        if dim is None or given is None or given == dim:
            return
        made_by, differ = f"a model of {dim} dimensions (not recorded)", [
            f"the dimension ({dim} vs {given})"]
    else:
        stored = fingerprint.with_dim(stored, dim)
        differ = fingerprint.differences(stored, current)
        if not differ:
            return
        made_by = fingerprint.describe(stored)
    raise CollectionError(
        f"{path}: {name} is {fingerprint.describe(current)}, but the collection's vectors "
        f"were made by {made_by}; they differ in {', '.join(differ)}. Pass the encoder the "
        "collection was made with, or re-embed every chunk with this one (nothing is "
        "changed until it completes): Collection.open(path).reembed(encoder)")


def _encoded(encoder, texts: list, dim) -> np.ndarray:
    """float32 [len(texts), dim] from encoder, checked (dim None: any)."""
    if checks.is_bi_encoder(encoder):
        vectors = encoder.encode(texts, warn=True)
    else:
        vectors = encoder.encode(texts)
    x = np.asarray(vectors, dtype=np.float32)
    if x.ndim != 2 or len(x) != len(texts) or (dim is not None and x.shape[1] != dim):
        raise CollectionError(
            f"reembed: the encoder returned shape {x.shape} for {len(texts)} texts; expected "
            f"({len(texts)}, {dim or 'dim'}) (nothing was changed)")
    if not np.isfinite(x).all():
        raise CollectionError("reembed: the encoder returned NaN or infinite values (nothing "
                              "was changed)")
    return np.ascontiguousarray(x)


def fusion_function(fusion):
    from .. import fusion as fusion_module

    if fusion is None:
        fusion = DEFAULT_FUSION

    if isinstance(fusion, fusion_module.FusionSetting):  # e.g. fusion.tune(...).setting
        return lambda lists, k: fusion.fuse(lists[0], lists[1], k)  # dense, then sparse
    if callable(fusion):
        return lambda lists, k: fusion(lists, k=k)
    if isinstance(fusion, dict):
        options = dict(fusion)
        return lambda lists, k: fusion_module.combine(lists, k=k, **options)
    check_choice(fusion, "fusion", FUSIONS)
    if fusion == "rrf":
        return lambda lists, k: fusion_module.rrf(lists, k=k)
    return lambda lists, k: fusion_module.combine(lists, method=fusion, k=k)


def rerank_hits(reranker, queries, hits: Hits, rows: dict) -> Hits:
    scores = np.full(hits.ids.shape, -np.inf, dtype=np.float32)
    ids = np.full(hits.ids.shape, PADDING_ID, dtype=np.int64)
    for r, query in enumerate(queries):
        cand = hits.ids[r][hits.ids[r] != PADDING_ID]
        if not len(cand):
            continue
        s = np.asarray(reranker.score(query, [rows[int(c)][4] for c in cand]), dtype=np.float32)
        if s.shape != cand.shape or not np.isfinite(s).all():
            raise ValueError(f"rerank: the reranker returned {s.shape} scores for {len(cand)} "
                             "passages (or non-finite ones)")
        order = np.lexsort((cand, -s.astype(np.float64)))
        scores[r, : len(cand)], ids[r, : len(cand)] = s[order], cand[order]
    return Hits(scores, ids)


def _matches(hits: Hits, r: int, rows: dict, k: int, by: str, db: str) -> list[Match]:
    out, seen = [], set()
    for cid, score in zip(hits.ids[r], hits.scores[r]):
        if cid == PADDING_ID or len(out) == k:
            break
        uid, position, start, end, text, meta = rows[int(cid)]
        if by == "document":
            if uid in seen:
                continue
            seen.add(uid)
        out.append(Match(uid, int(cid), position, start, end, text, float(score),
                         store.stored_metadata(db, meta)))
    return out


def _row(hits: Hits, r: int) -> Hits:
    return Hits(hits.scores[r : r + 1].copy(), hits.ids[r : r + 1].copy())

