"""IVFIndex storage dtype="pq4": direct 4-bit PQ codes per list in fast-scan blocks,
the best candidates re-scored with the exact float32 rows (see cpp/include/ragcore/
dense/ivf_pq4.h). The lists keep the codes as their rows ([n, m] uint8) and the
float32 rows as their exact rows; the fast-scan blocks are derived from them."""

from __future__ import annotations

import numpy as np

from .. import _core
from .._util.file_checks import FileFields
from . import _pq4_codes as codes_
from ._ivf_storage_base import Coarse, IvfStorage, Snapshot
from ..hits import Hits
from ._lists import Lists


class Pq4Storage(IvfStorage):
    """"pq4": 4-bit product quantisation (m sub-quantisers, m / 2 bytes scanned per
    vector) in fast-scan blocks, the best rescore * k re-scored exactly."""

    OPTIONS = ("m",)
    KEEPS_EXACT = True

    def __init__(self, dtype: str, dim: int, metric: str, seed: int, *, m: int | None = None):
        super().__init__(dtype, dim, metric, seed)
        if m is None:
            raise ValueError("dtype='pq4' needs m= (sub-quantisers, a divisor of dim)")
        self.m = codes_.check_m(dim, m)
        self.books = self.by_dim = None  # the codebooks, and as the native table builder reads them

    @property
    def options(self) -> dict:
        return {"m": self.m}

    def empty_rows(self) -> np.ndarray:
        return np.empty((0, self.m), dtype=np.uint8)

    def fit(self, x: np.ndarray, n_threads: int):
        return codes_.train_codebooks(x, self.m, self.seed, n_threads)

    def set_trained(self, fitted, centroids: np.ndarray) -> None:
        self.books, self.by_dim = fitted, codes_.by_dimension(fitted)

    def encode(self, x: np.ndarray, labels: np.ndarray, n_threads: int = 0) -> np.ndarray:
        return codes_.encode(x, self.books, n_threads)

    def attach(self, lists: Lists) -> Snapshot:
        """Packs the codes into blocks now: add pays for it, not the next search."""
        return Snapshot(lists, codes_.pack_lists(lists.rows, lists.offsets))

    def search(self, snapshot: Snapshot, coarse: Coarse, q, k, nprobe, rescore, mask, by_row,
               n_threads) -> Hits:
        lists, (packed, block_offsets) = snapshot.lists, snapshot.derived
        return _core.ivf_pq4_search(
            coarse.centroids, coarse.sq_norms, lists.offsets, block_offsets, packed,
            self.m, self.by_dim, lists.exact, lists.sq_norms, lists.ids, coarse.metric,
            np.ascontiguousarray(q), k, nprobe, rescore, mask, by_row, n_threads, None,
            self.owner)

    def scanned_bytes(self) -> int:
        return (self.m + 1) // 2

    def kept_extra_bytes(self) -> int:
        """The exact row, and the codes one per byte, which add and remove re-pack."""
        return 4 * self.dim + self.m

    def memory_arrays(self, snapshot: Snapshot) -> list:
        return [self.books, snapshot.derived[0]]

    @classmethod
    def options_from_file(cls, f: FileFields, dim: int) -> dict:
        m = f.int_param("m", 1, codes_.MAX_M)
        if dim % m:
            f.fail("params.m", f"{m} does not divide dim={dim}")
        return {"m": m}

    def checked_rows(self, f: FileFields, n: int) -> np.ndarray:
        return codes_.checked_codes(f, n, self.m, "rows")

    def trained_arrays(self) -> dict:
        if self.books is None:
            return {}
        return {"codebooks": self.books.reshape(-1, self.books.shape[2])}

    def trained_from_file(self, f: FileFields):
        return codes_.checked_codebooks(f, self.dim, self.m)
