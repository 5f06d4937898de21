"""The IVF storages that the native ivf_search scans: float32, float16 and bfloat16 rows
(scored as stored) and sq8 codes (re-scored with the exact float32 rows)."""

from __future__ import annotations

import numpy as np

from .. import _core
from .._util.arrays import check_choice
from .._util.file_checks import FileFields
from ._ivf_storage_base import Coarse, IvfStorage, Snapshot
from ..hits import Hits
from ._sq8 import checked_ranges, encode_sq8, train_sq8
from .flat import COMPUTES
from ._storage import NATIVE_STORAGE, NUMPY_DTYPE, to_float32, to_storage


class FloatStorage(IvfStorage):
    """Rows in the dtype: "float32", "float16" or "bfloat16", scored as FlatIndex scores them."""

    def empty_rows(self) -> np.ndarray:
        return np.empty((0, self.dim), dtype=NUMPY_DTYPE[self.dtype])

    def encode(self, x: np.ndarray, labels: np.ndarray, n_threads: int = 0) -> np.ndarray:
        return to_storage(x, self.dtype, "vectors")

    def decoded(self, rows: np.ndarray) -> np.ndarray:
        return to_float32(rows, self.dtype)

    def scanned_bytes(self) -> int:
        return self.dim * np.dtype(NUMPY_DTYPE[self.dtype]).itemsize

    def search(self, snapshot: Snapshot, coarse: Coarse, q, k, nprobe, rescore, mask, by_row,
               n_threads) -> Hits:
        lists = snapshot.lists
        code_min, code_scale = self._code_ranges()
        args = (lists.rows, q, k, coarse.centroids, coarse.sq_norms, lists.offsets,
                NATIVE_STORAGE[self.dtype], lists.ids, lists.sq_norms, coarse.metric, nprobe,
                code_min, code_scale, lists.exact, rescore, mask, by_row, n_threads, None,
                self.owner)
        return _core.ivf_search(*args, *self._compute_args())

    def _code_ranges(self) -> tuple:
        """(code_min, code_scale) of the 8-bit codes; None, None for float rows."""
        return None, None

    def _compute_args(self) -> tuple:
        """ivf_search's arguments after owner: (bf16_compute, bf16_level), or none."""
        return ()

    @classmethod
    def options_from_file(cls, f: FileFields, dim: int) -> dict:
        if "compute" in f.params:  # (what bfloat16 rows alone take)
            f.fail("params.compute", f"applies to dtype 'bfloat16' only, not {f.params.get('dtype')!r}")
        return {}


class Bf16Storage(FloatStorage):
    """"bfloat16" rows, with the option compute: "float32" (default: the rows converted, as
    FlatIndex computes) or "bfloat16" (the query rounded to bfloat16 too and multiplied by
    the CPU's bfloat16 instructions, as FlatIndex(dtype="bfloat16", compute="bfloat16"):
    the same scores, and faster where many queries of a batch probe a list)."""

    OPTIONS = ("compute",)

    def __init__(self, dtype: str, dim: int, metric: str, seed: int, compute: str = "float32"):
        super().__init__(dtype, dim, metric, seed)
        self.compute = check_choice(compute, "compute", COMPUTES)
        self.bf16_level = None  # a _core.Bf16Level: one kernel level (tests and benchmarks)

    @property
    def options(self) -> dict:
        """Nothing for float32 compute: files and repr stay as before the option."""
        return {} if self.compute == "float32" else {"compute": self.compute}

    def repr_options(self) -> str:
        return "" if self.compute == "float32" else f", compute={self.compute!r}"

    @classmethod
    def options_from_file(cls, f: FileFields, dim: int) -> dict:
        return {"compute": f.choice_param("compute", COMPUTES)} if "compute" in f.params else {}

    def _compute_args(self) -> tuple:
        if self.compute == "float32":
            return ()
        return (True, self.bf16_level)


class Sq8Storage(FloatStorage):
    """"sq8": per-dimension 8-bit codes (see _sq8.py) scanned first, the best
    rescore * k candidates re-scored with the exact float32 rows."""

    KEEPS_EXACT = True

    def __init__(self, dtype: str, dim: int, metric: str, seed: int):
        super().__init__(dtype, dim, metric, seed)
        self.code_min = self.code_scale = None

    def fit(self, x: np.ndarray, n_threads: int):
        return train_sq8(x)

    def set_trained(self, fitted, centroids: np.ndarray) -> None:
        self.code_min, self.code_scale = fitted

    def encode(self, x: np.ndarray, labels: np.ndarray, n_threads: int = 0) -> np.ndarray:
        return encode_sq8(x, self.code_min, self.code_scale)

    def _code_ranges(self) -> tuple:
        return self.code_min, self.code_scale

    def trained_arrays(self) -> dict:
        if self.code_min is None:
            return {}
        return {"code_min": self.code_min, "code_scale": self.code_scale}

    def trained_from_file(self, f: FileFields):
        return checked_ranges(f, self.dim)
