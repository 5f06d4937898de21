"""Inner products computed in bfloat16, as ragcore's scalar and AVX512_BF16 kernels compute
them with the instruction vdpbf16ps (bit for bit).

The query is rounded to bfloat16 (nearest, ties to even), as the stored rows were. Both are
padded with zeros to a multiple of 32 elements. The kernels give each row a lane of its own
(rows side by side, the query's element pairs broadcast), so one float32 accumulator takes
the pairs (2p, 2p + 1) in order, p = 0, 1, ..., adding the odd product, then the even one,
each with one rounding; denormal inputs are read as zero and denormal results flushed to
zero. There is no horizontal sum.

A product of two bfloat16 values has at most 16 significant bits, so float32 holds it exactly
(outside the denormal range) and ``acc + x * q`` in float32 is the instruction's fused step.
"""

from __future__ import annotations

import numpy as np

from .dense import round_to_storage

_SMALLEST_NORMAL = np.float32(1.17549435e-38)
_CHUNK = 32  # queries and rows are zero-padded to a multiple of this


def _flush(x: np.ndarray) -> np.ndarray:
    return np.where(np.abs(x) < _SMALLEST_NORMAL, np.float32(0) * np.sign(x), x).astype(np.float32)


def bf16_dot_products(queries: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """[nq, n] float32: queries (float32, rounded here) against rows (float32 values that are
    already bfloat16, e.g. ``round_to_storage(x, "bfloat16")``)."""
    q = _flush(round_to_storage(np.atleast_2d(queries), "bfloat16"))
    x = _flush(np.asarray(rows, dtype=np.float32))
    d = q.shape[1]
    depth = -(-d // _CHUNK) * _CHUNK
    q = np.pad(q, ((0, 0), (0, depth - d)))
    x = np.pad(x, ((0, 0), (0, depth - d)))
    acc = np.zeros((q.shape[0], x.shape[0]), dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        for even in range(0, depth, 2):
            for p in (even + 1, even):  # the odd product first
                products = np.outer(q[:, p], x[:, p]).astype(np.float32)
                acc = _flush(acc + products)
    return acc
