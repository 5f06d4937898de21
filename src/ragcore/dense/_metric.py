"""The dense metrics and what cosine needs: rows scaled to unit length."""

from __future__ import annotations

import numpy as np

METRICS = ("ip", "cosine", "l2")
# Codes shared with the native module (ragcore::Metric); cosine is ip over normalised vectors.
METRIC_CODE = {"ip": 0, "cosine": 0, "l2": 1}


def normalized(x: np.ndarray, name: str) -> np.ndarray:
    """float32 rows of x divided by their Euclidean norm; an all-zero row is an error."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if (norms == 0).any():
        row = int(np.argwhere(norms[:, 0] == 0)[0, 0])
        raise ValueError(f"{name} row {row} is all zeros; cosine similarity is undefined for it")
    return (x / norms).astype(np.float32, copy=False)
