"""indexes.json, the manifest of a Collection's index files: which files hold the indexes,
the database change number they reflect, the change of the last re-embedding, a digest of
each file's chunk ids, and a summary of those ids that SQL computes from the database in
one pass (ids_summary, store.chunk_ids_summary) to tell whether its chunks are still them.

``read`` returns the manifest only when every value is of the type and form ``Indexes.save``
writes (file names of this directory's index files, counts, digests); anything else is
no manifest, and the indexes are rebuilt from the database.
"""

from __future__ import annotations

import hashlib
import json
import os
import re

import numpy as np

NAME = "indexes.json"
_FILE = {"bm25": re.compile(r"bm25-[0-9]{1,19}\.rci"), "dense": re.compile(r"dense-[0-9]{1,19}\.rci")}
_DIGEST = re.compile(r"[0-9a-f]{32}")
_COUNTS = ("change", "ivf_trained_at", "embeddings_change")
_PRIME = 2_147_483_647  # 2**31 - 1: id mod it, times a multiplier below it, fits in 62 bits
MULTIPLIERS = (1, 1_103_515_245, 69_069)


def ids_digest(ids) -> str:
    """A digest of a set of chunk ids (sorted): an index file another flush wrote (copied
    over this one, or left by a crash) holds other ids, and so does a database whose
    chunks were changed behind the files' back."""
    ordered = np.sort(np.asarray(ids, dtype=np.int64))
    return hashlib.blake2b(ordered.tobytes(), digest_size=16).hexdigest()


def ids_summary(ids) -> list[int]:
    """[count, and for each multiplier m the sum of (id mod p) * m mod p] of a set of chunk
    ids: store.chunk_ids_summary computes the same of the database's chunks inside SQLite,
    without reading each id into Python."""
    reduced = np.asarray(ids, dtype=np.int64) % _PRIME
    return [int(len(reduced)), *(int((reduced * m % _PRIME).sum()) for m in MULTIPLIERS)]


def summary_sql(table: str, column: str) -> str:
    """The SELECT that computes ids_summary of table.column."""
    sums = ", ".join(f"COALESCE(SUM({column} % {_PRIME} * {m} % {_PRIME}), 0)"
                     for m in MULTIPLIERS)
    return f"SELECT COUNT(*), {sums} FROM {table}"


def read(directory: str, format_version: int):
    """The manifest in directory, or None when it is missing or not one Indexes.save wrote."""
    try:
        with open(os.path.join(directory, NAME), "rb") as f:
            manifest = json.loads(f.read())
    except (OSError, ValueError):
        return None
    return manifest if _valid(manifest, format_version) else None


def _valid(manifest, format_version: int) -> bool:
    if not isinstance(manifest, dict) or _count(manifest.get("format_version")) != format_version:
        return False
    if _count(manifest.get("change")) is None or any(
            key in manifest and _count(manifest[key]) is None for key in _COUNTS):
        return False
    if not isinstance(manifest.get("bm25"), str) or not _FILE["bm25"].fullmatch(manifest["bm25"]):
        return False
    dense = manifest.get("dense")
    if dense is not None and (not isinstance(dense, str) or not _FILE["dense"].fullmatch(dense)):
        return False
    summary = manifest.get("chunks")
    if summary is not None and (not isinstance(summary, list) or len(summary) != 1 + len(
            MULTIPLIERS) or any(_count(v) is None for v in summary)):
        return False
    return all(manifest.get(key) is None or isinstance(manifest[key], str) and
               _DIGEST.fullmatch(manifest[key]) for key in ("bm25_ids", "dense_ids"))


def _count(value):
    """value if it is a non-negative int below 2**63 (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        return None
    return value
