"""IVFIndex storage dtype="rabitq" (``IVFIndex(..., dtype="rabitq", bits=...)``).

Each vector is kept as the RaBitQ code of its residual to its list's centroid,
rotated by a seeded structured random rotation (sign flips and fast Hadamard
transforms, O(dim log dim) per vector), plus three float factors, and as
its exact float32 row. A search estimates every probed row from its code, keeps
the rows that the estimator's error bound cannot rule out, and re-scores those
exactly, so returned scores are exact scores.
"""

from __future__ import annotations

import numpy as np

from .. import _core
from .._util.arrays import MAX_NORM
from .._util.file_checks import FileFields
from ._ivf_storage_base import Coarse, IvfStorage, Snapshot
from ..hits import Hits
from ._rabitq import (
    DEFAULT_EPSILON, FAST_SCAN_MAX_DIM, LAYOUT, MAX_BITS, check_bits, check_epsilon,
    checked_factors, checked_rotation, code_bytes, dense_rotation, native_rescore, padded_dim,
    rotate, rotation_signs,
)

ENCODE_TILE = 8192  # rows per encoding tile (see RabitqStorage.encode)
MAX_EPSILON = 1e6  # the largest epsilon a file may hold


class RabitqStorage(IvfStorage):
    """RaBitQ codes of the rotated residuals, re-scored exactly.

    Options (IVFIndex keywords):
        bits: bits per dimension of the codes, 1 to 8 (default 3). A row scans
            bits * ceil(dim / 8) + 12 bytes (``bytes_per_vector()``): at 3 bits,
            at most 1/8 of float32's for dim >= 96.
        rescore: which candidates are re-scored with the exact vectors:
            "bound" (default): every row whose upper bound (estimate + epsilon
            error bounds) reaches the k-th exact score, the RaBitQ re-ranking;
            "all": every scanned row (exact IVF); an integer m: the best m * k
            by estimate. ``search(rescore=...)`` overrides it per call.
        epsilon: width of the error bound in standard deviations (1.9, as in the
            paper: a true score lies inside with probability >= erf(1.9 / sqrt 2)
            = 0.94 for the worst-placed vector, far more for near neighbours).
    The seed of the index draws the rotation as well as the k-means.
    """

    OPTIONS = ("bits", "rescore", "epsilon")
    KEEPS_EXACT = True

    def __init__(self, dtype: str, dim: int, metric: str, seed: int, *, bits: int = 3,
                 rescore="bound", epsilon: float = DEFAULT_EPSILON):
        super().__init__(dtype, dim, metric, seed)
        self.bits = check_bits(bits)
        self.rescore, self._native_rescore = rescore, native_rescore(rescore)
        self.epsilon = check_epsilon(epsilon)
        self.centroids = None  # the index's, from which the residuals are taken
        self.rotation = self.rotated_centroids = None  # sign bits, or a layout-1 dense matrix
        self._fast_scan = True

    @property
    def options(self) -> dict:
        return {"bits": self.bits, "rescore": self.rescore, "epsilon": self.epsilon}

    def repr_options(self) -> str:
        return f", bits={self.bits}"

    @property
    def fast_scan(self) -> bool:
        """Whether 1-bit codes are scanned by 4-bit table look-ups in SIMD registers (see
        IVFIndex.fast_scan)."""
        return self._fast_scan and self.bits == 1 and padded_dim(self.dim) <= FAST_SCAN_MAX_DIM

    @fast_scan.setter
    def fast_scan(self, on: bool) -> None:
        if not isinstance(on, (bool, np.bool_)):
            raise ValueError(f"fast_scan must be True or False, got {on!r}")
        self._fast_scan = bool(on)

    def rotation_matrix(self) -> np.ndarray:
        """float32 [padded dim, dim]: the matrix of the rotation (built on request)."""
        return dense_rotation(self.rotation, self.dim)

    # ---- rows --------------------------------------------------------------

    def empty_rows(self) -> np.ndarray:
        return np.empty((0, code_bytes(self.dim, self.bits)), dtype=np.uint8)

    def fit(self, x: np.ndarray, n_threads: int):
        return rotation_signs(self.dim, self.seed)

    def set_trained(self, fitted, centroids: np.ndarray) -> None:
        """fitted: the rotation, sign bits (from the seed) or a layout-1 file's dense matrix."""
        self.centroids, self.rotation = centroids, fitted
        self.rotated_centroids = rotate(centroids, fitted)

    def encode(self, x: np.ndarray, labels: np.ndarray, n_threads: int = 0) -> np.ndarray:
        """uint8 rows (codes + factors) of prepared float32 vectors in lists `labels`.

        In tiles of ENCODE_TILE rows: the residuals and their rotation of one tile (12 MB at
        d = 384) are reused from the heap, where whole-batch temporaries (two n x d float32
        arrays) would be fresh pages, first touched, each time. Each row's code depends on
        that row alone, so the rows equal those of one call over the whole batch."""
        labels = np.ascontiguousarray(labels)
        rows = np.empty((len(x), code_bytes(self.dim, self.bits)), dtype=np.uint8)
        for start in range(0, len(x), ENCODE_TILE):
            part = slice(start, start + ENCODE_TILE)
            rotated = rotate(x[part] - self.centroids[labels[part]], self.rotation, n_threads)
            rows[part] = _core.rabitq_encode(rotated, self.rotated_centroids, labels[part],
                                             bits=self.bits, n_threads=n_threads)[0]
        return rows

    # ---- search ------------------------------------------------------------

    def _fast_blocks(self, snapshot: Snapshot) -> np.ndarray | None:
        """The fast-scan blocks of the snapshot's lists, packed on its first search (they
        never change), or None where the fast scan is off or does not apply."""
        if not self.fast_scan:
            return None
        if snapshot.derived is None:
            lists = snapshot.lists
            snapshot.derived = _core.rabitq_fast_pack(lists.rows, lists.offsets, dim=self.dim)
        return snapshot.derived

    def checked_rescore(self, rescore):
        """(RabitqRescore, count) of "bound", "all" or an integer; None: the index's."""
        return self._native_rescore if rescore is None else native_rescore(rescore)

    def search(self, snapshot: Snapshot, coarse: Coarse, q, k, nprobe, rescore, mask, by_row,
               n_threads) -> Hits:
        lists, (mode, count) = snapshot.lists, rescore
        return _core.rabitq_ivf_search(
            lists.rows, q, k, coarse.centroids, coarse.sq_norms, self.rotation, self.bits,
            lists.offsets, lists.ids, lists.exact, lists.sq_norms, coarse.metric, nprobe, mode,
            count, self.epsilon, mask, by_row, n_threads, None, self._fast_blocks(snapshot),
            self.owner)

    def estimates(self, snapshot: Snapshot, coarse: Coarse, q: np.ndarray, list_number: int):
        """(estimated scores, one-standard-deviation error bounds) of one list's rows."""
        lists = snapshot.lists
        return _core.rabitq_estimates(
            lists.rows, q, list_number, centroids=coarse.centroids,
            centroid_sq_norms=coarse.sq_norms, rotation=self.rotation, bits=self.bits,
            list_offsets=lists.offsets, ids=lists.ids, exact_rows=lists.exact,
            sq_norms=lists.sq_norms, metric=coarse.metric,
            fast_blocks=self._fast_blocks(snapshot))

    # ---- sizes -------------------------------------------------------------

    def scanned_bytes(self) -> int:
        return code_bytes(self.dim, self.bits)

    def kept_extra_bytes(self) -> int:
        """The exact row, and with the fast scan the second copy of codes + factors."""
        return 4 * self.dim + (self.scanned_bytes() if self.fast_scan else 0)

    def memory_arrays(self, snapshot: Snapshot) -> list:
        return [self.rotation, self.rotated_centroids, snapshot.derived]

    # ---- files -------------------------------------------------------------

    @classmethod
    def options_from_file(cls, f: FileFields, dim: int) -> dict:
        rescore = f.param("rescore")
        try:
            native_rescore(rescore)
        except ValueError as e:
            f.fail("params.rescore", str(e))
        return {"bits": f.int_param("bits", 1, MAX_BITS), "rescore": rescore,
                "epsilon": f.float_param("epsilon", 0.0, MAX_EPSILON)}

    def file_params(self) -> dict:
        return {"rabitq_layout": self._layout(), **self.options}

    def _layout(self) -> int:
        """2 (sign bits) unless this index came from a layout-1 file with a dense matrix."""
        dense = self.rotation is not None and self.rotation.dtype != np.uint8
        return 1 if dense else LAYOUT

    def checked_rows(self, f: FileFields, n: int) -> np.ndarray:
        rows = super().checked_rows(f, n)
        checked_factors(f, rows, 8 * MAX_NORM)
        return rows

    def trained_arrays(self) -> dict:
        return {} if self.rotation is None else {"rotation": self.rotation}

    def trained_from_file(self, f: FileFields):
        layout = f.int_param("rabitq_layout", 1, LAYOUT) if "rabitq_layout" in f.params else 1
        return checked_rotation(f, self.dim, layout)
