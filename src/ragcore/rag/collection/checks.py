"""Argument checks and settings of Collection: each bad argument is refused with an error
that names it, before anything is written."""

from __future__ import annotations

import json
import os

from ..._util.arrays import check_choice, check_positive_int
from ...errors import CollectionError
from . import store
from .filters import SCALAR_TYPES

DENSE_DEFAULTS = {"flat": {"kind": "flat", "dtype": "float32", "metric": "ip"},
                  "ivf": {"kind": "ivf", "nlist": 256, "nprobe": 32, "dtype": "float32",
                          "metric": "ip"},
                  "hnsw": {"kind": "hnsw", "M": 16, "ef_construction": 200, "ef": 64,
                           "dtype": "float32", "metric": "ip"}}
SHOWN_MAX = 20  # an error naming bad entries names at most this many, then counts the rest


def listing(items) -> str:
    """The first SHOWN_MAX items, and how many more, for a message naming bad entries."""
    items = list(items)
    shown = ", ".join(repr(i) for i in items[:SHOWN_MAX])
    rest = len(items) - SHOWN_MAX
    return f"[{shown}, ... and {rest} more]" if rest > 0 else f"[{shown}]"


def refuse(name: str, problems: list, total: int) -> None:
    """Raises one error naming every bad entry (the first SHOWN_MAX, then a count), so a
    bulk call is fixed in one round. problems: (is a type error, text) pairs; the error is a
    TypeError when any is, a CollectionError otherwise."""
    if not problems:
        return
    shown = "; ".join(text for _, text in problems[:SHOWN_MAX])
    rest = len(problems) - SHOWN_MAX
    more = f"; and {rest} more" if rest > 0 else ""
    error = TypeError if any(is_type for is_type, _ in problems) else CollectionError
    raise error(f"{name}: {len(problems)} of {total} entries are bad: {shown}{more}; fix or "
                "drop them and call again (nothing was written)")


def prepare_directory(path: str) -> None:
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise CollectionError(f"{path}: exists and is not a directory")
        if os.path.exists(os.path.join(path, store.DB_NAME)):
            raise CollectionError(f"{path}: already a collection; use Collection.open")
        if os.listdir(path):
            raise CollectionError(f"{path}: the directory is not empty")
        if not os.access(path, os.W_OK):
            raise PermissionError(f"{path}: no write permission")
        return
    parent = os.path.dirname(os.path.abspath(path))
    if not os.access(parent, os.W_OK):
        raise PermissionError(f"{path}: no write permission in {parent}")
    os.makedirs(path)


def describe(encoder) -> str:
    # A str has an encode method too: a model name passed where an encoder goes.
    if isinstance(encoder, (str, bytes)) or not callable(getattr(encoder, "encode", None)):
        raise TypeError(f"encoder must have encode(texts) -> vectors (a ragcore BiEncoder; for "
                        f"a model name or file: BiEncoder(name)), got {type(encoder).__name__}")
    return repr(encoder)


def is_bi_encoder(encoder) -> bool:
    return encoder is not None and hasattr(encoder, "tokenizer") and \
        hasattr(encoder.tokenizer, "token_spans")


def chunker_settings(chunker):
    if chunker == "none":
        return "none"
    if chunker is None:
        return {"chunk_size": 200, "overlap": 40}
    if not hasattr(chunker, "chunk"):
        raise TypeError(f"chunker must be a Chunker, None or 'none', got {type(chunker).__name__}")
    return {"chunk_size": int(getattr(chunker, "chunk_size", 200)),
            "overlap": int(getattr(chunker, "overlap", 40))}


def dense_settings(dense) -> dict:
    if isinstance(dense, str):
        check_choice(dense, "dense", tuple(DENSE_DEFAULTS))
        return dict(DENSE_DEFAULTS[dense])
    if not isinstance(dense, dict):
        raise TypeError(f"dense must be 'flat', 'ivf', 'hnsw' or a dict of options, "
                        f"got {type(dense).__name__}")
    kind = check_choice(dense.get("kind", "flat"), "dense['kind']", tuple(DENSE_DEFAULTS))
    out = dict(DENSE_DEFAULTS[kind])
    unknown = set(dense) - set(out)
    if unknown:
        raise CollectionError(f"dense: unknown options {sorted(unknown)}; expected {sorted(out)}")
    out.update(dense)
    check_choice(out["metric"], "dense['metric']", ("ip", "cosine", "l2"))
    if kind == "ivf":
        check_positive_int(out["nlist"], "dense['nlist']")
        check_positive_int(out["nprobe"], "dense['nprobe']")
    from ...dense.flat import FlatIndex
    from ...dense.hnsw import HNSWIndex
    from ...dense.ivf import IVFIndex

    try:  # every option checked now, before anything is written
        if kind == "hnsw":
            HNSWIndex(1, out["metric"], out["M"], out["ef_construction"], out["dtype"], ef=out["ef"])
        else:  # an IVF collection is flat until it has enough vectors to train
            FlatIndex(1, metric=out["metric"], dtype=out["dtype"])
        if kind == "ivf":
            IVFIndex(1, out["nlist"], metric=out["metric"], dtype=out["dtype"])
    except ValueError as err:
        raise ValueError(f"dense: {err}") from None
    return out


def bm25_settings(bm25) -> dict:
    """The BM25 options a new collection records: the shared defaults (English stopwords and
    stemming) under the caller's. A collection keeps what it recorded when it was made."""
    from ...sparse.bm25 import BM25Index
    from ..defaults import bm25_options

    options = bm25_options(bm25)
    BM25Index(**options)  # checks every option now, before anything is written
    return options


def check_schema(schema) -> dict:
    if schema is None:
        return {}
    if not isinstance(schema, dict):
        raise TypeError("metadata_schema must be a dict {field: 'str' | 'int' | 'float' | 'bool'}")
    for name, kind in schema.items():
        if not isinstance(name, str) or not name or name.startswith("$") or \
                any(c in name for c in '"\\'):
            raise CollectionError(f"metadata_schema: bad field name {name!r}")
        check_choice(kind, f"metadata_schema[{name!r}]", tuple(t for t in SCALAR_TYPES if t != "null"))
    return dict(schema)


def has_type(value, kind: str) -> bool:
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, str)


def check_texts(texts) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("texts must be a list of str; wrap one text in a list")
    try:
        texts = list(texts)
    except TypeError:
        raise TypeError(f"texts must be a list of str, got {type(texts).__name__}") from None
    problems = []
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            problems.append((True, f"texts[{i}] must be a str, got {type(t).__name__}"))
        elif not t.strip():
            problems.append((False, f"texts[{i}] is empty or only whitespace"))
    refuse("texts", problems, len(texts))
    return texts


def id_problems(name: str, i: int, v) -> list:
    """The problem with one id, as refuse takes them (an empty list for a good id)."""
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        return [(True, f"{name}[{i}] must be a str or an int, got {type(v).__name__}")]
    if isinstance(v, str) and not v:
        return [(False, f"{name}[{i}] is an empty string")]
    if isinstance(v, int) and not -2**63 <= v < 2**63:
        return [(False, f"{name}[{i}] = {v} does not fit in 64 bits")]
    return []


def check_metadata_rows(metadata: list, schema: dict) -> list[dict]:
    """Each metadata dict as it will be stored (through JSON); every bad one named."""
    out, problems = [], []
    for i, meta in enumerate(metadata):
        meta = {} if meta is None else meta
        found = _metadata_problems(i, meta, schema)
        if not found:
            try:
                out.append(json.loads(json.dumps(meta, allow_nan=False)))
            except (TypeError, ValueError) as err:
                found = [(True, f"metadata[{i}] is not JSON-serialisable ({err})")]
        problems += found
    refuse("metadata", problems, len(metadata))
    return out


def _metadata_problems(i: int, meta, schema: dict) -> list:
    if not isinstance(meta, dict):
        return [(True, f"metadata[{i}] must be a dict, got {type(meta).__name__}")]
    problems = []
    for key, value in meta.items():
        if not isinstance(key, str) or not key or key.startswith("$") or \
                any(c in key for c in '"\\'):
            problems.append((False, f"metadata[{i}]: key {key!r} must be a non-empty str "
                                    "without quotes or backslashes, not starting with $"))
        elif key in schema and value is not None and not has_type(value, schema[key]):
            problems.append((True, f"metadata[{i}][{key!r}] must be {schema[key]} (the "
                                   f"metadata_schema), got {type(value).__name__}"))
    return problems


def check_queries(queries) -> list[str]:
    if isinstance(queries, (bytes, dict)) or not hasattr(queries, "__iter__"):
        raise TypeError(f"query must be a str or a list of str, got {type(queries).__name__}")
    queries = list(queries)
    if not queries:
        raise CollectionError("query: an empty list of queries")
    for i, q in enumerate(queries):
        if not isinstance(q, str):
            raise TypeError(f"query[{i}] must be a str, got {type(q).__name__}")
    return queries
