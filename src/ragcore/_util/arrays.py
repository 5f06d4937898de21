"""Turning user input (numpy, torch, DLPack objects, lists) into checked arrays.

The rule for dtypes: float32 passes through without a copy; other floating
types (float64, float16) are converted to float32 with a CopyWarning; anything
else (integers, booleans, complex, objects) is refused.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import CopyWarning


def to_numpy(x, name: str) -> np.ndarray:
    """A numpy view of x when it is an array or a CPU DLPack object (no copy)."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__dlpack__"):
        try:
            return np.from_dlpack(x)
        except (RuntimeError, TypeError, ValueError, BufferError) as err:
            raise TypeError(
                f"{name}: could not read this {type(x).__name__} through DLPack ({err}); "
                "pass a float32 CPU array, e.g. tensor.detach().cpu().float().numpy()"
            ) from None
    if isinstance(x, (list, tuple)):
        # A list is always converted; only its element type is checked.
        try:
            arr = np.asarray(x)
        except (TypeError, ValueError) as err:
            raise TypeError(f"{name}: expected numbers, could not convert ({err})") from None
        if arr.dtype.kind not in "fiu":
            raise TypeError(f"{name}: expected numbers, got list elements of dtype {arr.dtype}")
        return _float32_or_refuse(arr, name) if arr.dtype.kind == "f" else arr.astype(np.float32)
    raise TypeError(
        f"{name} must be a numpy array, a torch tensor or another DLPack array, "
        f"got {type(x).__name__}"
    )


def as_float_matrix(x, name: str, dim: int | None = None, check_values: bool = True) -> np.ndarray:
    """x as a 2-D float32 array with contiguous rows; a 1-D x is one row.

    Copies only when the dtype or the layout requires it, with a CopyWarning.
    Raises on wrong ndim, wrong dimension, non-float dtype, and (check_values) on NaN,
    infinity or a norm above MAX_NORM.
    """
    arr = to_numpy(x, name)
    if arr.ndim == 1:
        arr = arr[None, :]
    elif arr.ndim != 2:
        raise ValueError(
            f"{name} must be 1-D (one vector) or 2-D (one vector per row), "
            f"got {arr.ndim}-D with shape {arr.shape}"
        )
    if dim is not None and arr.shape[1] != dim:
        raise ValueError(f"{name} has {arr.shape[1]} dimensions per vector, expected dim={dim}")
    if arr.dtype != np.float32:
        if arr.dtype.kind != "f":
            raise TypeError(
                f"{name} must hold floating-point numbers (float32 preferred), got dtype {arr.dtype}"
            )
        warnings.warn(
            f"{name}: converting {arr.dtype} to float32 (a copy); pass float32 to avoid it",
            CopyWarning,
            stacklevel=3,
        )
        arr = _float32_or_refuse(arr, name)
    if not _rows_contiguous(arr):
        warnings.warn(
            f"{name}: elements within a row are not contiguous; copying "
            "(use numpy.ascontiguousarray to avoid it)",
            CopyWarning,
            stacklevel=3,
        )
        arr = np.ascontiguousarray(arr)
    if check_values:
        _check_finite(arr, name)
        _check_magnitude(arr, name)
    return arr


_FLOAT32 = np.dtype(np.float32)


def as_query_rows(x, dim: int) -> np.ndarray:
    """queries as every native search entry takes them: float32, dim values per row, one row
    (1-D) or one per row (2-D), the elements of a row contiguous; other input is converted as
    as_float_matrix converts it. Their values (finite, norm at most MAX_NORM) are checked by
    the native entry, once, for one query as for a batch."""
    # `is`: numpy's float32 descriptor is one object; another equal one takes the long way.
    if type(x) is np.ndarray and x.dtype is _FLOAT32 and x.flags.c_contiguous:
        shape = x.shape
        if shape == (dim,) or (len(shape) == 2 and shape[1] == dim):
            return x
    return as_float_matrix(x, "queries", dim, check_values=False)


# Scores are float32: with norms up to 1e18 a dot product or squared distance stays
# below float32's maximum (3.4e38); beyond that it could overflow to inf or NaN.
MAX_NORM = 1e18


def _check_magnitude(arr: np.ndarray, name: str) -> None:
    if arr.size == 0 or float(np.abs(arr).max()) * np.sqrt(arr.shape[1]) <= MAX_NORM:
        return  # cheap bound first: no row can exceed the limit
    norms = np.linalg.norm(arr.astype(np.float64), axis=1)
    if (norms > MAX_NORM).any():
        row = int(np.argmax(norms > MAX_NORM))
        raise ValueError(
            f"{name} row {row} has norm {norms[row]:.3g}; norms above {MAX_NORM:g} could "
            "overflow the float32 scores"
        )


def _float32_or_refuse(arr: np.ndarray, name: str) -> np.ndarray:
    """float32 copy of a float array; finite values beyond float32's range are refused."""
    _check_finite(arr, name)
    too_big = np.abs(arr) > np.finfo(np.float32).max
    if too_big.any():
        row = int(np.argwhere(too_big)[0, 0]) if arr.ndim > 1 else 0
        raise ValueError(f"{name} has values beyond the float32 range (|x| > 3.4e38), first in row {row}")
    return arr.astype(np.float32)


def _rows_contiguous(arr: np.ndarray) -> bool:
    if arr.shape[0] == 0:
        return True
    item = arr.itemsize
    if arr.shape[1] > 1 and arr.strides[1] != item:
        return False
    if arr.shape[0] > 1 and (arr.strides[0] < item * arr.shape[1] or arr.strides[0] % item):
        return False
    return True


def _check_finite(arr: np.ndarray, name: str) -> None:
    finite = np.isfinite(arr)
    if not finite.all():
        row = int(np.argwhere(~finite)[0, 0]) if arr.ndim > 1 else 0
        raise ValueError(f"{name} contains NaN or infinity (first in row {row})")


def raw_ids(ids, name: str) -> np.ndarray:
    """ids (a scalar, a list or an array) as a numpy array, not yet checked."""
    if isinstance(ids, (int, np.integer)) and not isinstance(ids, bool):
        ids = [ids]
    return to_numpy(ids, name) if not isinstance(ids, (list, tuple)) else np.asarray(ids)


def as_id_array(ids, name: str, count: int) -> np.ndarray:
    """ids as a 1-D int64 array of `count` non-negative values (a scalar is one id)."""
    arr = raw_ids(ids, name)
    if arr.ndim != 1 or arr.shape[0] != count:
        raise ValueError(f"{name} must be a 1-D array of {count} ids, got shape {arr.shape}")
    if count and arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and count and arr.max() > np.iinfo(np.int64).max - 1:
        raise ValueError(f"{name} must be below 2**63 - 1")
    arr = arr.astype(np.int64, copy=False)
    if count and arr.min() < 0:
        raise ValueError(f"{name} must be non-negative (-1 marks padding in results)")
    if count and arr.max() == np.iinfo(np.int64).max:
        raise ValueError(f"{name} must be below 2**63 - 1")
    return arr


def check_positive_int(value, name: str) -> int:
    if type(value) is int and value >= 1:  # the common case, first: it is checked per call
        return value
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return int(value)


# Documented limits (README, "Limits"): a dimension or a list count beyond them is refused
# by the constructors and by the loaders before anything is allocated.
MAX_DIM = 1 << 16
MAX_NLIST = 1 << 22


def check_limit(value, name: str, limit: int) -> int:
    """A positive integer value <= limit."""
    value = check_positive_int(value, name)
    if value > limit:
        raise ValueError(f"{name} must be <= {limit}, got {value}")
    return value


def check_threads(value) -> int:
    if type(value) is int and 0 <= value <= _MAX_THREADS:  # the common case, first
        return value
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"n_threads must be an integer, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"n_threads must be >= 0 (0 means all cores), got {value}")
    # More threads than cores never helps: the native code caps the count at the cores.
    return min(int(value), _MAX_THREADS)


_MAX_THREADS = 1 << 16


def check_choice(value, name: str, choices) -> str:
    if value not in choices:
        raise ValueError(f"unknown {name} {value!r}; expected one of {', '.join(map(repr, choices))}")
    return value
