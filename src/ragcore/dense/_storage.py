"""Storage dtypes of dense indexes: conversion from float32 and back.

bfloat16 has no numpy dtype: it is kept as uint16 bit patterns (the upper half
of a float32, rounded to nearest even).
"""

from __future__ import annotations

import numpy as np

from .. import _core

# Each storage dtype's native enum member; "sq8" (8-bit codes, see _sq8.py) is IVFIndex's alone.
NATIVE_STORAGE = {"float32": _core.Storage.F32, "float16": _core.Storage.F16,
                  "bfloat16": _core.Storage.BF16, "sq8": _core.Storage.SQ8}
STORAGE_DTYPES = ("float32", "float16", "bfloat16")  # the float storages
NUMPY_DTYPE = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16,
               "sq8": np.uint8}

_FLOAT16_MAX = float(np.finfo(np.float16).max)


def to_storage(x: np.ndarray, dtype: str, name: str) -> np.ndarray:
    """A new array of x (finite float32) in the storage dtype; refuses overflow."""
    if dtype == "float32":
        return np.array(x, dtype=np.float32, copy=True)
    if dtype == "float16":
        too_big = np.abs(x) > _FLOAT16_MAX
        if too_big.any():
            row = int(np.argwhere(too_big)[0, 0])
            raise ValueError(
                f"{name} has values beyond the float16 range (|x| > {_FLOAT16_MAX:g}), "
                f"first in row {row}; use dtype='float32' or 'bfloat16'"
            )
        return x.astype(np.float16)
    return float32_to_bfloat16_bits(x, name)


def float32_to_bfloat16_bits(x: np.ndarray, name: str = "vectors") -> np.ndarray:
    """Round-to-nearest-even float32 -> bfloat16, as uint16 bit patterns."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) >> 16
    out = rounded.astype(np.uint16)
    if ((out & 0x7F80) == 0x7F80).any():
        raise ValueError(f"{name} has values beyond the bfloat16 range (|x| > 3.39e38)")
    return out


def bfloat16_bits_to_float32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def to_float32(stored: np.ndarray, dtype: str) -> np.ndarray:
    """The float32 values that the stored array represents."""
    if dtype == "bfloat16":
        return bfloat16_bits_to_float32(stored)
    return stored.astype(np.float32)
