"""The dense metrics and what cosine needs: rows scaled to unit length."""

from __future__ import annotations

import numpy as np

from .. import _core

# Each metric's native enum member; cosine is the inner product of normalised vectors.
NATIVE_METRIC = {"ip": _core.Metric.InnerProduct, "cosine": _core.Metric.InnerProduct,
                 "l2": _core.Metric.L2}
METRICS = tuple(NATIVE_METRIC)


def normalized(x: np.ndarray, name: str) -> np.ndarray:
    """float32 rows of x divided by their Euclidean norm; an all-zero row is an error."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if (norms == 0).any():
        row = int(np.argwhere(norms[:, 0] == 0)[0, 0])
        raise ValueError(f"{name} row {row} is all zeros; cosine similarity is undefined for it")
    return (x / norms).astype(np.float32, copy=False)
