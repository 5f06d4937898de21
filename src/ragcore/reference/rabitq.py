"""RaBitQ codes in plain numpy: the quantiser, the estimator and its error bound.

Gao and Long, "RaBitQ", SIGMOD 2024 (1 bit per dimension), and "Practical and
asymptotically optimal quantization of high-dimensional vectors in Euclidean space
for approximate nearest neighbor search" (extended RaBitQ, SIGMOD 2025; B bits).

A residual v (already rotated, dp dimensions) is coded as the grid vector y with
coordinates in {-(2^B - 1)/2, ..., (2^B - 1)/2} (step 1) of largest cos(y, v). The
estimator of <v, w> for any w is |v|^2 <y, w> / <y, v>; with a random rotation its
error is at most eps * |v| |w| sqrt((1 - a^2) / a^2) / sqrt(dp - 1), a = cos(y, v),
with about the probability of a standard normal within eps.

The layout of a stored row (bit planes, then float32 f_add, f_scale, f_err) is
that of ragcore/dense/rabitq.h. Written for clarity; the quantiser tries every
critical scale by brute force.
"""

from __future__ import annotations

import math

import numpy as np

FACTORS = 3


def padded_dim(dim: int) -> int:
    return (dim + 7) // 8 * 8


def fht_kac_rotate(x: np.ndarray, signs: np.ndarray) -> np.ndarray:
    """float64 [n, dp] rotation of rows x [n, d] by the FHT-Kac rotation of sign bits
    signs [rounds, dp / 8] (ragcore/dense/rabitq_rotation.h): per round, flip the signs,
    Walsh-Hadamard transform the leading (even rounds) or trailing (odd) 2^floor(log2 dp)
    coordinates divided by sqrt of their count, then mix the two halves when that count
    is below dp."""
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    n, d = x.shape
    dp = padded_dim(d)
    y = np.zeros((n, dp))
    y[:, :d] = x
    t = 1 << (dp.bit_length() - 1)
    for r, bits in enumerate(signs):
        flip = np.unpackbits(bits, bitorder="little")[:dp].astype(bool)
        y[:, flip] *= -1.0
        lo = 0 if r % 2 == 0 else dp - t
        y[:, lo:lo + t] = _hadamard(y[:, lo:lo + t]) / math.sqrt(t)
        if t < dp:
            a, b = y[:, :dp // 2], y[:, dp // 2:]
            y = np.concatenate([a + b, a - b], axis=1) / math.sqrt(2.0)
    return y


def _hadamard(y: np.ndarray) -> np.ndarray:
    """Unnormalised Walsh-Hadamard transform of each row (length a power of two)."""
    n, t = y.shape
    h = 1
    while h < t:
        z = y.reshape(n, t // (2 * h), 2, h)
        y = np.stack([z[:, :, 0] + z[:, :, 1], z[:, :, 0] - z[:, :, 1]], axis=2).reshape(n, t)
        h *= 2
    return y


def bound_confidence(epsilon: float) -> float:
    """P(|Z| <= epsilon) for a standard normal Z: the stated confidence of the bound."""
    return math.erf(epsilon / math.sqrt(2.0))


def best_grid_vector(v: np.ndarray, bits: int) -> np.ndarray:
    """The grid vector y (float64, half-integers) of largest cosine with v.

    Scaling v by t and rounding each |v_i| t down to a level (magnitude m + 1/2,
    m < 2^(bits-1)) changes the code only at t = m / |v_i|; every such t up to
    top / max|v_i| (where the largest coordinate reaches the top level) is tried.
    """
    v = np.asarray(v, dtype=np.float32)
    a = np.abs(v)
    top = 2 ** (bits - 1) - 1
    sign = np.where(v < 0, -1.0, 1.0)
    best_levels = np.zeros(len(v))
    if top > 0 and (a > 0).any():
        m = np.arange(1, top + 1, dtype=np.float32)
        nz = a > 0
        steps = np.full((len(v), top), np.inf, dtype=np.float32)
        steps[nz] = m[None, :] / a[nz, None]  # float32, as the native quantiser computes them
        # Search range: up to the scale that lifts the largest |v_i| to the top level.
        steps[steps > np.float32(top) / a.max()] = np.inf
        best = _cosine(np.zeros(len(v)), a)
        for t in np.unique(steps[np.isfinite(steps)]):
            levels = (steps <= t).sum(axis=1).astype(np.float64)
            c = _cosine(levels, a)
            if c > best:
                best, best_levels = c, levels
    return sign * (best_levels + 0.5)


def _cosine(levels: np.ndarray, a: np.ndarray) -> float:
    y = levels + 0.5
    return float(np.dot(y, a.astype(np.float64)) / math.sqrt(np.dot(y, y)))


def factors(v: np.ndarray, c: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """(f_add, f_scale, f_err) of rotated residual v, rotated centroid c, code y."""
    v = v.astype(np.float64)
    c = c.astype(np.float64)
    r2 = float(np.dot(v, v))
    yv = float(np.dot(y, v))
    if r2 == 0.0 or yv <= 0.0:
        return 0.0, 0.0, 0.0
    scale = r2 / yv
    cos = min(yv / math.sqrt(float(np.dot(y, y)) * r2), 1.0)
    err = math.sqrt(r2) * math.sqrt(1.0 - cos * cos) / cos / math.sqrt(len(v) - 1)
    return float(np.dot(v, c)) - scale * float(np.dot(y, c)), scale, err


def encode_rows(rot_residuals: np.ndarray, rot_centroids: np.ndarray, labels: np.ndarray,
                bits: int) -> np.ndarray:
    """uint8 rows (bit planes + float32 factors) of rotated residuals [n, dp]."""
    n, dp = rot_residuals.shape
    plane = dp // 8
    rows = np.zeros((n, bits * plane + 4 * FACTORS), dtype=np.uint8)
    for j in range(n):
        v, c = rot_residuals[j], rot_centroids[labels[j]]
        y = best_grid_vector(v, bits)
        codes = (y + (2 ** bits - 1) / 2).astype(np.int64)
        for b in range(bits):
            bit = (codes >> b) & 1
            rows[j, b * plane:(b + 1) * plane] = np.packbits(bit.astype(np.uint8), bitorder="little")
        rows[j, bits * plane:] = np.array(factors(v, c, y), dtype=np.float32).view(np.uint8)
    return rows


def decode_rows(rows: np.ndarray, dp: int, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """(grid vectors y [n, dp] float64, factors [n, 3] float64) of stored rows."""
    plane = dp // 8
    codes = np.zeros((len(rows), dp), dtype=np.int64)
    for b in range(bits):
        bit = np.unpackbits(rows[:, b * plane:(b + 1) * plane], axis=1, bitorder="little")
        codes += bit.astype(np.int64) << b
    fac = np.ascontiguousarray(rows[:, bits * plane:]).view(np.float32).astype(np.float64)
    return codes - (2 ** bits - 1) / 2, fac


def estimates(rows: np.ndarray, query: np.ndarray, centroid: np.ndarray, rotation: np.ndarray,
              bits: int, metric: str, sq_norms=None) -> tuple[np.ndarray, np.ndarray]:
    """(estimated scores, error bound at epsilon 1) of one list's rows for one query.

    Score: <o, q> ("ip", "cosine") or -|o - q|^2 ("l2"), o = c + r:
    <o, q> = <c, q> + <r, c> + <r, q - c>, the last term estimated from the code.
    """
    q = query.astype(np.float64)
    c = centroid.astype(np.float64)
    p = rotation.astype(np.float64)
    y, fac = decode_rows(rows, p.shape[0], bits)
    f_add, f_scale, f_err = fac[:, 0], fac[:, 1], fac[:, 2]
    # f_add holds <r, c> - f_scale <y, P c>, so <y, P q> completes <r, q - c>'s estimate.
    ip = float(np.dot(c, q)) + f_add + f_scale * (y @ (p @ q))
    err = float(np.linalg.norm(q - c)) * f_err
    if metric == "l2":
        return 2.0 * ip - np.asarray(sq_norms, dtype=np.float64) - float(np.dot(q, q)), 2.0 * err
    return ip, err

