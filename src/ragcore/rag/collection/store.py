"""The SQLite database of a Collection: the source of truth.

Tables:
  meta(key, value)         format version, settings (JSON), the change number, the
                           vector dimension, the id type, the encoder's fingerprint (JSON;
                           see fingerprint), and the change number at which every
                           embedding was last replaced (re-embedding: the dense index file
                           of an earlier one holds the old vectors)
  documents(rowid, user_id, text, metadata)   user_id keeps its type (int or str)
  chunks(chunk_id, doc_rowid, position, start, end, text, hash)
                           chunk ids come from AUTOINCREMENT and are never reused, so an
                           index holding an id that is no longer here holds a deleted chunk
  embeddings(hash, vector) one float32 vector per distinct chunk text (sha256)
  fields(name, types)      every metadata field seen or declared, with its value types

Every write is one transaction that also increments the change number; the index files
record the change number they reflect.

Every connection is a _Connection: sqlite's errors for a damaged file (SQLITE_CORRUPT,
SQLITE_NOTADB), wherever a statement or a row fetch meets them, are raised as
CollectionCorruptError naming the file and what to do.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3

import numpy as np

from ..._util.arrays import as_float_matrix
from ...errors import CollectionCorruptError, CollectionError
from . import manifest
from .filters import SCALAR_TYPES, compile_filter, field_path, value_type

FORMAT_VERSION = 1
_VALUE_TYPES = set(SCALAR_TYPES) | {"list", "dict"}
DB_NAME = "collection.sqlite"

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE documents (rowid INTEGER PRIMARY KEY AUTOINCREMENT, user_id UNIQUE NOT NULL,
                        text TEXT NOT NULL, metadata TEXT NOT NULL);
CREATE TABLE chunks (chunk_id INTEGER PRIMARY KEY AUTOINCREMENT,
                     doc_rowid INTEGER NOT NULL REFERENCES documents(rowid),
                     position INTEGER NOT NULL, start INTEGER NOT NULL, end INTEGER NOT NULL,
                     text TEXT NOT NULL, hash BLOB NOT NULL);
CREATE INDEX chunks_by_doc ON chunks(doc_rowid);
CREATE TABLE embeddings (hash BLOB PRIMARY KEY, vector BLOB NOT NULL);
CREATE TABLE fields (name TEXT PRIMARY KEY, types TEXT NOT NULL);
"""


def content_hash(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


# sqlite's primary result codes (an extended code keeps the primary one in its low byte)
# of a file that is damaged or not a database at all.
_SQLITE_CORRUPT, _SQLITE_NOTADB, _SQLITE_FULL = 11, 26, 13
# Errors of the store's own statements that only a changed schema causes (a table or
# column dropped or renamed, a value of another type where the schema has a key).
# "malformed database schema": the schema's own text is damaged (sqlite reports some of those
# as SQLITE_TOOBIG or SQLITE_ERROR, not SQLITE_CORRUPT).
_SCHEMA_CHANGED = ("no such table", "no such column", "has no column named", "datatype mismatch",
                   "unsupported file format",  # a damaged header's schema format
                   "malformed database schema")


def damage_message(path: str, what: str) -> str:
    return (f"{path}: {what}; restore the collection's directory from a backup, or create "
            "the collection again from its source documents")


def damaged(path: str, detail: str) -> CollectionCorruptError:
    return CollectionCorruptError(damage_message(
        path, f"the collection's database is damaged ({detail})"))


def stored(path: str, convert, value):
    """convert(value) of a value the store wrote (JSON, a number as text): one that does not
    convert was changed by damage, as the store writes only what converts."""
    try:
        return convert(value)
    except (TypeError, ValueError) as err:
        raise damaged(path, f"a stored value does not read back: {err}") from None


def _guarded(conn, call, *args):
    """call(*args), with sqlite's errors for a damaged file raised as CollectionCorruptError."""
    try:
        return call(*args)
    except UnicodeDecodeError as err:  # text SQLite returns that is not UTF-8 (the schema's)
        raise damaged(conn.path, f"text that is not UTF-8 ({err.reason})") from err
    except sqlite3.DatabaseError as err:
        code = (getattr(err, "sqlite_errorcode", None) or 0) & 0xFF
        if code == _SQLITE_FULL:  # the disk, or the AUTOINCREMENT ids (a changed sequence)
            raise CollectionError(f"{conn.path}: cannot write ({err}): free disk space and "
                                  "retry; if there is space, its ids ran out (a changed "
                                  "sqlite_sequence table): restore the collection's directory "
                                  "from a backup") from err
        if code == _SQLITE_NOTADB:
            raise CollectionCorruptError(damage_message(
                conn.path, "not a ragcore collection, or a damaged one: not a SQLite "
                f"database ({err})")) from err
        # The store writes only valid UTF-8 text and valid JSON: text that is neither
        # was changed by damage inside a page that sqlite's structure checks accept.
        message = str(err)
        if code == _SQLITE_CORRUPT or message.startswith("Could not decode to UTF-8") or \
                message == "malformed JSON" or message.startswith(_SCHEMA_CHANGED):
            raise damaged(conn.path, message[:120]) from err
        raise


class _Cursor(sqlite3.Cursor):
    def execute(self, sql, params=()):
        return _guarded(self.connection, super().execute, sql, params)

    def executemany(self, sql, rows):
        return _guarded(self.connection, super().executemany, sql, rows)

    def fetchone(self):
        return _guarded(self.connection, super().fetchone)

    def fetchmany(self, size=None):
        return _guarded(self.connection, super().fetchmany, size or self.arraysize)

    def fetchall(self):
        return _guarded(self.connection, super().fetchall)

    def __next__(self):
        return _guarded(self.connection, super().__next__)


class _Connection(sqlite3.Connection):
    """A connection whose statements run on _Cursor; path is the database file."""

    path = ""

    def execute(self, sql, params=()):
        return self.cursor(_Cursor).execute(sql, params)

    def executemany(self, sql, rows):
        return self.cursor(_Cursor).executemany(sql, rows)


def connect(path: str, readonly: bool) -> sqlite3.Connection:
    target, uri = (f"file:{path}?mode=ro", True) if readonly else (path, False)
    conn = sqlite3.connect(target, uri=uri, check_same_thread=False, isolation_level=None,
                           factory=_Connection)
    conn.path = path
    if not readonly:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")  # a commit that returned survives a crash
    conn.execute("PRAGMA busy_timeout=10000")
    return conn


def create_schema(conn: sqlite3.Connection, settings: dict, schema: dict,
                  fingerprint: dict | None) -> None:
    with transaction(conn):
        for statement in SCHEMA.strip().split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.executemany("INSERT INTO meta VALUES (?, ?)", [
            ("format_version", str(FORMAT_VERSION)), ("change", "0"),
            ("settings", json.dumps(settings))])
        if fingerprint is not None:
            write_fingerprint(conn, fingerprint)
        for i, (name, kind) in enumerate(schema.items()):
            conn.execute("INSERT INTO fields VALUES (?, ?)", (name, json.dumps([kind])))
            conn.execute(f"CREATE INDEX field_{i} ON documents(json_extract(metadata, "
                         f"'{field_path(name).replace(chr(39), chr(39) * 2)}'))")


class transaction:
    """BEGIN IMMEDIATE (a write) or BEGIN (a read: one snapshot) ... COMMIT (ROLLBACK on
    any exception)."""

    def __init__(self, conn, write: bool = True):
        self.conn, self.begin = conn, "BEGIN IMMEDIATE" if write else "BEGIN"

    def __enter__(self):
        self.conn.execute(self.begin)
        return self.conn

    def __exit__(self, kind, value, tb):
        if kind is None:
            self.conn.execute("COMMIT")
        elif self.conn.in_transaction:  # sqlite rolls back itself after some errors (FULL)
            self.conn.execute("ROLLBACK")
        return False


def read_meta(conn: sqlite3.Connection) -> dict:
    return dict(conn.execute("SELECT key, value FROM meta").fetchall())


def collection_meta(conn, path: str) -> dict:
    """The meta table of a collection's database; a database without one is not a
    collection."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "meta" not in tables:
        if {"documents", "chunks", "embeddings"} <= tables:  # a collection's, without meta
            raise damaged(conn.path, "the table meta is missing")
        raise CollectionError(f"{path}: not a ragcore collection (no meta table)")
    meta = read_meta(conn)
    if "format_version" not in meta or "settings" not in meta:
        raise CollectionError(f"{path}: not a ragcore collection (no format version)")
    return meta


def change_number(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key = 'change'").fetchone()
    return stored(conn.path, lambda r: int(r[0]), row)


def bump_change(conn: sqlite3.Connection) -> int:
    conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'change'")
    return change_number(conn)


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))


def delete_meta(conn: sqlite3.Connection, key: str) -> None:
    conn.execute("DELETE FROM meta WHERE key = ?", (key,))


def read_fingerprint(conn: sqlite3.Connection):
    """The stored encoder fingerprint, or None for a collection that has none yet."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'fingerprint'").fetchone()
    return None if row is None else stored(conn.path, json.loads, row[0])


def write_fingerprint(conn: sqlite3.Connection, fingerprint: dict) -> None:
    set_meta(conn, "fingerprint", json.dumps(fingerprint))


def write_settings(conn: sqlite3.Connection, settings: dict) -> None:
    set_meta(conn, "settings", json.dumps(settings))


def embeddings_change(conn: sqlite3.Connection) -> int:
    """The change number of the last re-embedding (0: never re-embedded)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'embeddings_change'").fetchone()
    return 0 if row is None else stored(conn.path, int, row[0])


def count_chunk_texts(conn) -> int:
    return conn.execute("SELECT COUNT(DISTINCT hash) FROM chunks").fetchone()[0]


def chunk_texts_by_hash(conn, batch: int):
    """Lists of (hash, text) of every distinct chunk text, batch at a time."""
    cur = conn.execute("SELECT hash, MIN(text) FROM chunks GROUP BY hash ORDER BY hash")
    while rows := cur.fetchmany(batch):
        yield rows


def replace_embeddings(conn, vectors: dict, change: int) -> None:
    """Replaces every stored embedding by vectors (hash -> float32 bytes) and records the
    change number at which it happened. Call inside a transaction."""
    conn.execute("DELETE FROM embeddings")
    conn.executemany("INSERT INTO embeddings VALUES (?, ?)", list(vectors.items()))
    set_meta(conn, "embeddings_change", str(change))


def read_fields(conn: sqlite3.Connection) -> dict:
    """field name -> the set of its recorded value types (see filters.value_type)."""
    out = {}
    for name, types in conn.execute("SELECT name, types FROM fields"):
        types = stored(conn.path, json.loads, types)
        if not isinstance(name, str) or not isinstance(types, list) or \
                not all(isinstance(t, str) and t in _VALUE_TYPES for t in types):
            raise damaged(conn.path, f"the fields table holds {name!r}: {types!r}, not a "
                                     "field name and a list of value types")
        out[name] = set(types)
    return out


def record_fields(conn: sqlite3.Connection, fields: dict, metadatas) -> None:
    """Adds the fields and value types of these metadata dicts to the fields table."""
    changed = {}
    for meta in metadatas:
        for name, value in meta.items():
            kind = value_type(value)
            known = fields.get(name, set())
            if kind not in known:
                fields[name] = known | {kind}
                changed[name] = fields[name]
    for name, types in changed.items():
        conn.execute("INSERT OR REPLACE INTO fields VALUES (?, ?)",
                     (name, json.dumps(sorted(types))))


def existing_ids(conn: sqlite3.Connection, ids: list) -> list:
    found = []
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        marks = ",".join("?" * len(part))
        found += [r[0] for r in conn.execute(
            f"SELECT user_id FROM documents WHERE user_id IN ({marks})", part)]
    return found


def known_hashes(conn: sqlite3.Connection, hashes: list) -> set:
    found = set()
    for start in range(0, len(hashes), 500):
        part = hashes[start:start + 500]
        marks = ",".join("?" * len(part))
        found |= {r[0] for r in conn.execute(
            f"SELECT hash FROM embeddings WHERE hash IN ({marks})", part)}
    return found


def insert_document(conn, user_id, text: str, metadata: dict, chunks) -> list[int]:
    """Inserts one document and its chunks ((start, end, text, hash) each); returns the
    chunk ids."""
    cur = conn.execute("INSERT INTO documents (user_id, text, metadata) VALUES (?, ?, ?)",
                       (user_id, text, json.dumps(metadata)))
    rowid = cur.lastrowid
    out = []
    for position, (start, end, chunk_text, digest) in enumerate(chunks):
        cur = conn.execute("INSERT INTO chunks (doc_rowid, position, start, end, text, hash) "
                           "VALUES (?, ?, ?, ?, ?, ?)",
                           (rowid, position, start, end, chunk_text, digest))
        out.append(cur.lastrowid)
    return out


def delete_documents(conn, ids: list) -> np.ndarray:
    """Deletes documents and their chunks; returns the deleted chunk ids."""
    dead = []
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        marks = ",".join("?" * len(part))
        rows = [r[0] for r in conn.execute(
            f"SELECT rowid FROM documents WHERE user_id IN ({marks})", part)]
        if not rows:
            continue
        row_marks = ",".join("?" * len(rows))
        dead += [r[0] for r in conn.execute(
            f"SELECT chunk_id FROM chunks WHERE doc_rowid IN ({row_marks})", rows).fetchall()]
        conn.execute(f"DELETE FROM chunks WHERE doc_rowid IN ({row_marks})", rows)
        conn.execute(f"DELETE FROM documents WHERE rowid IN ({row_marks})", rows)
    return _chunk_ids(conn, np.array(dead, dtype=np.int64))


def chunk_ids_summary(conn) -> list[int]:
    """manifest.ids_summary of every chunk id, computed by SQLite in one pass."""
    return list(conn.execute(manifest.summary_sql("chunks", "chunk_id")).fetchone())


def live_chunk_ids(conn) -> np.ndarray:
    rows = conn.execute("SELECT chunk_id FROM chunks ORDER BY chunk_id")
    return _chunk_ids(conn, np.fromiter((r[0] for r in rows), dtype=np.int64))


def _chunk_ids(conn, ids: np.ndarray) -> np.ndarray:
    """ids, refused when one is negative or 2**63 - 1, which no index holds (AUTOINCREMENT
    gives neither: a changed row)."""
    if len(ids) and ids.min() < 0:
        raise damaged(conn.path, f"a stored chunk id is negative ({int(ids.min())})")
    if len(ids) and ids.max() == np.iinfo(np.int64).max:
        raise damaged(conn.path, f"a stored chunk id is 2**63 - 1 ({int(ids.max())}), beyond "
                                 "the ids an index holds")
    return ids


def chunk_vectors(conn, chunk_ids, dim: int) -> np.ndarray:
    """float32 [len(chunk_ids), dim], in the order given."""
    ids = [int(i) for i in chunk_ids]
    out = np.empty((len(ids), dim), dtype=np.float32)
    position = {cid: i for i, cid in enumerate(ids)}
    found = 0
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        marks = ",".join("?" * len(part))
        rows = conn.execute(
            f"SELECT c.chunk_id, e.vector FROM chunks c JOIN embeddings e ON e.hash = c.hash "
            f"WHERE c.chunk_id IN ({marks})", part).fetchall()
        out[[position[r[0]] for r in rows]] = _vectors(conn, [r[1] for r in rows], dim)
        found += len(rows)
    if found != len(ids):  # every chunk's embedding is written with it and kept while it lives
        raise damaged(conn.path, f"{len(ids) - found} chunks lack their stored embedding")
    return out


def all_chunks(conn, dim: int, with_vectors: bool, after: int = -1):
    """(chunk ids, texts, vectors or None) of every chunk with id > after, by id."""
    # LEFT JOIN: a chunk without its embedding is damage (_vectors), not a chunk left out.
    rows = conn.execute(
        "SELECT c.chunk_id, c.text" + (", e.vector" if with_vectors else "") +
        " FROM chunks c" + (" LEFT JOIN embeddings e ON e.hash = c.hash" if with_vectors else "") +
        " WHERE c.chunk_id > ? ORDER BY c.chunk_id", (after,)).fetchall()
    ids = _chunk_ids(conn, np.array([r[0] for r in rows], dtype=np.int64))
    texts = [r[1] for r in rows]
    if not all(isinstance(t, str) for t in texts):
        raise damaged(conn.path, "a stored chunk's text is not text")
    vectors = None
    if with_vectors:
        vectors = _vectors(conn, [r[2] for r in rows], dim)
    return ids, texts, vectors


def _vectors(conn, blobs: list, dim: int) -> np.ndarray:
    """float32 [len(blobs), dim] of stored vectors."""
    if any(not isinstance(b, bytes) or len(b) != 4 * dim for b in blobs):
        raise damaged(conn.path, f"a stored vector is not {dim} float32 values")
    vectors = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dim)
    try:  # stored vectors were finite and in range (the dense index refuses others)
        return as_float_matrix(vectors, "stored vectors", dim)
    except ValueError as err:
        raise damaged(conn.path, str(err)) from None


def chunks_by_ids(conn, chunk_ids) -> dict:
    """chunk id -> (user id, position, start, end, text, metadata JSON); each chunk's text
    is its document's text[start:end] (else the database was changed: damage)."""
    ids = [int(i) for i in chunk_ids]
    out, unsure = {}, []
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        marks = ",".join("?" * len(part))
        # SQLite's substr and length count characters as Python does, up to a NUL: a row
        # they do not confirm is compared again with the document's text in Python.
        for row in conn.execute(
                "SELECT c.chunk_id, d.user_id, c.position, c.start, c.end, c.text, d.metadata, "
                "typeof(c.position) = 'integer' AND typeof(c.start) = 'integer' AND "
                "typeof(c.end) = 'integer' AND c.position >= 0 AND c.start >= 0 AND "
                "c.end >= c.start AND c.end <= length(d.text) AND "
                "substr(d.text, c.start + 1, c.end - c.start) = c.text "
                "FROM chunks c JOIN documents d ON d.rowid = c.doc_rowid "
                f"WHERE c.chunk_id IN ({marks})", part).fetchall():  # one guarded call
            out[row[0]] = row[1:7]
            if not row[7]:
                unsure.append(row[0])
    for chunk_id in unsure:
        _check_offsets(conn, chunk_id, *out[chunk_id][1:5])
    return out


def _check_offsets(conn, chunk_id: int, position, start, end, text) -> None:
    row = conn.execute("SELECT d.text FROM chunks c JOIN documents d ON d.rowid = c.doc_rowid "
                       "WHERE c.chunk_id = ?", (chunk_id,)).fetchone()
    ints = all(type(v) is int for v in (position, start, end))
    if not ints or position < 0 or not 0 <= start <= end <= len(row[0]) or \
            row[0][start:end] != text:
        raise damaged(conn.path, f"chunk {chunk_id} (offsets {start!r}..{end!r}) is not the "
                                 "text of its document at those offsets")


def integrity_problems(conn, dim) -> list[str]:
    """What PRAGMA integrity_check reports (every page, index and constraint), and chunks
    whose stored embedding is missing or of the wrong size; empty when the database is sound."""
    found = [r[0] for r in conn.execute("PRAGMA integrity_check")]
    problems = [line for item in found if item != "ok" for line in item.splitlines()]
    if problems or not dim:  # no dim: no vector stored yet
        return problems
    bad = conn.execute("SELECT COUNT(*) FROM chunks c LEFT JOIN embeddings e ON e.hash = c.hash "
                       "WHERE e.hash IS NULL OR length(e.vector) != ?", (4 * dim,)).fetchone()[0]
    return [f"{bad} chunks lack a stored embedding of {dim} float32 values"] if bad else []


def filtered_chunk_ids(conn, flt, fields: dict) -> np.ndarray:
    sql, params = compile_filter(flt, fields)
    rows = conn.execute("SELECT c.chunk_id FROM chunks c JOIN documents d ON d.rowid = c.doc_rowid "
                        f"WHERE {sql}", params)
    return _chunk_ids(conn, np.fromiter((r[0] for r in rows), dtype=np.int64))


def count_documents(conn, flt, fields: dict) -> int:
    if flt is None:
        return conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
    sql, params = compile_filter(flt, fields)
    return conn.execute(f"SELECT COUNT(*) FROM documents WHERE {sql}", params).fetchone()[0]


def document_ids(conn, flt, fields: dict) -> list:
    sql, params = ("1", []) if flt is None else compile_filter(flt, fields)
    return [r[0] for r in conn.execute(f"SELECT user_id FROM documents WHERE {sql} ORDER BY rowid",
                                       params)]


def get_documents(conn, ids: list) -> dict:
    """user id -> (text, metadata dict)."""
    out = {}
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        marks = ",".join("?" * len(part))
        for uid, text, meta in conn.execute(
                f"SELECT user_id, text, metadata FROM documents WHERE user_id IN ({marks})", part):
            if not isinstance(text, str):
                raise damaged(conn.path, f"the text of document {uid!r} is a "
                                         f"{type(text).__name__}, not text")
            out[uid] = (text, stored_metadata(conn.path, meta))
    return out


def stored_metadata(path: str, value) -> dict:
    """The metadata dict of a document's stored JSON."""
    meta = stored(path, json.loads, value)
    if not isinstance(meta, dict):
        raise damaged(path, f"a document's stored metadata is not a JSON object: {value!r:.80}")
    return meta


def prune_embeddings(conn) -> int:
    """Deletes the embeddings no chunk uses; returns how many."""
    cur = conn.execute("DELETE FROM embeddings WHERE hash NOT IN (SELECT hash FROM chunks)")
    return cur.rowcount
