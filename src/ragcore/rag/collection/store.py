"""The SQLite database of a Collection: the source of truth.

Tables:
  meta(key, value)         format version, settings (JSON), the change number
  documents(rowid, user_id, text, metadata)   user_id keeps its type (int or str)
  chunks(chunk_id, doc_rowid, position, start, end, text, hash)
                           chunk ids come from AUTOINCREMENT and are never reused, so an
                           index holding an id that is no longer here holds a deleted chunk
  embeddings(hash, vector) one float32 vector per distinct chunk text (sha256)
  fields(name, types)      every metadata field seen or declared, with its value types

Every write is one transaction that also increments the change number; the index files
record the change number they reflect.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3

import numpy as np

from .filters import compile_filter, field_path, value_type

FORMAT_VERSION = 1
DB_NAME = "collection.sqlite"

_SCHEMA = """
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


def connect(path: str, readonly: bool) -> sqlite3.Connection:
    if readonly:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False,
                               isolation_level=None)
    else:
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")  # a commit that returned survives a crash
    conn.execute("PRAGMA busy_timeout=10000")
    return conn


def create_schema(conn: sqlite3.Connection, settings: dict, schema: dict) -> None:
    with transaction(conn):
        for statement in _SCHEMA.strip().split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.executemany("INSERT INTO meta VALUES (?, ?)", [
            ("format_version", str(FORMAT_VERSION)), ("change", "0"),
            ("settings", json.dumps(settings))])
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
        self.conn.execute("COMMIT" if kind is None else "ROLLBACK")
        return False


def read_meta(conn: sqlite3.Connection) -> dict:
    return dict(conn.execute("SELECT key, value FROM meta").fetchall())


def change_number(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT value FROM meta WHERE key = 'change'").fetchone()[0])


def bump_change(conn: sqlite3.Connection) -> int:
    conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'change'")
    return change_number(conn)


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))


def read_fields(conn: sqlite3.Connection) -> dict:
    return {name: set(json.loads(types)) for name, types in
            conn.execute("SELECT name, types FROM fields")}


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
            f"SELECT chunk_id FROM chunks WHERE doc_rowid IN ({row_marks})", rows)]
        conn.execute(f"DELETE FROM chunks WHERE doc_rowid IN ({row_marks})", rows)
        conn.execute(f"DELETE FROM documents WHERE rowid IN ({row_marks})", rows)
    return np.array(dead, dtype=np.int64)


def live_chunk_ids(conn) -> np.ndarray:
    return np.array([r[0] for r in conn.execute("SELECT chunk_id FROM chunks ORDER BY chunk_id")],
                    dtype=np.int64)


def chunk_vectors(conn, chunk_ids, dim: int) -> np.ndarray:
    """float32 [len(chunk_ids), dim], in the order given."""
    ids = [int(i) for i in chunk_ids]
    out = np.empty((len(ids), dim), dtype=np.float32)
    position = {cid: i for i, cid in enumerate(ids)}
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        marks = ",".join("?" * len(part))
        for cid, blob in conn.execute(
                f"SELECT c.chunk_id, e.vector FROM chunks c JOIN embeddings e ON e.hash = c.hash "
                f"WHERE c.chunk_id IN ({marks})", part):
            out[position[cid]] = np.frombuffer(blob, dtype=np.float32)
    return out


def all_chunks(conn, dim: int, with_vectors: bool, after: int = -1):
    """(chunk ids, texts, vectors or None) of every chunk with id > after, by id."""
    rows = conn.execute(
        "SELECT c.chunk_id, c.text" + (", e.vector" if with_vectors else "") +
        " FROM chunks c" + (" JOIN embeddings e ON e.hash = c.hash" if with_vectors else "") +
        " WHERE c.chunk_id > ? ORDER BY c.chunk_id", (after,)).fetchall()
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    texts = [r[1] for r in rows]
    vectors = None
    if with_vectors:
        vectors = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(-1, dim)
    return ids, texts, vectors


def chunks_by_ids(conn, chunk_ids) -> dict:
    """chunk id -> (user id, position, start, end, text, metadata JSON)."""
    ids = [int(i) for i in chunk_ids]
    out = {}
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        marks = ",".join("?" * len(part))
        for row in conn.execute(
                "SELECT c.chunk_id, d.user_id, c.position, c.start, c.end, c.text, d.metadata "
                "FROM chunks c JOIN documents d ON d.rowid = c.doc_rowid "
                f"WHERE c.chunk_id IN ({marks})", part):
            out[row[0]] = row[1:]
    return out


def filtered_chunk_ids(conn, flt, fields: dict) -> np.ndarray:
    sql, params = compile_filter(flt, fields)
    rows = conn.execute("SELECT c.chunk_id FROM chunks c JOIN documents d ON d.rowid = c.doc_rowid "
                        f"WHERE {sql}", params)
    return np.fromiter((r[0] for r in rows), dtype=np.int64)


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
            out[uid] = (text, json.loads(meta))
    return out


def prune_embeddings(conn) -> int:
    """Deletes the embeddings no chunk uses; returns how many."""
    cur = conn.execute("DELETE FROM embeddings WHERE hash NOT IN (SELECT hash FROM chunks)")
    return cur.rowcount
