"""Mutation fuzzing of a Collection's directory: what a user with sqlite3 and cp can do.

``seed_collections`` builds small valid collections (flat with int ids, chunked text and a
metadata schema; HNSW with str ids; IVF trained), each with a copy of the index files and
manifest of an earlier flush. ``mutate`` changes one thing of a copy (sometimes two) and
returns what it did: a value of any table and column set by valid SQL (an awkward value of
any type, another row's value, a plausible neighbour), a row deleted or duplicated, the
schema changed (a table dropped or renamed, a column renamed, an index dropped, UNIQUE
dropped with a duplicated user id, a trigger), a meta value (format version, change,
dimension, id type, settings, fingerprint) changed, the index files replaced by the
earlier flush's, swapped, deleted or mutated with valid checksums, indexes.json edited,
or a page of the database overwritten. collection_oracle checks what opening it does.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import struct
from typing import NamedTuple

import numpy as np

import mutator
from ragcore import Collection
from ragcore.rag.chunking import Chunker

DB = "collection.sqlite"
MANIFEST = "indexes.json"
EARLIER = "earlier"  # the seed's copy of an earlier flush's index files and manifest
TABLES = {"meta": ("key", "value"), "documents": ("rowid", "user_id", "text", "metadata"),
          "chunks": ("chunk_id", "doc_rowid", "position", "start", "end", "text", "hash"),
          "embeddings": ("hash", "vector"), "fields": ("name", "types"),
          "sqlite_sequence": ("name", "seq")}
WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron "
         "pi rho sigma tau upsilon phi chi psi omega").split()
DIM = 8


# ---- the valid collections every mutation starts from --------------------------

class WordEncoder:
    """Bag of hashed words in DIM dimensions, L2-normalised (deterministic, no model).
    Each text's vector is made once: the oracle encodes the same queries at every search."""

    fingerprint = "fuzz-word-encoder"

    def __init__(self):
        self._seen: dict[str, np.ndarray] = {}

    def encode(self, texts, warn: bool = True):
        out = np.empty((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            vector = self._seen.get(text)
            if vector is None:
                vector = self._seen[text] = _word_vector(text)
                if len(self._seen) > 100_000:  # texts of mutated documents: bounded
                    self._seen.clear()
            out[i] = vector
        return out

    def __repr__(self) -> str:
        return "WordEncoder()"


def _word_vector(text: str) -> np.ndarray:
    out = np.zeros(DIM, dtype=np.float32)
    for word in text.lower().split():
        h = sum(ord(c) * 31 ** j for j, c in enumerate(word))
        out[h % DIM] += 1.0 + h % 5 / 10.0
    norm = np.linalg.norm(out)
    return out / norm if norm > 0 else out


def _texts(rng, n: int) -> list[str]:
    out = []
    for _ in range(n):
        sentences = [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 9)))).capitalize() + "."
                     for _ in range(int(rng.integers(1, 4)))]
        out.append(" ".join(sentences))
    return out


def _metadata(rng, n: int) -> list[dict]:
    return [{"year": int(rng.integers(1990, 2025)), "lang": str(rng.choice(["en", "fr"])),
             "score": float(np.round(rng.random(), 2))} for _ in range(n)]


SEEDS = {
    "flat-int": dict(dense="flat", chunker=("chunker", 10, 3), ids="int", n=(14, 10, 3),
                     schema={"year": "int"}),
    "hnsw-str": dict(dense={"kind": "hnsw", "M": 4, "ef_construction": 16, "ef": 32},
                     chunker="none", ids="str", n=(12, 8, 2), schema=None),
    "ivf-int": dict(dense={"kind": "ivf", "nlist": 2, "nprobe": 2}, chunker="none", ids="int",
                    n=(40, 30, 4), schema=None),
}


def _make_chunker(spec):
    return Chunker(None, spec[1], spec[2]) if isinstance(spec, tuple) else spec


def seed_collections(directory: str) -> list[str]:
    """Builds each seed collection under directory; returns their paths."""
    out = []
    os.makedirs(directory, exist_ok=True)
    for name, spec in SEEDS.items():
        path = os.path.join(directory, f"seed-{name}")
        rng = np.random.default_rng(len(out))
        first, second, deleted = spec["n"]
        with Collection.create(path, encoder=WordEncoder(), chunker=_make_chunker(spec["chunker"]),
                               dense=spec["dense"], metadata_schema=spec["schema"]) as col:
            ids = list(range(first + second)) if spec["ids"] == "int" else \
                [f"doc-{i}" for i in range(first + second)]
            col.add(_texts(rng, first), ids=ids[:first], metadata=_metadata(rng, first))
            col.flush()
            os.makedirs(os.path.join(path, EARLIER))
            for f in os.listdir(path):
                if f.endswith(".rci") or f == MANIFEST:
                    shutil.copy(os.path.join(path, f), os.path.join(path, EARLIER, f))
            col.add(_texts(rng, second), ids=ids[first:], metadata=_metadata(rng, second))
            col.delete(ids[1 : 1 + deleted])
        conn = sqlite3.connect(os.path.join(path, DB))
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        out.append(path)
    return out


def copy_seed(seed: str, target: str) -> None:
    if os.path.exists(target):
        shutil.rmtree(target)
    shutil.copytree(seed, target, copy_function=shutil.copyfile)  # bytes only: no stat copied


# ---- awkward values --------------------------------------------------------------

_AWKWARD = [None, 0, 1, -1, 2, 7, 2**31, 2**53 + 1, 2**63 - 1, -2**63, 0.5, -0.0, 1e308, "",
            "abc", "0", "-1", "1.5", "1e3", "[]", "{}", "[1, 2]", '"x"', "null", "true", "int",
            "str", "\u00e9\u4e2d", b"", b"\x00", b"\x00" * 4, b"\xff" * 4 * DIM,
            b"\x00\x00\xc0\x7f" * DIM, b"\x00\x00\x80\x7f" * DIM, b"\xff\xff\x7f\x7f" * DIM]


def _json_mutation(value, rng):
    """A JSON document (text) with one value inside replaced by an awkward one."""
    try:
        doc = json.loads(value)
    except (TypeError, ValueError):
        return json.dumps(mutator._INTERESTING_JSON[rng.integers(len(mutator._INTERESTING_JSON))])
    paths = list(mutator._header_paths(doc))
    new = mutator._INTERESTING_JSON[rng.integers(len(mutator._INTERESTING_JSON))]
    if not paths or rng.integers(6) == 0:
        return json.dumps(new)
    path = paths[rng.integers(len(paths))]
    if rng.integers(5) == 0 and isinstance(path[-1], str):
        mutator._del_path(doc, path)
    else:
        mutator._set_path(doc, path, new)
    return json.dumps(doc)


def _neighbour(value, rng):
    """A plausible value near this one (an offset moved, an id of the other type, ...)."""
    if isinstance(value, bool) or value is None:
        return _AWKWARD[rng.integers(len(_AWKWARD))]
    if isinstance(value, int):
        return [value + int(rng.integers(-3, 4)), str(value), value * 1000, -value - 1,
                float(value)][rng.integers(5)]
    if isinstance(value, float):
        return [value * 2, str(value), int(value), float("inf")][rng.integers(4)]
    if isinstance(value, str):
        if value[:1] in "[{" or value in ("int", "str"):
            return _json_mutation(value, rng)
        if value.lstrip("-").isdigit():
            return [int(value), str(int(value) + int(rng.integers(-2, 3))), value + ".0",
                    value + "x"][rng.integers(4)]
        i = int(rng.integers(len(value) + 1))
        return [value[:i], value[:i] + "\x00" + value[i:], value.upper(), value + " " + value,
                value[i:] + value[:i]][rng.integers(5)]
    if isinstance(value, bytes):
        data = bytearray(value)
        if data and rng.integers(2):
            j = int(rng.integers(0, max(len(data) // 4, 1))) * 4
            data[j : j + 4] = struct.pack("<f", [np.nan, np.inf, 1e30, -3e38, 0.0][rng.integers(5)])
            return bytes(data)
        return [bytes(data[:-4]), bytes(data) + b"\x00" * 4, bytes(data[::-1])][rng.integers(3)]
    return None


# ---- mutations of the database ---------------------------------------------------

def _rows(conn, table: str) -> list:
    return [r[0] for r in conn.execute(f'SELECT rowid FROM "{table}"')]


def _sql_value(conn, rng) -> str:
    table = list(TABLES)[rng.integers(len(TABLES))]
    column = TABLES[table][rng.integers(len(TABLES[table]))]
    rows = _rows(conn, table)
    if not rows:
        return f"{table} is empty"
    row = rows[rng.integers(len(rows))]
    old = conn.execute(f'SELECT "{column}" FROM "{table}" WHERE rowid = ?', (row,)).fetchone()[0]
    choice = rng.integers(4)
    if choice == 0:
        new = _AWKWARD[rng.integers(len(_AWKWARD))]
    elif choice == 1:  # another row's value of this column
        other = rows[rng.integers(len(rows))]
        new = conn.execute(f'SELECT "{column}" FROM "{table}" WHERE rowid = ?',
                           (other,)).fetchone()[0]
    else:
        new = _neighbour(old, rng)
    conn.execute(f'UPDATE "{table}" SET "{column}" = ? WHERE rowid = ?', (new, row))
    return f"{table}.{column} of row {row}: {_short(old)} -> {_short(new)}"


def _meta_value(conn, rng) -> str:
    keys = [r[0] for r in conn.execute("SELECT key FROM meta")]
    key = keys[rng.integers(len(keys))]
    old = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()[0]
    if key in ("settings", "fingerprint"):
        new = _json_mutation(old, rng)
    elif rng.integers(3) == 0:
        new = _AWKWARD[rng.integers(len(_AWKWARD))]
    else:
        new = _neighbour(old, rng)
    if rng.integers(10) == 0:
        conn.execute("DELETE FROM meta WHERE key = ?", (key,))
        return f"meta {key} deleted"
    conn.execute("UPDATE meta SET value = ? WHERE key = ?", (new, key))
    return f"meta {key}: {_short(old)} -> {_short(new)}"


def _row_change(conn, rng) -> str:
    table = ("documents", "chunks", "embeddings", "fields", "meta")[rng.integers(5)]
    rows = _rows(conn, table)
    if not rows:
        return f"{table} is empty"
    row = rows[rng.integers(len(rows))]
    if rng.integers(2):
        conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (row,))
        return f"{table} row {row} deleted"
    columns = [c for c in TABLES[table] if c not in ("rowid", "chunk_id")]
    picked = ", ".join(f'"{c}"' for c in columns)
    values = ", ".join(_copied(c, table, rng) for c in columns)
    conn.execute(f"INSERT INTO {table} ({picked}) SELECT {values} FROM {table} WHERE rowid = ?",
                 (row,))
    return f"{table} row {row} copied ({values})"


def _copied(column: str, table: str, rng) -> str:
    """The SELECT expression that copies a column (keys changed so the copy is new)."""
    if column in ("user_id", "key", "name") and rng.integers(4):
        return f"\"{column}\" || '-copy'" if rng.integers(2) else f'"{column}" + 1000'
    if column == "hash" and table == "embeddings":
        return "randomblob(32)"
    return f'"{column}"'


def _schema_change(conn, rng) -> str:
    choice = rng.integers(9)
    table = ("meta", "documents", "chunks", "embeddings", "fields")[rng.integers(5)]
    if choice == 0:
        conn.execute(f"DROP TABLE {table}")
        return f"table {table} dropped"
    if choice == 1:
        conn.execute(f"ALTER TABLE {table} RENAME TO {table}_old")
        return f"table {table} renamed"
    if choice == 2:
        columns = [c for c in TABLES[table] if c != "rowid"]
        column = columns[rng.integers(len(columns))]
        conn.execute(f'ALTER TABLE {table} RENAME COLUMN "{column}" TO "{column}_x"')
        return f"column {table}.{column} renamed"
    if choice == 3:
        conn.execute(f"ALTER TABLE {table} ADD COLUMN extra TEXT DEFAULT 'x'")
        return f"a column added to {table}"
    if choice == 4:
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND "
                                    "sql IS NOT NULL").fetchall():
            conn.execute(f'DROP INDEX "{name}"')
        return "indexes dropped"
    if choice == 5:  # documents without UNIQUE, one user id twice
        conn.executescript(
            "PRAGMA foreign_keys=OFF; CREATE TABLE d2 (rowid INTEGER PRIMARY KEY AUTOINCREMENT, "
            "user_id NOT NULL, text TEXT NOT NULL, metadata TEXT NOT NULL); INSERT INTO d2 "
            "SELECT rowid, user_id, text, metadata FROM documents; DROP TABLE documents; "
            "ALTER TABLE d2 RENAME TO documents; CREATE INDEX chunks_by_doc2 ON chunks(doc_rowid);")
        rows = _rows(conn, "documents")
        a, b = rows[rng.integers(len(rows))], rows[rng.integers(len(rows))]
        conn.execute("UPDATE documents SET user_id = (SELECT user_id FROM documents WHERE "
                     "rowid = ?) WHERE rowid = ?", (a, b))
        return f"UNIQUE dropped; document {b} given the user id of {a}"
    if choice == 6:
        action = ("DELETE FROM chunks WHERE chunk_id = NEW.chunk_id" if rng.integers(2) else
                  "UPDATE meta SET value = '0' WHERE key = 'change'")
        conn.execute(f"CREATE TRIGGER t AFTER INSERT ON chunks BEGIN {action}; END")
        return f"a trigger on chunks: {action}"
    if choice == 7:  # a type of a column changed (the table made again)
        conn.executescript(
            f"CREATE TABLE {table}_2 AS SELECT * FROM {table}; DROP TABLE {table}; "
            f"ALTER TABLE {table}_2 RENAME TO {table};")
        return f"table {table} made again without constraints"
    conn.execute("CREATE VIEW IF NOT EXISTS v AS SELECT 1")
    conn.execute(f"CREATE TABLE IF NOT EXISTS extra_{table} (x)")
    return "an extra table and view"


def _page_damage(path: str, rng) -> str:
    db = os.path.join(path, DB)
    size = os.path.getsize(db)
    pages = max(size // 4096, 1)
    page = int(rng.integers(pages))
    with open(db, "r+b") as f:
        f.seek(page * 4096 + (0 if rng.integers(2) else int(rng.integers(4096 - 64))))
        pattern = [b"\x00" * 64, bytes(range(64)), bytes(rng.integers(0, 256, 64, dtype=np.uint8))]
        f.write(pattern[rng.integers(3)] * (64 if rng.integers(2) else 1))
    return f"page {page} of {pages} overwritten"


def _sql(path: str, change, rng) -> str:
    conn = sqlite3.connect(os.path.join(path, DB), isolation_level=None)
    try:
        conn.execute("BEGIN")
        what = change(conn, rng)
        if conn.in_transaction:  # executescript commits what it did itself
            conn.execute("COMMIT")
        return what
    except sqlite3.Error as err:  # sqlite refused the change (a constraint): nothing changed
        return f"refused by sqlite ({err})"
    except TypeError:  # a row the first mutation of two made unreadable: nothing changed
        return "no row to change"
    finally:
        conn.close()


# ---- mutations of the files ------------------------------------------------------

def _manifest_change(path: str, rng) -> str:
    name = os.path.join(path, MANIFEST)
    try:
        with open(name, "rb") as f:
            text = f.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        text = ""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    choice = rng.integers(4)
    if choice == 0:
        new = _json_mutation(text, rng)
    elif choice == 1 and isinstance(data, dict) and data:
        key = list(data)[rng.integers(len(data))]
        data[key] = _neighbour(data[key], rng)
        new = json.dumps(data)
    elif choice == 3 and isinstance(data, dict):
        bm25 = data.get("bm25")
        data["bm25"], data["dense"] = data.get("dense"), bm25  # swapped
        if rng.integers(2):
            data["bm25"] = ["../" + DB, "/etc/hostname", DB, MANIFEST][rng.integers(4)]
        new = json.dumps(data)
    else:
        i = int(rng.integers(len(text) + 1))
        new = [text[:i], text[:i] + "x" + text[i:], "[" + text + "]", ""][rng.integers(4)]
    with open(name, "w") as f:
        f.write(new)
    return f"indexes.json: {_short(new, 160)}"


def _index_files(path: str, rng) -> str:
    files = sorted(f for f in os.listdir(path) if f.endswith(".rci"))
    earlier = os.path.join(path, EARLIER)
    old = sorted(f for f in os.listdir(earlier) if f.endswith(".rci"))
    choice = rng.integers(6)
    if choice == 0:  # the earlier flush's content under the current names
        for f in files:
            match = [o for o in old if o.split("-")[0] == f.split("-")[0]]
            if match and rng.integers(3):
                shutil.copy(os.path.join(earlier, match[0]), os.path.join(path, f))
        return "earlier content copied over the current index files"
    if choice == 1:  # the whole earlier flush, manifest included
        for f in files:
            os.unlink(os.path.join(path, f))
        for f in os.listdir(earlier):
            shutil.copy(os.path.join(earlier, f), os.path.join(path, f))
        return "the earlier flush's files and manifest restored"
    if choice == 2 and len(files) == 2:  # the two files' contents swapped
        a, b = (os.path.join(path, f) for f in files)
        os.rename(a, a + ".t")
        os.rename(b, a)
        os.rename(a + ".t", b)
        return "the dense and BM25 files swapped"
    if choice == 3 and files:
        f = files[rng.integers(len(files))]
        os.unlink(os.path.join(path, f))
        return f"{f} deleted"
    if files:  # one file mutated with a valid checksum
        f = files[rng.integers(len(files))]
        with open(os.path.join(path, f), "rb") as src:
            data = src.read()
        try:
            data = mutator.mutate(data, rng)
        except Exception:  # noqa: BLE001 - a file the first of two mutations left unreadable
            return f"{f} not mutated again (the mutators cannot read what the first made)"
        with open(os.path.join(path, f), "wb") as dst:
            dst.write(data)
        return f"{f} mutated (checksum recomputed)"
    return "no index files"


_DATABASE = (_sql_value, _sql_value, _sql_value, _meta_value, _meta_value, _row_change,
             _row_change, _schema_change)


class Mutation(NamedTuple):
    what: str
    answers_checked: bool  # False when a page was overwritten (see collection_oracle)


def mutate(path: str, rng) -> Mutation:
    """One mutation of the collection at path (sometimes two)."""
    done, checked = [], True
    for _ in range(2 if rng.integers(6) == 0 else 1):
        choice = rng.integers(14)
        if choice < len(_DATABASE):
            done.append(_sql(path, _DATABASE[choice], rng))
        elif choice < 10:
            done.append(_index_files(path, rng))
        elif choice < 13:
            done.append(_manifest_change(path, rng))
        else:
            done.append(_page_damage(path, rng))
            checked = False
    return Mutation("; ".join(done), checked)


def _short(value, n: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= n else text[: n - 3] + "..."
