"""PQIndex: product quantisation with 4-bit codes scanned by SIMD table look-ups, re-scored exactly."""

from __future__ import annotations

import threading

import numpy as np

from .. import _core
from .._util.allow import allow_mask
from .._util.arrays import (
    as_float_matrix, as_query_rows, check_choice, check_positive_int, check_threads,
)
from .._util.file_checks import FileFields
from .._util.fileformat import read_index, write_index
from .._util.ids import check_known_ids, check_new_ids
from ..hits import Hits
from . import _pq4_codes as codes_
from ._metric import METRICS, NATIVE_METRIC, normalized

_FILE_KIND = "PQIndex"
_MAX_SEED = (1 << 64) - 1
_UNIT_TOLERANCE = 0.05  # squared norm of a stored unit vector: 1 within float32 rounding


class PQIndex:
    """Approximate top-k by product quantisation with 4-bit codes (fast scan).

    Args:
        dim: dimensions per vector; must be divisible by m.
        m: sub-quantisers (1..256), each coding dim / m dimensions in 4 bits, so a
            vector is scanned as m / 2 bytes (dim * 4 bytes in float32).
        metric: "ip", "cosine" or "l2" (higher score is better).
        seed: k-means seed of the codebooks.

    ``search`` scans every code with the query's byte tables held in SIMD
    registers (pshufb; FAISS's IndexPQFastScan technique), comparing each block of
    estimates with the running threshold of the ``rescore * k`` best so far, and
    re-scores those with the exact float32 vectors (kept in memory, or mapped from
    the file by ``load(mmap=True)``): returned scores are exact.
    """

    def __init__(self, dim: int, m: int, metric: str = "ip", *, seed: int = 0):
        self._dim = check_positive_int(dim, "dim")
        self._m = codes_.check_m(self._dim, m)
        self._metric = check_choice(metric, "metric", METRICS)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed <= _MAX_SEED:
            raise ValueError(f"seed must be an integer in [0, {_MAX_SEED}], got {seed!r}")
        self._seed = int(seed)
        self._lock = threading.Lock()
        self._centroids = self._by_dim = None  # [m, 16, dim / m] and [m, dim / m, 16]
        self._set_rows(np.empty((0, self._m), dtype=np.uint8), np.empty((0, self._dim), np.float32),
                       np.empty(0, dtype=np.int64))
        self._next_id = 0

    dim = property(lambda self: self._dim)
    m = property(lambda self: self._m)
    metric = property(lambda self: self._metric)
    is_trained = property(lambda self: self._centroids is not None)

    @property
    def centroids(self) -> np.ndarray:
        """float32 [m, 16, dim / m] copy of the codebooks."""
        self._require_trained("centroids")
        return self._centroids.copy()

    @property
    def ids(self) -> np.ndarray:
        """The ids of the stored vectors, in row order (a copy)."""
        return self._ids.copy()

    def __len__(self) -> int:
        return len(self._ids)

    def __repr__(self) -> str:
        return f"PQIndex(dim={self._dim}, m={self._m}, metric={self._metric!r}, n={len(self)})"

    def bytes_per_vector(self) -> dict:
        """Bytes scanned per vector (the packed 4-bit codes) and kept: the packed codes, the
        codes one per byte (re-packed by add and remove), the exact float32 vector, the id
        and, for "l2", the squared norm."""
        scanned = (self._m + 1) // 2
        return {"scanned": scanned, "kept": scanned + self._m + 4 * self._dim + 8 +
                (4 if self._metric == "l2" else 0), "float32": 4 * self._dim}

    def memory_bytes(self) -> int:
        parts = [self._packed, self._codes, self._exact, self._ids, self._sq_norms, self._centroids]
        return int(sum(p.nbytes for p in parts if p is not None))

    def _prepared(self, vectors, name: str) -> np.ndarray:
        x = as_float_matrix(vectors, name, self._dim)
        return np.ascontiguousarray(normalized(x, name) if self._metric == "cosine" else x)

    def _require_trained(self, what: str) -> None:
        if self._centroids is None:
            raise RuntimeError(f"PQIndex.{what}: the index is not trained; call train(sample) first")

    def _set_rows(self, codes, exact, ids, sq_norms=None) -> None:
        """New arrays, never grown in place: a running search keeps its snapshot."""
        if sq_norms is None and self._metric == "l2":
            sq_norms = np.einsum("ij,ij->i", exact, exact, dtype=np.float32)
        self._codes, self._exact, self._ids = codes, exact, ids
        self._sq_norms = sq_norms if self._metric == "l2" else None
        self._packed = _core.pq4_pack(np.ascontiguousarray(codes), self._m)
        self._sorted_ids = np.sort(ids)

    def train(self, sample, n_threads: int = 0) -> None:
        """Learns 16 centroids per sub-quantiser by k-means (squared L2) on sample's parts.

        sample: at least 16 vectors (one per code); a few thousand give good codebooks.
        As faiss does, each sub-quantiser learns from at most 256 * 16 = 4,096 of them,
        drawn by the seed (the same rows for every sub-quantiser).
        """
        n_threads = check_threads(n_threads)
        books = codes_.train_codebooks(self._prepared(sample, "sample"), self._m, self._seed, n_threads)
        with self._lock:
            if len(self._ids):
                raise RuntimeError("train: the index already holds vectors; train a new PQIndex")
            self._centroids, self._by_dim = books, codes_.by_dimension(books)

    def encode(self, vectors, n_threads: int = 0) -> np.ndarray:
        """uint8 [n, m] codes: per sub-quantiser, the nearest centroid (squared L2)."""
        self._require_trained("encode")
        x = self._prepared(vectors, "vectors")
        return codes_.encode(x, self._centroids, check_threads(n_threads))

    def add(self, vectors, ids=None, n_threads: int = 0) -> np.ndarray:
        """Encodes and stores vectors (and their exact float32 values); returns their ids."""
        self._require_trained("add")
        n_threads = check_threads(n_threads)
        x = self._prepared(vectors, "vectors")
        codes = codes_.encode(x, self._centroids, n_threads)
        with self._lock:
            new_ids = check_new_ids(ids, len(x), self._sorted_ids, self._next_id)
            if len(self._ids) + len(new_ids) >= 1 << 32:
                raise ValueError("a PQIndex holds at most 2**32 - 1 vectors")
            self._set_rows(np.concatenate([self._codes, codes]), np.concatenate([self._exact, x]),
                           np.concatenate([self._ids, new_ids]))
            if len(new_ids):
                self._next_id = max(self._next_id, int(new_ids.max()) + 1)
        return new_ids.copy()

    def remove(self, ids) -> None:
        """Removes the vectors with these ids; unknown ids are an error (nothing is removed)."""
        with self._lock:
            keep = ~np.isin(self._ids, check_known_ids(ids, self._sorted_ids))
            self._set_rows(self._codes[keep], np.ascontiguousarray(self._exact[keep]), self._ids[keep],
                           None if self._sq_norms is None else self._sq_norms[keep])

    def search(self, queries, k: int, rescore: int = 8, n_threads: int = 0, allow=None) -> Hits:
        """Top-k: the rescore * k vectors with the best fast-scan estimates, re-scored
        exactly (returned scores are exact). Hits [nq, k], padded (-1, -inf).

        allow: only these ids may be returned (an id list or array, or a boolean mask
        indexed by id), applied inside the scan: the candidates are the best allowed ones.
        """
        self._require_trained("search")
        k = check_positive_int(k, "k")
        rescore = check_positive_int(rescore, "rescore")
        n_threads = check_threads(n_threads)
        if self._metric == "cosine":
            q = self._prepared(queries, "queries")
        else:  # values checked natively, once
            q = np.ascontiguousarray(as_query_rows(queries, self._dim))
        with self._lock:
            packed, exact, ids, sq_norms = self._packed, self._exact, self._ids, self._sq_norms
        mask, by_row = (None, False) if allow is None else allow_mask(allow, ids)
        return _core.pq4_search(
            packed, self._m, self._by_dim, exact, sq_norms, ids, NATIVE_METRIC[self._metric],
            q, k, rescore, n_threads, None, mask, by_row)

    # ---- persistence ----------------------------------------------------

    def save(self, path) -> None:
        """Writes the index to path (atomically: temporary file, then rename): codebooks,
        codes, exact vectors, ids; the fast-scan layout is rebuilt from the codes on load."""
        with self._lock:
            arrays = {"codes": self._codes, "exact": self._exact, "ids": self._ids}
            if self._centroids is not None:
                arrays["codebooks"] = self._centroids.reshape(self._m * codes_.CODES, -1)
            if self._sq_norms is not None:
                arrays["sq_norms"] = self._sq_norms
            params = {"dim": self._dim, "m": self._m, "metric": self._metric, "seed": self._seed,
                      "next_id": self._next_id}
            write_index(path, _FILE_KIND, params, arrays)

    @classmethod
    def load(cls, path, mmap: bool = False) -> PQIndex:
        """Reads an index written by save(); damaged, foreign or crafted files raise
        IndexFileError naming the field that is wrong. mmap=True maps the exact vectors
        read-only from the file (the checksum is still verified); a later add or remove
        copies them into memory."""
        params, arrays = read_index(path, _FILE_KIND, mmap=mmap)
        f = FileFields(path, params, arrays)
        dim = f.int_param("dim", 1, 1 << 16)
        m = f.int_param("m", 1, codes_.MAX_M)
        if dim % m:
            f.fail("params.m", f"{m} does not divide dim={dim}")
        index = cls(dim, m, f.choice_param("metric", METRICS), seed=f.int_param("seed", 0, _MAX_SEED))
        ids = f.array("ids", np.int64, (None,))
        n = len(ids)
        if n >= 1 << 32:
            f.fail("ids", "a PQIndex holds at most 2**32 - 1 vectors")
        f.sorted_ids("ids", ids)
        next_id = f.next_id(ids)
        codes = codes_.checked_codes(f, n, m)
        exact = f.array("exact", np.float32, (n, dim))
        values_sq = f.bounded_rows("exact", exact)
        if index._metric == "cosine" and n and (np.abs(values_sq - 1.0) > _UNIT_TOLERANCE).any():
            f.fail("exact", "a cosine index holds unit vectors; a row is not of norm 1")
        sq_norms = None
        if index._metric == "l2":
            f.matching_norms("sq_norms", f.array("sq_norms", np.float32, (n,)), values_sq)
            sq_norms = values_sq
        if "codebooks" in arrays:
            index._centroids = codes_.checked_codebooks(f, dim, m)
            index._by_dim = codes_.by_dimension(index._centroids)
        elif n:
            f.fail("codebooks", "missing, but the index holds vectors")
        index._set_rows(codes, exact, ids, sq_norms)
        index._next_id = next_id
        return index
