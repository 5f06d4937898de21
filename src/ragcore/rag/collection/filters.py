"""The metadata filter language of Collection, compiled to a SQLite expression.

A filter is a dict, as Chroma, LanceDB and MongoDB users write them:

- ``{"field": value}``: equality (value a str, int, float, bool or None).
- ``{"field": {"$eq" | "$ne" | "$gt" | "$gte" | "$lt" | "$lte": value}}``; several
  operators on one field all apply (``{"year": {"$gte": 2000, "$lt": 2010}}``).
- ``{"field": {"$in" | "$nin": [values]}}``, ``{"field": {"$exists": True | False}}``.
- ``{"$and": [filters]}``, ``{"$or": [filters]}``, ``{"$not": filter}``; several keys in
  one dict are joined by AND.

``$ne`` and ``$nin`` also match documents without the field (MongoDB's rule). A field
must be declared in the collection's metadata_schema or present in some document's
metadata, and a value must have that field's type (int and float compare as numbers;
ranges take numbers or strings). Anything else is a FilterError naming the problem.
"""

from __future__ import annotations

import json

from ...errors import FilterError

_COMPARE = {"$eq": "=", "$ne": "!=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_LISTS = ("$in", "$nin")
FIELD_OPERATORS = tuple(_COMPARE) + _LISTS + ("$exists",)
LOGICAL_OPERATORS = ("$and", "$or", "$not")
# Types a field's values may have, as recorded in the fields table (bool before int: a
# bool is an int in Python).
SCALAR_TYPES = ("bool", "int", "float", "str", "null")


def value_type(value) -> str:
    """The recorded type of one metadata value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return "list" if isinstance(value, list) else "dict"


def field_path(field: str) -> str:
    """The JSON path of a top-level metadata field."""
    return "$." + json.dumps(field)


def compile_filter(flt, fields: dict) -> tuple[str, list]:
    """(SQL expression over the column ``metadata``, parameters).

    fields: name -> set of recorded types (see value_type) of every known field.
    """
    if not isinstance(flt, dict):
        raise FilterError(f"filter must be a dict, got {type(flt).__name__}")
    if not flt:
        return "1", []
    parts, params = [], []
    for key, cond in flt.items():
        sql, p = _compile_key(key, cond, fields)
        parts.append(sql)
        params += p
    return "(" + " AND ".join(parts) + ")", params


def _compile_key(key, cond, fields) -> tuple[str, list]:
    if not isinstance(key, str):
        raise FilterError(f"filter keys must be field names or operators, got {key!r}")
    if key in ("$and", "$or"):
        if not isinstance(cond, list) or not cond:
            raise FilterError(f"{key} takes a non-empty list of filters, got {cond!r}")
        compiled = [compile_filter(c, fields) for c in cond]
        joiner = " AND " if key == "$and" else " OR "
        return ("(" + joiner.join(s for s, _ in compiled) + ")",
                [p for _, ps in compiled for p in ps])
    if key == "$not":
        sql, params = compile_filter(cond, fields)
        return f"(NOT COALESCE({sql}, 0))", params
    if key.startswith("$"):
        raise FilterError(f"unknown filter operator {key!r}; expected a field name or one of "
                          f"{', '.join(LOGICAL_OPERATORS)}")
    if key not in fields:
        known = ", ".join(sorted(fields)) or "none yet"
        raise FilterError(f"unknown filter field {key!r}; known metadata fields: {known}")
    types = fields[key]
    if isinstance(cond, dict):
        if not cond:
            raise FilterError(f"filter on {key!r}: an empty operator dict")
        compiled = [_compile_operator(key, op, value, types) for op, value in cond.items()]
        return "(" + " AND ".join(s for s, _ in compiled) + ")", [p for _, ps in compiled for p in ps]
    return _compile_operator(key, "$eq", cond, types)


def _compile_operator(field, op, value, types) -> tuple[str, list]:
    path = field_path(field)
    x = f"json_extract(metadata, '{_quoted(path)}')"
    if op == "$exists":
        if not isinstance(value, bool):
            raise FilterError(f"filter on {field!r}: $exists takes True or False, got {value!r}")
        test = "IS NOT NULL" if value else "IS NULL"
        return f"(json_type(metadata, '{_quoted(path)}') {test})", []
    if op in _LISTS:
        if not isinstance(value, (list, tuple)):
            raise FilterError(f"filter on {field!r}: {op} takes a list of values, got {value!r}")
        for v in value:
            _check_value(field, op, v, types)
        values = [_sql_value(v) for v in value if v is not None]
        has_null = any(v is None for v in value)
        marks = ", ".join("?" * len(values))
        inside = f"{x} IN ({marks})" if values else "0"
        if op == "$in":
            return (f"({inside} OR {x} IS NULL)" if has_null else f"({inside})"), values
        if has_null:
            return f"({x} IS NOT NULL AND NOT ({inside}))", values
        return f"({x} IS NULL OR NOT ({inside}))", values
    if op not in _COMPARE:
        raise FilterError(f"unknown filter operator {op!r} on {field!r}; expected one of "
                          f"{', '.join(FIELD_OPERATORS)}")
    _check_value(field, op, value, types)
    if value is None:
        if op not in ("$eq", "$ne"):
            raise FilterError(f"filter on {field!r}: {op} cannot compare with None")
        return f"({x} IS {'NOT ' if op == '$ne' else ''}NULL)", []
    if op == "$ne":
        return f"({x} IS NULL OR {x} != ?)", [_sql_value(value)]
    if op == "$eq":
        return f"({x} = ?)", [_sql_value(value)]
    # A range compares like with like (SQLite orders every number before every text).
    kinds = "'text'" if isinstance(value, str) else "'integer', 'real'"
    return (f"(json_type(metadata, '{_quoted(path)}') IN ({kinds}) AND {x} {_COMPARE[op]} ?)",
            [_sql_value(value)])


def _check_value(field, op, value, types) -> None:
    kind = value_type(value)
    if kind in ("list", "dict"):
        raise FilterError(f"filter on {field!r}: {op} takes a str, int, float, bool or None, "
                          f"got a {kind}")
    if op in ("$gt", "$gte", "$lt", "$lte") and kind not in ("int", "float", "str"):
        raise FilterError(f"filter on {field!r}: {op} takes a number or a str, got {value!r}")
    if kind == "null":
        return
    numeric = {"int", "float"}
    stored = set(types) - {"null"}
    if not stored or kind in stored or (kind in numeric and stored & numeric):
        return
    raise FilterError(f"filter on {field!r}: {op} got {value!r} ({kind}), but the field holds "
                      f"{' / '.join(sorted(stored))} values")


def _sql_value(value):
    return int(value) if isinstance(value, bool) else value


def _quoted(path: str) -> str:
    return path.replace("'", "''")
