"""Checks of what an index file holds, before any of it is used.

A checksum only catches accidents: a file edited on purpose (its CRC recomputed) reaches
these checks, so every parameter and array of a file is read through ``FileFields``, and
any failure is an ``IndexFileError`` that names the field. Arrays are checked for what
the native kernels assume: dtype, shape, finite values, and finite results of the
arithmetic the kernels do on them (squared norms, decoded code ranges).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import IndexFileError
from .arrays import MAX_NORM

INT64_MAX = int(np.iinfo(np.int64).max)
_CHUNK_BYTES = 1 << 24  # arrays are checked in pieces of this size (bounded extra memory)
# Squared norms of the stored unit vectors of a cosine index are 1 within the rounding of
# the storage dtype (bfloat16 keeps 8 bits: about 1e-2).
UNIT_TOLERANCE = 0.05


class FileFields:
    """The parameters and arrays of one file, read with checks (each names its field)."""

    def __init__(self, path, params: dict, arrays: dict):
        self.path, self.params, self.arrays = path, params, arrays

    def fail(self, field: str, what: str):
        raise IndexFileError(f"{self.path}: inconsistent index contents: {field}: {what}")

    # ---- parameters -----------------------------------------------------

    def param(self, name: str):
        if name not in self.params:
            self.fail(f"params.{name}", "missing")
        return self.params[name]

    def int_param(self, name: str, low: int, high: int) -> int:
        value = self.param(name)
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(f"params.{name}", f"expected an integer, got {type(value).__name__}")
        if not low <= value <= high:
            self.fail(f"params.{name}", f"{value} is outside [{low}, {high}]")
        return value

    def float_param(self, name: str, low: float, high: float) -> float:
        value = self.param(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(f"params.{name}", f"expected a number, got {type(value).__name__}")
        if not (math.isfinite(value) and low <= value <= high):
            self.fail(f"params.{name}", f"{value} is outside [{low:g}, {high:g}]")
        return float(value)

    def choice_param(self, name: str, choices) -> str:
        value = self.param(name)
        if not isinstance(value, str) or value not in choices:
            self.fail(f"params.{name}", f"{value!r} is not one of {', '.join(map(repr, choices))}")
        return value

    def bool_param(self, name: str) -> bool:
        value = self.param(name)
        if not isinstance(value, bool):
            self.fail(f"params.{name}", f"expected true or false, got {value!r}")
        return value

    def next_id(self, ids: np.ndarray) -> int:
        """params.next_id, which must exceed every id (new ids are handed out from it)
        and be below 2**63 - 1, unless the largest id, 2**63 - 2, is in use (then no
        automatic id is left: add() asks for ids)."""
        floor = int(ids.max()) + 1 if len(ids) else 0
        if "next_id" not in self.params:  # files from before next_id was saved
            return floor
        value = self.int_param("next_id", 0, max(floor, INT64_MAX - 1))
        if value < floor:
            self.fail("params.next_id", f"{value} is not above the largest id {floor - 1}")
        return value

    # ---- arrays ---------------------------------------------------------

    def array(self, name: str, dtype, shape: tuple) -> np.ndarray:
        """The array `name`, which must have this dtype and shape (None: any length)."""
        if name not in self.arrays:
            self.fail(name, "missing")
        arr = self.arrays[name]
        if arr.dtype != np.dtype(dtype):
            self.fail(name, f"dtype {arr.dtype}, expected {np.dtype(dtype)}")
        if arr.ndim != len(shape) or any(w is not None and w != s for w, s in zip(shape, arr.shape)):
            wanted = tuple("any" if w is None else w for w in shape)
            self.fail(name, f"shape {arr.shape}, expected {wanted}")
        return arr

    def sorted_ids(self, name: str, ids: np.ndarray, allow_removed: bool = False) -> np.ndarray:
        """ids sorted; they must be unique, >= 0 (or -1 for a removed slot if allowed) and
        below 2**63 - 1."""
        live = ids[ids != -1] if allow_removed else ids
        sorted_ids = np.sort(live)
        if len(sorted_ids) and sorted_ids[0] < 0:
            self.fail(name, f"id {int(sorted_ids[0])} is negative")
        if len(sorted_ids) and sorted_ids[-1] == INT64_MAX:
            self.fail(name, "an id equals 2**63 - 1 (the largest id is 2**63 - 2)")
        dup = sorted_ids[1:] == sorted_ids[:-1]
        if dup.any():
            self.fail(name, f"id {int(sorted_ids[1:][dup][0])} occurs more than once")
        return sorted_ids

    def finite(self, name: str, values: np.ndarray) -> None:
        for part in chunks(values):
            if not np.isfinite(part).all():
                self.fail(name, "contains NaN or infinity")

    def bounded_rows(self, name: str, stored: np.ndarray, to_float32=None) -> np.ndarray:
        """Squared norms (float32, as add() computes them) of the rows' float32 values
        (to_float32(block) of stored rows; default: as float32), which must be finite and of
        norm <= MAX_NORM, so that every score stays finite."""
        out = np.empty(len(stored), dtype=np.float32)
        start = 0
        for part in chunks(stored):
            part = np.asarray(part, dtype=np.float32) if to_float32 is None else to_float32(part)
            if not np.isfinite(part).all():
                self.fail(name, "contains NaN or infinity")
            wide = np.einsum("ij,ij->i", part, part, dtype=np.float64)
            if (wide > MAX_NORM ** 2).any():
                row = start + int(np.argmax(wide > MAX_NORM ** 2))
                self.fail(name, f"row {row} has norm {math.sqrt(wide.max()):.3g}, above the "
                                f"{MAX_NORM:g} that keeps float32 scores finite")
            out[start : start + len(part)] = np.einsum("ij,ij->i", part, part, dtype=np.float32)
            start += len(part)
        return out

    def unit_rows(self, name: str, values_sq: np.ndarray) -> None:
        """The rows of a cosine index are unit vectors: squared norms 1 within the
        rounding of the storage dtype."""
        off = np.abs(values_sq.astype(np.float64) - 1.0) > UNIT_TOLERANCE
        if off.any():
            row = int(np.argmax(off))
            self.fail(name, f"a cosine index holds unit vectors; row {row} has squared norm "
                            f"{float(values_sq[row]):.6g}")

    def matching_norms(self, name: str, stored: np.ndarray, computed: np.ndarray) -> None:
        """stored squared norms must be those of the rows (up to float32 rounding)."""
        if not np.isfinite(stored).all():
            self.fail(name, "contains NaN or infinity")
        tolerance = 1e-4 * computed + 1e-30
        bad = np.abs(stored.astype(np.float64) - computed) > tolerance
        if bad.any():
            row = int(np.argmax(bad))
            self.fail(name, f"entry {row} is {stored[row]!r}, but the row's squared norm is "
                            f"{computed[row]!r}")


def chunks(values: np.ndarray):
    """Row blocks of values of about _CHUNK_BYTES each (the whole array when it is small)."""
    if values.ndim == 0 or len(values) == 0:
        yield values
        return
    row_bytes = max(1, values.nbytes // len(values))
    step = max(1, _CHUNK_BYTES // row_bytes)
    for start in range(0, len(values), step):
        yield values[start : start + step]
