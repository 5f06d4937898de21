"""The ``allow=`` argument of search: which ids a result may have.

Users pass the allowed ids (a list or an integer array) or a boolean mask
indexed by id (``mask[i]`` allows id i; ids beyond the mask are not allowed).
The native scans take one byte per key: keyed by id when the ids are dense
enough for a mask, otherwise keyed by stored row.
"""

from __future__ import annotations

import numpy as np

from .arrays import raw_ids

# A mask by id costs max(id) + 1 bytes; above this many (and above a few bytes
# per stored row) the mask is built by row instead, from the stored ids.
_MASK_BY_ID_MIN_BYTES = 1 << 20
_MASK_BY_ID_BYTES_PER_ROW = 16


def allow_mask(allow, stored_ids: np.ndarray):
    """(mask uint8, by_row) for the native search, or (None, False) without a filter.

    stored_ids: the index's ids in row order (used only for sparse ids).
    """
    if allow is None:
        return None, False
    arr = raw_ids(allow, "allow")
    if arr.ndim != 1:
        raise ValueError(f"allow must be 1-D (ids, or a boolean mask by id), got shape {arr.shape}")
    if arr.dtype == np.bool_:
        return np.ascontiguousarray(arr).view(np.uint8), False
    if arr.size == 0:
        return np.zeros(0, dtype=np.uint8), False
    if arr.dtype.kind not in "iu":
        raise TypeError(
            f"allow must hold integer ids or be a boolean mask indexed by id, got dtype {arr.dtype}"
        )
    if arr.dtype.kind == "i" and arr.min() < 0:
        raise ValueError(f"allow must hold non-negative ids, got {int(arr.min())}")
    largest = int(arr.max())
    if largest < max(_MASK_BY_ID_MIN_BYTES, _MASK_BY_ID_BYTES_PER_ROW * len(stored_ids)):
        mask = np.zeros(largest + 1, dtype=np.uint8)
        mask[arr] = 1
        return mask, False
    return np.isin(stored_ids, arr).view(np.uint8), True
