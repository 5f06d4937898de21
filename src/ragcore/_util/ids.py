"""Checks of user ids shared by the indexes: new ids on add, known ids on remove."""

from __future__ import annotations

import numpy as np

from .arrays import as_id_array, raw_ids

# The largest id: 2**63 - 1 is refused (as_id_array), so that next_id = largest id + 1
# still fits in an int64.
MAX_ID = 2**63 - 2


def auto_ids(next_id: int, count: int) -> np.ndarray:
    """count consecutive ids from next_id; ValueError when the last would pass MAX_ID
    (it would be an id that a later add with explicit ids or a load refuses)."""
    if next_id + count - 1 > MAX_ID:
        raise ValueError(f"no automatic ids left: {count} new ids from {next_id} would pass "
                         "the largest id, 2**63 - 2; pass ids explicitly")
    return np.arange(next_id, next_id + count, dtype=np.int64)


def check_new_ids(ids, count: int, sorted_ids: np.ndarray, next_id: int) -> np.ndarray:
    """The ids of `count` new vectors: consecutive from next_id when ids is None,
    else the given ids, which must be unique and not among sorted_ids."""
    if ids is None:
        return auto_ids(next_id, count)
    new_ids = as_id_array(ids, "ids", count)
    sorted_new = np.sort(new_ids)
    if count > 1 and (sorted_new[1:] == sorted_new[:-1]).any():
        dup = sorted_new[1:][sorted_new[1:] == sorted_new[:-1]][0]
        raise ValueError(f"ids contains {int(dup)} more than once; ids must be unique")
    clash = np.isin(sorted_new, sorted_ids, assume_unique=True)
    if clash.any():
        raise ValueError(f"ids: {int(sorted_new[clash][0])} is already in the index")
    return new_ids


def check_known_ids(ids, sorted_ids: np.ndarray) -> np.ndarray:
    """ids to remove as int64; unknown ids are an error (nothing is removed)."""
    arr = np.atleast_1d(raw_ids(ids, "ids"))
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"ids must hold integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False).ravel()
    unknown = arr[~np.isin(arr, sorted_ids)]
    if unknown.size:
        shown = ", ".join(str(int(i)) for i in unknown[:5])
        raise ValueError(
            f"ids: {unknown.size} id(s) are not in the index (e.g. {shown}); nothing removed"
        )
    return arr


def sorted_unique_ids(ids: np.ndarray) -> np.ndarray:
    """ids read from a file, sorted; raises ValueError unless 1-D int64, unique, non-negative."""
    if ids.dtype != np.int64 or ids.ndim != 1:
        raise ValueError("ids must be 1-D int64")
    sorted_ids = np.sort(ids)
    if len(ids) and (sorted_ids[0] < 0 or (sorted_ids[1:] == sorted_ids[:-1]).any()):
        raise ValueError("ids must be unique and non-negative")
    return sorted_ids
