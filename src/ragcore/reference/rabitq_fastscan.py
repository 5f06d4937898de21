"""The 1-bit RaBitQ fast scan in plain numpy: the blocks, the quantised tables and the
integer sums (ragcore/dense/rabitq_fastscan.h).

A 1-bit code x (dp bits) is read 4 dimensions at a time: nibble g holds the bits of
dimensions 4g .. 4g + 3, and <x, w> = sum_g T_g[nibble g], T_g[v] = the sum of the
w coordinates whose bit is set in v. The tables are quantised to bytes with one
step delta and a per-group offset lo_g (the smallest entry), so the sum of the bytes
gives <x, w> to within half a step per group.
"""

from __future__ import annotations

import numpy as np

BLOCK = 32
FACTORS = 3


def nibble_sums(w: np.ndarray) -> np.ndarray:
    """float64 [dp / 4, 16]: T_g[v] = sum of w[4g + t] over the bits t set in v."""
    w = np.asarray(w, dtype=np.float64).reshape(-1, 4)
    bits = (np.arange(16)[:, None] >> np.arange(4)[None, :]) & 1  # [16, 4]
    return w @ bits.T


def fast_tables(w: np.ndarray) -> tuple[np.ndarray, float, float, float]:
    """(luts uint8 [dp / 4, 16], bias, delta, max_error) of a rotated query w: luts =
    round((T - lo) / delta), bias = sum of lo, max_error = dp / 4 * delta / 2; delta is
    at least float32's smallest normal (a zero or tiny query)."""
    t = nibble_sums(w)
    lo = t.min(axis=1)
    top = float((t.max(axis=1) - lo).max())
    delta = max(top / 255.0, float(np.finfo(np.float32).tiny))  # never a subnormal step
    luts = np.clip(np.rint((t - lo[:, None]) / delta), 0, 255).astype(np.uint8)
    return luts, float(lo.sum()), delta, len(t) * delta / 2.0


def fast_pack(rows: np.ndarray, offsets: np.ndarray, dp: int) -> np.ndarray:
    """uint8 1-D: the blocks of 1-bit rows [n, dp / 8 + 12] in lists offsets [nlist + 1]:
    per list, blocks of 32 rows (the last padded with zero rows), each the bytes of its
    rows' bit planes transposed (byte p of row i at p * 32 + i), then the float32 factors
    f_add[32], f_scale[32], f_err[32]."""
    plane = dp // 8
    blocks = []
    for l in range(len(offsets) - 1):
        part = rows[offsets[l]:offsets[l + 1]]
        for b0 in range(0, len(part), BLOCK):
            chunk = np.zeros((BLOCK, rows.shape[1]), dtype=np.uint8)
            chunk[:len(part) - b0] = part[b0:b0 + BLOCK]
            codes = chunk[:, :plane].T  # [plane, 32]
            factors = np.ascontiguousarray(chunk[:, plane:]).view(np.float32).T  # [3, 32]
            blocks.append(np.concatenate([codes.ravel(), np.ascontiguousarray(factors).view(np.uint8).ravel()]))
    return np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.uint8)


def fast_sums(blocks: np.ndarray, dp: int, luts: np.ndarray) -> np.ndarray:
    """int64 [blocks * 32]: sum over nibbles g of luts[g, nibble g] for every row of the
    blocks (padding rows included)."""
    plane = dp // 8
    block_bytes = plane * BLOCK + FACTORS * BLOCK * 4
    out = []
    for b in range(len(blocks) // block_bytes):
        codes = blocks[b * block_bytes:b * block_bytes + plane * BLOCK].reshape(plane, BLOCK).T
        nibbles = np.stack([codes & 15, codes >> 4], axis=2).reshape(BLOCK, 2 * plane)
        out.append(luts[np.arange(2 * plane)[None, :], nibbles].astype(np.int64).sum(axis=1))
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def code_bits(rows: np.ndarray, dp: int) -> np.ndarray:
    """int64 [n, dp]: the 0/1 codes of 1-bit rows."""
    return np.unpackbits(rows[:, :dp // 8], axis=1, bitorder="little").astype(np.int64)
