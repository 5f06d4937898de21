"""Flush-to-zero, written from its definition: what float32 arithmetic gives when
the thread flushes subnormals (checks ragcore.encoders._denormals)."""

from __future__ import annotations

import numpy as np

FLOAT32_SMALLEST_NORMAL = np.float32(np.finfo(np.float32).smallest_normal)


def flush_subnormals(x) -> np.ndarray:
    """float32 x with every subnormal value replaced by a zero of the same sign;
    zeros, normal values, infinities and NaN unchanged."""
    x = np.asarray(x, dtype=np.float32)
    subnormal = (x != 0) & (np.abs(x) < FLOAT32_SMALLEST_NORMAL)
    return np.where(subnormal, np.copysign(np.float32(0), x), x).astype(np.float32)


def flushed_product(a, b) -> np.ndarray:
    """float32 a * b under flush-to-zero and denormals-are-zero: subnormal operands
    read as signed zeros, the product rounded to float32 (float64 holds a product of
    two float32 exactly), then a subnormal result flushed to a signed zero."""
    a, b = flush_subnormals(a), flush_subnormals(b)
    exact = a.astype(np.float64) * b.astype(np.float64)
    return flush_subnormals(exact.astype(np.float32))
