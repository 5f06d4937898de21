"""RaBitQ pieces that live in Python: the seeded rotation, the row layout's sizes,
the re-scoring choice and the checks of a file's RaBitQ arrays.

The rotation is the structured FHT-Kac one (cpp/include/ragcore/dense/rabitq_rotation.h):
ROTATION_ROUNDS rounds of seeded sign bits, stored as uint8 [rounds, padded_dim / 8].
Files of layout 1 (before it) hold a dense float32 [padded_dim, dim] matrix instead; they
still load and search with it.

The codes, estimator and bound are native (cpp/include/ragcore/dense/rabitq.h).
"""

from __future__ import annotations

import numpy as np

from .. import _core
from .._util.file_checks import FileFields

FACTORS = 3          # float32 f_add, f_scale, f_err after the bit planes of each row
MAX_BITS = 8
MAX_DENSE_ROTATION_DIM = 2048  # layout-1 files: the rotation is a dense padded_dim x dim matrix
ROTATION_ROUNDS = 4  # sign flips + Hadamard transforms, as rabitqlib's FhtKacRotator
LAYOUT = 2  # params.rabitq_layout: 2 = FHT-Kac sign bits; 1 (absent) = dense matrix
DEFAULT_EPSILON = 1.9  # the RaBitQ paper's choice: the bound's width in standard deviations
RESCORE_MODES = ("bound", "all")
FAST_SCAN_MAX_DIM = 1024  # the 1-bit fast scan's 16-bit sums: padded_dim / 4 look-ups of <= 255
MAX_RESCORE = 1 << 62  # an integer rescore: candidates per result (more than n keeps all)
_ORTHONORMAL_TOLERANCE = 1e-3


def padded_dim(dim: int) -> int:
    return (dim + 7) // 8 * 8


def code_bytes(dim: int, bits: int) -> int:
    """Bytes of one stored row: bit planes of padded_dim / 8 bytes, then the factors."""
    return bits * padded_dim(dim) // 8 + 4 * FACTORS


def rotation_signs(dim: int, seed: int) -> np.ndarray:
    """uint8 [ROTATION_ROUNDS, padded_dim(dim) / 8]: the seeded sign bits of the FHT-Kac
    rotation (bit p of round r set: coordinate p is negated before that round)."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (ROTATION_ROUNDS, padded_dim(dim) // 8), dtype=np.uint8)


def rotate(x: np.ndarray, rotation: np.ndarray, n_threads: int = 0) -> np.ndarray:
    """float32 [n, padded_dim] rows P x of float32 rows x [n, dim]; rotation: sign bits
    (uint8) or a layout-1 dense matrix (float32)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if rotation.dtype == np.uint8:
        return _core.rabitq_fht_rotate(x, rotation, n_threads=n_threads)
    return np.ascontiguousarray(x @ rotation.T, dtype=np.float32)


def dense_rotation(rotation: np.ndarray, dim: int) -> np.ndarray:
    """float32 [padded_dim, dim]: the matrix of the rotation (column i = P e_i)."""
    if rotation.dtype != np.uint8:
        return rotation.copy()
    return np.ascontiguousarray(rotate(np.eye(dim, dtype=np.float32), rotation).T)


def check_bits(bits) -> int:
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or not 1 <= bits <= MAX_BITS:
        raise ValueError(f"bits must be an integer from 1 to {MAX_BITS} (bits per dimension "
                         f"of the RaBitQ codes), got {bits!r}")
    return int(bits)


def check_epsilon(epsilon) -> float:
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.floating)) or \
            not 0 <= epsilon < float("inf"):
        raise ValueError(f"epsilon must be a finite number >= 0 (the error bound's width in "
                         f"standard deviations; 1.9 in the RaBitQ paper), got {epsilon!r}")
    return float(epsilon)


def native_rescore(rescore):
    """(RabitqRescore, count) for rescore = "bound", "all" or an integer >= 1."""
    if isinstance(rescore, str) and rescore in RESCORE_MODES:
        mode = _core.RabitqRescore.Bound if rescore == "bound" else _core.RabitqRescore.All
        return mode, 1
    if isinstance(rescore, bool) or not isinstance(rescore, (int, np.integer)) or \
            not 1 <= rescore <= MAX_RESCORE:
        raise ValueError(f"rescore must be 'bound' (re-score the candidates the error bound "
                         f"cannot rule out), 'all', or an integer from 1 to 2**62 (re-score "
                         f"the best rescore * k estimates), got {rescore!r}")
    return _core.RabitqRescore.Count, int(rescore)


def checked_rotation(f: FileFields, dim: int, layout: int) -> np.ndarray:
    """The file's rotation. Layout 2: uint8 sign bits [ROTATION_ROUNDS, padded_dim / 8]
    (any bits give an orthogonal map). Layout 1: a float32 [padded_dim, dim] matrix,
    finite, with orthonormal columns (the error bound holds only for an orthogonal
    rotation)."""
    if layout == LAYOUT:
        return f.array("rotation", np.uint8, (ROTATION_ROUNDS, padded_dim(dim) // 8))
    if dim > MAX_DENSE_ROTATION_DIM:
        f.fail("params.dim", f"{dim} is above {MAX_DENSE_ROTATION_DIM}, the limit of the "
               "dense rotation of layout-1 files")
    rotation = f.array("rotation", np.float32, (padded_dim(dim), dim))
    f.finite("rotation", rotation)
    gram = rotation.T.astype(np.float64) @ rotation.astype(np.float64)
    if np.abs(gram - np.eye(dim)).max() > _ORTHONORMAL_TOLERANCE:
        f.fail("rotation", "columns are not orthonormal")
    return rotation


def checked_factors(f: FileFields, rows: np.ndarray, scale_limit: float) -> None:
    """The factors of every row: finite, f_scale and f_err in [0, scale_limit]."""
    fac = np.ascontiguousarray(rows[:, rows.shape[1] - 4 * FACTORS:]).view(np.float32)
    f.finite("rows (factors)", fac)
    if len(fac) and ((fac[:, 1:] < 0).any() or (fac[:, 1:] > scale_limit).any()):
        f.fail("rows (factors)", f"f_scale and f_err must lie in [0, {scale_limit:g}]")
