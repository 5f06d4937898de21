"""The JSON of the service's answers: orjson when it is installed (it writes the Match
dataclasses of a search directly, at a fraction of the json module's cost per answer), else
the json module, with the same result. (orjson would write a NaN as null where the json
module refuses it; answers hold none: the scores of matches are finite.)"""

from __future__ import annotations

import dataclasses
import json

try:
    import orjson
except ImportError:  # pragma: no cover - orjson comes with most environments of the service
    orjson = None


def dumps(answer) -> bytes:
    """answer as compact UTF-8 JSON; Matches (dataclasses) are written as objects of their
    fields."""
    if orjson is not None:
        return orjson.dumps(answer)
    return json.dumps(answer, ensure_ascii=False, allow_nan=False, separators=(",", ":"),
                      default=_fields).encode("utf-8")


def _fields(obj):
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")
