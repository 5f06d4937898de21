"""Per-dimension scalar quantisation to 8 bits (IVFIndex dtype="sq8").

Each dimension p maps [min_p, max_p] of the training sample onto codes 0..255:
x_p ~ code_min[p] + code_scale[p] * code. Values outside the trained range are
clipped. The native scan folds code_scale into the query, so the approximate
inner product costs one pass over the codes.
"""

from __future__ import annotations

import numpy as np

from .._util.arrays import MAX_NORM
from .._util.file_checks import FileFields

LEVELS = 255


def train_sq8(sample: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(code_min, code_scale), float32 per dimension, from a float32 sample."""
    low = sample.min(axis=0).astype(np.float32)
    span = sample.max(axis=0).astype(np.float32) - low
    # A constant dimension has one value: any scale keeps its code at 0.
    scale = np.where(span > 0, span / LEVELS, 1.0).astype(np.float32)
    return low, scale


def encode_sq8(x: np.ndarray, code_min: np.ndarray, code_scale: np.ndarray) -> np.ndarray:
    """uint8 codes of float32 rows (nearest level, clipped to the trained range)."""
    # A tiny scale (possible in a file) sends far values to inf, which the clip maps to 255.
    with np.errstate(over="ignore"):
        codes = np.rint((x - code_min) / code_scale)
    return np.clip(codes, 0, LEVELS).astype(np.uint8)


def checked_ranges(f: FileFields, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """A file's code_min and code_scale: finite, scale > 0, and every decodable row
    (min + scale * code, code <= 255) of norm <= MAX_NORM."""
    code_min = f.array("code_min", np.float32, (dim,))
    code_scale = f.array("code_scale", np.float32, (dim,))
    f.finite("code_min", code_min)
    f.finite("code_scale", code_scale)
    if (code_scale <= 0).any():
        f.fail("code_scale", "every scale must be > 0")
    top = code_min.astype(np.float64) + LEVELS * code_scale.astype(np.float64)
    widest = np.maximum(np.abs(code_min.astype(np.float64)), np.abs(top))
    if float(np.sqrt(np.sum(widest ** 2))) > MAX_NORM or not np.isfinite(top).all():
        f.fail("code_min, code_scale", f"decoded rows could exceed norm {MAX_NORM:g}")
    return code_min, code_scale
