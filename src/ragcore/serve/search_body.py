"""POST /search's body read without pydantic when it has the common shape, and the JSON of
the answers. A body this module is not sure of is left to the SearchRequest model, so
every refusal is still the model's (the same status, field and message): ``parse`` only
ever accepts bodies that the model accepts too, with the same values (a vector's entries:
the same float32 values; the parser reads an integer beyond 64 bits as a float).

orjson (when installed) parses and writes: its parser refuses what the model's JSON parser
refuses or turns into something odd (NaN, infinities, lone surrogates, invalid UTF-8), and
such a body then goes to the model. Without orjson every body goes to the model and
answers are written by the json module.
"""

from __future__ import annotations

import dataclasses
import json

from . import limits
from .schemas import SearchRequest

try:
    import orjson
except ImportError:  # pragma: no cover - orjson comes with the serve extra's environment
    orjson = None

_MODES = ("hybrid", "dense", "sparse")
_BYS = ("chunk", "document")
_FUSIONS = ("rrf", "wsum", "combsum", "combmnz")
_NUMBERS = {float, int}


def parse(body: bytes) -> SearchRequest | None:
    """The request, or None: the body is not plain enough to be sure of (the model decides)."""
    if orjson is None:
        return None
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if type(data) is not dict or not all(_CHECKS.get(name, _no)(value)
                                         for name, value in data.items()):
        return None
    return SearchRequest.model_construct(**data)


def dumps(answer) -> bytes:
    """answer as compact UTF-8 JSON; Matches (dataclasses) are written as objects of their
    fields. A NaN or infinity is an error, as for the json module with allow_nan=False."""
    if orjson is not None:
        return orjson.dumps(answer)
    return json.dumps(answer, ensure_ascii=False, allow_nan=False, separators=(",", ":"),
                      default=_fields).encode("utf-8")


def _fields(obj):
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def _no(value) -> bool:
    return False


def _text(value) -> bool:
    return type(value) is str and len(value) <= limits.MAX_QUERY_CHARS


def _texts(value) -> bool:
    return value is None or (type(value) is list and 1 <= len(value) <= limits.MAX_QUERIES
                             and all(map(_text, value)))


def _vector(value) -> bool:
    if type(value) is not list or not 1 <= len(value) <= limits.MAX_DIM:
        return False
    return set(map(type, value)) <= _NUMBERS


def _int_in_range(value) -> bool:
    return type(value) is int and 1 <= value <= limits.MAX_K


_CHECKS = {
    "query": lambda v: v is None or _text(v),
    "queries": _texts,
    "vector": lambda v: v is None or _vector(v),
    "vectors": lambda v: v is None or (type(v) is list and 1 <= len(v) <= limits.MAX_QUERIES
                                       and all(map(_vector, v))),
    "k": _int_in_range,
    "k0": lambda v: v is None or _int_in_range(v),
    "mode": lambda v: type(v) is str and v in _MODES,
    "filter": lambda v: v is None or type(v) is dict,
    "fusion": lambda v: v is None or (type(v) is str and v in _FUSIONS),
    "by": lambda v: type(v) is str and v in _BYS,
    "include_text": lambda v: type(v) is bool,
}
