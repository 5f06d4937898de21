"""Checks, when a collection is opened, that its database is as ragcore wrote it: the
tables of its schema unchanged and no trigger added, and every meta value (format
version, change numbers, settings, dimension, id type, fingerprint) of its type and range.

Each check reads a few rows (sqlite_master, the meta table, one document and one
embedding), not the collection. A database that fails one was changed by something other
than ragcore (or damaged): CollectionCorruptError names the file and what to do. Values
inside the rows are checked where they are read (see store).
"""

from __future__ import annotations

import json
import re

from ..._util.arrays import MAX_DIM
from . import store

_ID_TYPES = ("int", "str")
_ID_CLASSES = {"int": (int,), "str": (str,)}
_REQUIRED = {"encoder", "chunker", "dense", "bm25"}
_KEYS = _REQUIRED | {"dim", "id_type", "schema"}
_SCALARS = (str, int, float, bool, type(None))
_MAX_SEQUENCE = 2**62  # AUTOINCREMENT's last id: far above any count of rows written


def _normalised_sql(sql: str) -> str:
    return re.sub(r"\s+", " ", sql).strip()


def _expected_tables() -> dict:
    out = {}
    for statement in store.SCHEMA.split(";"):
        statement = _normalised_sql(statement)
        match = re.match(r"CREATE TABLE (\w+) ", statement)
        if match:
            out[match.group(1)] = statement
    return out


_TABLES = _expected_tables()


def check_schema(conn, db: str) -> None:
    """Every table of the schema as created (columns, types, keys, UNIQUE), no trigger."""
    rows = conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    tables = {name: sql for kind, name, sql in rows if kind == "table"}
    for name, want in _TABLES.items():
        if name not in tables:
            raise store.damaged(db, f"the table {name} is missing")
        if not isinstance(tables[name], str) or _normalised_sql(tables[name]) != want:
            raise store.damaged(db, f"the table {name} is not as ragcore created it: "
                                    f"{tables[name]!r}")
    triggers = [name for kind, name, _ in rows if kind == "trigger"]
    if triggers:
        raise store.damaged(db, f"triggers that ragcore did not create: {triggers}")
    for name, seq in conn.execute("SELECT name, seq FROM sqlite_sequence").fetchall():
        if type(seq) is not int or not 0 <= seq <= _MAX_SEQUENCE:
            raise store.damaged(db, f"the id sequence of {name!r} is {seq!r}")


def check_meta(conn, db: str, meta: dict, settings) -> dict:
    """The meta values and settings a collection runs on, of their types and ranges, and
    agreeing with one stored document and embedding; returns the settings with the
    defaults of options that older collections did not record."""
    change = _integer(db, meta, "change", required=True)
    embeddings_change = _integer(db, meta, "embeddings_change")
    if embeddings_change is not None and embeddings_change > change:
        raise store.damaged(db, f"the meta value embeddings_change ({embeddings_change}) is "
                                f"above the change number ({change})")
    dim = _integer(db, meta, "dim")
    if dim is not None and not 1 <= dim <= MAX_DIM:
        raise store.damaged(db, f"the meta value dim is {dim}, not in [1, {MAX_DIM}]")
    id_type = meta.get("id_type")
    if id_type is not None and id_type not in _ID_TYPES:
        raise store.damaged(db, f"the meta value id_type is {id_type!r}, not one of {_ID_TYPES}")
    if "fingerprint" in meta:
        _check_fingerprint(db, store.stored(db, json.loads, meta["fingerprint"]))
    settings = check_settings(db, settings)
    _check_first_rows(conn, db, id_type, dim)
    return settings


def _integer(db: str, meta: dict, key: str, required: bool = False):
    if key not in meta:
        if required:
            raise store.damaged(db, f"the meta value {key} is missing")
        return None
    value = meta[key]
    if not isinstance(value, str) or not re.fullmatch(r"[0-9]{1,19}", value) or \
            int(value) >= 2**63:
        raise store.damaged(db, f"the meta value {key} is {value!r}, not a count")
    return int(value)


# The type of each value fingerprint.of writes (what fingerprint compares and describes).
_FINGERPRINT_TYPES = {"model": (str,), "dim": (int, type(None)), "normalized": (bool, type(None)),
                      "checksum": (str, type(None)), "pooling": (str, type(None))}


def _check_fingerprint(db: str, fp) -> None:
    """A dict with the model's name, a dimension or None, normalized a bool or None, the
    checksum and pooling text or None, and any other value a scalar."""
    if not isinstance(fp, dict) or "model" not in fp or isinstance(fp.get("dim"), bool) or \
            not all(isinstance(fp[k], kinds) for k, kinds in _FINGERPRINT_TYPES.items()
                    if k in fp) or \
            not all(isinstance(v, _SCALARS) for v in fp.values()):
        raise store.damaged(db, f"the stored encoder fingerprint is not valid: {_short(fp)}")


def check_settings(db: str, settings) -> dict:
    """The settings JSON as create wrote it, each option one that create accepts; returns
    it with the defaults of dense options and a schema where older collections lack them."""
    from . import checks

    if not isinstance(settings, dict) or not _REQUIRED <= set(settings) <= _KEYS:
        raise store.damaged(db, f"the stored settings are not valid: {_short(settings)}")
    try:
        if not isinstance(settings["encoder"], str):
            raise TypeError(f"encoder {settings['encoder']!r}")
        chunker = settings["chunker"]
        if chunker != "none":
            if not isinstance(chunker, dict) or set(chunker) != {"chunk_size", "overlap"}:
                raise TypeError(f"chunker {chunker!r}")
            size, overlap = chunker["chunk_size"], chunker["overlap"]
            if any(isinstance(v, bool) or not isinstance(v, int) for v in (size, overlap)) or \
                    not 0 <= overlap < size:
                raise ValueError(f"chunker {chunker!r}")
        dense = _check_dense(settings["dense"])
        if not isinstance(settings["bm25"], dict):
            raise TypeError(f"bm25 {settings['bm25']!r}")
        from ...sparse.bm25 import BM25Index

        BM25Index(**settings["bm25"])
        if settings.get("dim") is not None or settings.get("id_type") is not None:
            raise ValueError("dim and id_type belong in the meta table")
        if checks.check_schema(settings.get("schema", {})) != settings.get("schema", {}):
            raise ValueError(f"schema {settings['schema']!r}")
    except (TypeError, ValueError, KeyError) as err:
        raise store.damaged(db, f"the stored settings are not valid ({err})") from None
    return {**settings, "dense": dense, "schema": settings.get("schema", {})}


def _check_dense(dense) -> dict:
    """Options create accepts (checks.dense_settings builds an index of each)."""
    from . import checks

    if not isinstance(dense, dict):
        raise TypeError(f"dense {dense!r}")
    return checks.dense_settings(dense)


def _check_first_rows(conn, db: str, id_type, dim) -> None:
    """The first document's id is of the recorded id type, the first embedding of dim
    float32 values (a changed id type or dimension shows in any row)."""
    row = conn.execute("SELECT user_id FROM documents ORDER BY rowid LIMIT 1").fetchone()
    if row is not None:
        if id_type is None:
            raise store.damaged(db, "documents are stored but the meta table has no id_type")
        check_user_id(db, row[0], id_type)
    row = conn.execute("SELECT length(vector), typeof(vector) FROM embeddings LIMIT 1").fetchone()
    if row is not None and (dim is None or row != (4 * dim, "blob")):
        raise store.damaged(db, f"a stored embedding is not {dim} float32 values")


def check_user_id(db: str, value, id_type):
    """value, a stored user id, of the collection's id type (and not the empty string,
    which add refuses)."""
    if type(value) not in _ID_CLASSES.get(id_type, (int, str)) or value == "":
        raise store.damaged(db, f"a stored document id {_short(value)} is not of the "
                                f"collection's id type ({id_type})")
    return value


def _short(value, n: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= n else text[: n - 3] + "..."

