"""FlatIndex: exact dense top-k search over stored vectors."""

from __future__ import annotations

import threading

import numpy as np

from .. import _core
from .._util.allow import allow_mask
from .._util.arrays import (
    MAX_DIM, as_float_matrix, as_query_rows, check_choice, check_limit,
    check_positive_int, check_threads,
)
from .._util.devices import to_device
from .._util.file_checks import FileFields
from .._util.fileformat import read_index, write_index
from .._util.ids import check_known_ids, check_new_ids
from ._storage import NATIVE_STORAGE, NUMPY_DTYPE, STORAGE_DTYPES, to_float32, to_storage
from ..hits import Hits
from ._metric import METRICS, NATIVE_METRIC, normalized

_FILE_KIND = "FlatIndex"
COMPUTES = ("float32", "bfloat16")
_BF16_LEVEL_NAMES = {_core.Bf16Level.Scalar: "scalar", _core.Bf16Level.Avx512Bf16: "avx512_bf16",
                     _core.Bf16Level.Amx: "amx"}


class FlatIndex:
    """Exact (brute-force) top-k search.

    Args:
        dim: dimensions per vector, 1 to 65,536 (``MAX_DIM``).
        metric: "ip" (inner product), "cosine" (vectors and queries are
            normalised; zero vectors are refused) or "l2" (score is minus the
            squared Euclidean distance, so higher is better everywhere).
        dtype: storage of the vectors: "float32", "float16" or "bfloat16".
            Narrower storage halves the memory read per query; scores are
            computed in float32 from the stored (rounded) values.
        compute: "float32" (default): exact float32 products of the query and the
            stored values. "bfloat16" (bfloat16 storage only): the query is rounded to
            bfloat16 too and the products run on the CPU's bfloat16 instructions, AMX
            tiles where the CPU and kernel allow them, else AVX512_BF16 (``compute_level``
            says which). Faster at large batches; scores differ from float32 compute by
            the query's rounding (relative 2**-9 per element), so near-ties may rank
            differently. A query's results still do not depend on its batch. On CPUs
            without these instructions the same arithmetic runs in scalar code: correct,
            and much slower than float32 compute.

    Input arrays may be numpy arrays, torch CPU tensors or any DLPack object;
    contiguous float32 is used without a copy. float64 and float16 input is
    converted to float32 with a ``ragcore.CopyWarning``; other dtypes are
    refused.

    ``search`` may run from several threads at once, and concurrently with
    ``add``/``remove``: each search sees the index as it was when it started.
    """

    def __init__(self, dim: int, metric: str = "ip", dtype: str = "float32",
                 compute: str = "float32"):
        self._dim = check_limit(dim, "dim", MAX_DIM)
        self._metric = check_choice(metric, "metric", METRICS)
        self._dtype = check_choice(dtype, "dtype", STORAGE_DTYPES)
        self._compute = check_choice(compute, "compute", COMPUTES)
        if compute == "bfloat16" and dtype != "bfloat16":
            raise ValueError(f"compute='bfloat16' needs dtype='bfloat16', got dtype={dtype!r}")
        self._lock = threading.Lock()
        self._n = 0
        self._vectors = np.empty((0, self._dim), dtype=NUMPY_DTYPE[dtype])
        self._ids = np.empty(0, dtype=np.int64)
        self._sq_norms = np.empty(0, dtype=np.float32)
        self._sorted_ids = np.empty(0, dtype=np.int64)
        self._next_id = 0
        # Private knobs for tests and benchmarks: path (a _core.DensePath), simd_level (a
        # _core.SimdLevel), tile_rows, tile_depth.
        self._search_options: dict = {}

    # ---- properties -----------------------------------------------------

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def metric(self) -> str:
        return self._metric

    @property
    def dtype(self) -> str:
        return self._dtype

    @property
    def compute(self) -> str:
        return self._compute

    @property
    def compute_level(self) -> str:
        """The kernels that search with: "float32", or for bfloat16 compute "amx",
        "avx512_bf16" or "scalar" (this CPU has no bfloat16 instructions)."""
        if self._compute == "float32":
            return "float32"
        return _BF16_LEVEL_NAMES[_core.best_bf16_level()]

    def __len__(self) -> int:
        return self._n

    def __repr__(self) -> str:
        compute = "" if self._compute == "float32" else f", compute={self._compute!r}"
        return (f"FlatIndex(dim={self._dim}, metric={self._metric!r}, "
                f"dtype={self._dtype!r}{compute}, n={self._n})")

    @property
    def ids(self) -> np.ndarray:
        """The ids of the stored vectors, in storage order (a copy)."""
        return self._ids[: self._n].copy()

    def stored_vectors(self) -> np.ndarray:
        """float32 copy of the vectors as stored (normalised for cosine, rounded for fp16/bf16)."""
        return to_float32(self._vectors[: self._n], self._dtype)

    # ---- mutation -------------------------------------------------------

    def add(self, vectors, ids=None) -> np.ndarray:
        """Adds vectors; returns their ids.

        ids: int64 user ids, one per vector, non-negative and not already in
        the index. Default: consecutive ids after the largest id given so far.
        """
        x = as_float_matrix(vectors, "vectors", self._dim)
        if self._metric == "cosine":
            x = normalized(x, "vectors")
        stored = to_storage(x, self._dtype, "vectors")
        sq_norms = None
        if self._metric == "l2":
            values = to_float32(stored, self._dtype)
            sq_norms = np.einsum("ij,ij->i", values, values, dtype=np.float32)
        with self._lock:
            new_ids = self._check_new_ids(ids, len(x))
            self._append(stored, new_ids, sq_norms)
        return new_ids.copy()

    def _check_new_ids(self, ids, count: int) -> np.ndarray:
        return check_new_ids(ids, count, self._sorted_ids, self._next_id)

    def _append(self, stored: np.ndarray, new_ids: np.ndarray, sq_norms) -> None:
        count, end = len(new_ids), self._n + len(new_ids)
        if end > len(self._vectors) or not self._vectors.flags.writeable:
            capacity = max(end, 2 * len(self._vectors), 16)
            self._vectors = _grown(self._vectors, self._n, capacity)
            self._ids = _grown(self._ids, self._n, capacity)
            if self._metric == "l2":
                self._sq_norms = _grown(self._sq_norms, self._n, capacity)
        # Rows below self._n are never written here, so a search running on an
        # older snapshot keeps reading consistent data.
        self._vectors[self._n : end] = stored
        self._ids[self._n : end] = new_ids
        if sq_norms is not None:
            self._sq_norms[self._n : end] = sq_norms
        merged = np.concatenate([self._sorted_ids, new_ids])
        merged.sort(kind="stable")
        self._sorted_ids = merged
        if count:
            self._next_id = max(self._next_id, int(new_ids.max()) + 1)
        self._n = end

    def remove(self, ids) -> None:
        """Removes the vectors with these ids; unknown ids are an error (nothing is removed)."""
        with self._lock:
            arr = check_known_ids(ids, self._sorted_ids)
            keep = ~np.isin(self._ids[: self._n], arr)
            # New arrays rather than in-place compaction: running searches keep their snapshot.
            self._vectors = self._vectors[: self._n][keep]
            self._ids = self._ids[: self._n][keep]
            self._sq_norms = self._sq_norms[: self._n][keep] if self._metric == "l2" else self._sq_norms[:0]
            self._sorted_ids = np.setdiff1d(self._sorted_ids, arr, assume_unique=False)
            self._n = len(self._ids)

    # ---- search ---------------------------------------------------------

    def search(self, queries, k: int, n_threads: int = 0, allow=None) -> Hits:
        """Top-k of each query: ``Hits`` with scores/ids of shape [nq, k], best first.

        A 1-D query is one query. If k exceeds the number of vectors (or the
        index is empty), rows are padded with id -1 and score -inf.
        n_threads=0 uses all cores. allow: only these ids may be returned (an
        id list or array, or a boolean mask indexed by id); applied inside the
        scan, so a row is padded only when fewer than k allowed vectors exist.
        """
        if type(k) is not int or k < 1:  # the plain case costs one test
            k = check_positive_int(k, "k")
        if type(n_threads) is not int or not 0 <= n_threads <= 1 << 16:
            n_threads = check_threads(n_threads)
        if self._metric == "cosine":
            q = normalized(as_float_matrix(queries, "queries", self._dim), "queries")
        else:
            q = as_query_rows(queries, self._dim)  # values checked natively, once
        with self._lock:  # the first n rows of these buffers: the index as of this search
            n, vectors, ids = self._n, self._vectors, self._ids
            sq_norms = self._sq_norms if self._metric == "l2" else None
        mask, by_row = (None, False) if allow is None else allow_mask(allow, ids[:n])
        args = (vectors, n, q, k, NATIVE_STORAGE[self._dtype], NATIVE_METRIC[self._metric], ids,
                sq_norms, n_threads, mask, by_row, self._compute == "bfloat16")
        # Options by keyword only when a test or benchmark set them: a keyword dict, even an
        # empty one, sends pybind11 through its slower argument matching.
        options = self._search_options
        return _core.flat_search(*args, **options) if options else _core.flat_search(*args)

    # ---- copies and devices --------------------------------------------

    def copy(self) -> FlatIndex:
        """An independent copy of the index."""
        vectors, ids, sq_norms, sorted_ids = self.stored_arrays()
        other = FlatIndex(self._dim, self._metric, self._dtype, self._compute)
        other._vectors, other._ids, other._n = vectors.copy(), ids.copy(), len(ids)
        other._sorted_ids = sorted_ids.copy()
        if sq_norms is not None:
            other._sq_norms = sq_norms.copy()
        other._next_id = self._next_id
        return other

    def to(self, device):
        """'cpu' gives this index; 'cuda' / 'cuda:N' a GpuFlatIndex copy on that device."""
        return to_device(self, device)

    def stored_arrays(self):
        """(vectors, ids, sq_norms or None, sorted ids) as stored now, for other indexes."""
        with self._lock:
            n = self._n
            sq_norms = self._sq_norms[:n] if self._metric == "l2" else None
            return self._vectors[:n], self._ids[:n], sq_norms, self._sorted_ids

    # ---- persistence ----------------------------------------------------

    def save(self, path) -> None:
        """Writes the index to path (atomically: temporary file, then rename)."""
        with self._lock:
            n = self._n
            arrays = {"vectors": self._vectors[:n], "ids": self._ids[:n]}
            if self._metric == "l2":
                arrays["sq_norms"] = self._sq_norms[:n]
            params = {"dim": self._dim, "metric": self._metric, "dtype": self._dtype,
                      "compute": self._compute, "next_id": self._next_id}
            write_index(path, _FILE_KIND, params, arrays)

    @classmethod
    def load(cls, path, mmap: bool = False) -> FlatIndex:
        """Reads an index written by save(); damaged, foreign or crafted files raise
        IndexFileError naming the field that is wrong.

        mmap=True maps the vectors read-only (a private mapping) instead of reading them
        into memory; a later add() copies them into memory first. The file must then not
        be truncated or rewritten in place while the index is used (the process would get
        SIGBUS); save() replaces files by renaming, which is safe.
        """
        params, arrays = read_index(path, _FILE_KIND, mmap=mmap)
        f = FileFields(path, params, arrays)
        dim = f.int_param("dim", 1, MAX_DIM)
        metric = f.choice_param("metric", METRICS)
        dtype = f.choice_param("dtype", STORAGE_DTYPES)
        # Files written before the compute option computed in float32.
        compute = f.choice_param("compute", COMPUTES) if "compute" in params else "float32"
        if compute == "bfloat16" and dtype != "bfloat16":
            f.fail("params.compute", "'bfloat16' compute needs bfloat16 storage")
        ids = f.array("ids", np.int64, (None,))
        n = len(ids)
        vectors = f.array("vectors", NUMPY_DTYPE[dtype], (n, dim))
        sorted_ids = f.sorted_ids("ids", ids)
        next_id = f.next_id(ids)
        sq_norms = f.bounded_rows("vectors", vectors, lambda rows: to_float32(rows, dtype))
        if metric == "cosine" and n and (np.abs(sq_norms - 1.0) > _UNIT_TOLERANCE).any():
            f.fail("vectors", "a cosine index holds unit vectors; a row is not of norm 1")
        if metric == "l2":
            f.matching_norms("sq_norms", f.array("sq_norms", np.float32, (n,)), sq_norms)
        index = cls(dim, metric, dtype, compute)
        index._vectors, index._ids = vectors, ids
        index._sq_norms = sq_norms if metric == "l2" else np.empty(0, dtype=np.float32)
        index._n = n
        index._sorted_ids = sorted_ids
        index._next_id = next_id
        return index


# Squared norms of the stored unit vectors of a cosine index are 1 within the rounding of
# the storage dtype (bfloat16 keeps 8 bits: about 1e-2).
_UNIT_TOLERANCE = 0.05


def _grown(arr: np.ndarray, used: int, capacity: int) -> np.ndarray:
    out = np.empty((capacity,) + arr.shape[1:], dtype=arr.dtype)
    out[:used] = arr[:used]
    return out
