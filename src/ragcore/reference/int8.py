"""Reference of HNSWIndex's int8 codes (dtype="int8"): plain numpy, from the definitions,
independent of the native quantiser and kernels."""

from __future__ import annotations

import numpy as np


def int8_codes(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes int8 [n, d], scales float32 [n]): per row, s = max |x|, inv = 127 / s in
    float32, codes = x * inv (float32) rounded half to even and clipped to [-127, 127],
    so x ~ codes * s / 127. A zero row: s = 0, codes 0."""
    x = np.asarray(x, dtype=np.float32)
    scales = np.abs(x).max(axis=1) if x.shape[1] else np.zeros(len(x), np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(scales > 0, np.float32(127) / scales, np.float32(0)).astype(np.float32)
    codes = np.clip(np.rint(x * inv[:, None]), -127, 127).astype(np.int8)
    return codes, scales.astype(np.float32)


def int8_dots(q_codes: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Exact integer dot products of one query's codes with each row's codes (int64)."""
    return codes.astype(np.int64) @ np.asarray(q_codes, dtype=np.int64)


def int8_scores(q: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The walk's estimates of <q, x_j>: dot(codes) * (s_q / 127) * (s_x / 127)."""
    qc, qs = int8_codes(np.asarray(q, dtype=np.float32)[None, :])
    xc, xs = int8_codes(x)
    return int8_dots(qc[0], xc) * (float(qs[0]) / 127.0) * (xs.astype(np.float64) / 127.0)
