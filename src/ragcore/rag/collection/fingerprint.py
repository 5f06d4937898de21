"""The fingerprint of the encoder that made a collection's vectors, so that queries and
new documents are never embedded by another model than the stored vectors were.

A fingerprint is a dict:
  model       the model file's path for an encoder that runs one (a BiEncoder); else the
              encoder's ``fingerprint`` attribute when it has one (a str naming the model:
              encoders of different classes that make the same vectors may declare the
              same), else its class name
  dim         the vector dimension (None while unknown: an encoder without a ``dim``
              attribute; the collection's first vectors then set it)
  normalized  whether the vectors are L2-normalised (None when the encoder does not say)
  checksum    sha256 of the model file, when there is one
  pooling     a BiEncoder's pooling
An encoder whose ``fingerprint`` attribute is a dict gives its whole fingerprint (a wrapper
of another encoder gives that encoder's).
"""

from __future__ import annotations

import functools
import hashlib
import os

_SHOWN_DIGITS = 12  # of a checksum, in messages


def of(encoder) -> dict:
    """The fingerprint of encoder."""
    declared = getattr(encoder, "fingerprint", None)
    if isinstance(declared, dict):  # each value of the type a stored one is checked for
        checksum, normalized = declared.get("checksum"), declared.get("normalized")
        return {"model": str(declared.get("model")), "dim": declared.get("dim"),
                "normalized": normalized if isinstance(normalized, bool) else None,
                "checksum": None if checksum is None else str(checksum),
                **({"pooling": str(declared["pooling"])} if "pooling" in declared else {})}
    path = _model_file(encoder)
    if path is not None:
        model = path
    elif declared is not None:
        model = str(declared)
    else:
        model = type(encoder).__qualname__
    out = {"model": model, "dim": declared_dim(encoder), "normalized": _normalized(encoder),
           "checksum": file_checksum(path) if path is not None else None}
    pooling = getattr(encoder, "pooling", None)
    if isinstance(pooling, str):
        out["pooling"] = pooling
    return out


def with_dim(fp: dict, dim) -> dict:
    """fp with its dimension set from the collection's vectors when the encoder did not say."""
    return fp if fp.get("dim") is not None or dim is None else {**fp, "dim": int(dim)}


def differences(stored: dict, current: dict) -> list[str]:
    """How current differs from stored (empty: the same model). The checksum decides when
    both have one (the same file at another path is the same model); a value one side does
    not know is not compared."""
    out = []
    if stored.get("checksum") and current.get("checksum"):
        if stored["checksum"] != current["checksum"]:
            out.append("the model file's checksum")
    elif stored.get("model") != current.get("model"):
        out.append("the model")
    for key, what in (("dim", "the dimension"), ("normalized", "normalisation"),
                      ("pooling", "pooling")):
        a, b = stored.get(key), current.get(key)
        if a is not None and b is not None and a != b:
            out.append(f"{what} ({a} vs {b})")
    return out


def describe(fp: dict) -> str:
    """fp in words, for messages: 'model (384-d, normalised, sha256 0123456789ab)'."""
    parts = [f"{fp['dim']}-d" if fp.get("dim") is not None else "dimension unknown"]
    if fp.get("normalized") is not None:
        parts.append("normalised" if fp["normalized"] else "not normalised")
    if fp.get("pooling"):
        parts.append(f"{fp['pooling']} pooling")
    if fp.get("checksum"):
        parts.append(f"sha256 {fp['checksum'][:_SHOWN_DIGITS]}")
    return f"{fp['model']} ({', '.join(parts)})"


def declared_dim(encoder):
    """The dimension encoder declares (its ``dim``), or None: nothing is encoded to learn it
    (some encoders call a paid service, or cannot encode at all)."""
    dim = getattr(encoder, "dim", None)
    return int(dim) if isinstance(dim, int) and not isinstance(dim, bool) and dim > 0 else None


def _normalized(encoder):
    value = getattr(encoder, "normalize", None)
    return value if isinstance(value, bool) else None


def _model_file(encoder):
    """The path of the model file encoder runs (a BiEncoder's model.path), or None."""
    path = getattr(getattr(encoder, "model", None), "path", None)
    if path is None or not os.path.isfile(path):
        return None
    return os.path.abspath(os.fspath(path))


def file_checksum(path: str) -> str:
    stat = os.stat(path)
    return _sha256(path, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    # size and mtime key the cache: a model file rewritten in place is hashed again.
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
