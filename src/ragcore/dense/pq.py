"""PQIndex: product quantisation with 4-bit codes scanned by SIMD table look-ups, re-scored exactly."""

from __future__ import annotations

import threading

import numpy as np

from .. import _core
from .._util.arrays import as_float_matrix, check_choice, check_positive_int, check_threads
from .._util.ids import check_new_ids
from ..hits import Hits
from ._metric import METRICS, NATIVE_METRIC, normalized

_CODES = 16  # 4-bit codes: 16 centroids per sub-quantiser
_MAX_M = 256


class PQIndex:
    """Approximate top-k by product quantisation with 4-bit codes (fast scan).

    Args:
        dim: dimensions per vector; must be divisible by m.
        m: sub-quantisers (1..256), each coding dim / m dimensions in 4 bits, so a
            vector is scanned as m / 2 bytes (dim * 4 bytes in float32).
        metric: "ip", "cosine" or "l2" (higher score is better).
        seed: k-means seed of the codebooks.

    ``search`` scans every code with the query's byte tables held in SIMD
    registers (pshufb; FAISS's IndexPQFastScan technique), keeps the
    ``rescore * k`` best, and re-scores those with the exact float32 vectors,
    which the index keeps in memory: returned scores are exact. Not built:
    remove(), save/load, IVF storage (dtype="pq4").
    """

    def __init__(self, dim: int, m: int, metric: str = "ip", *, seed: int = 0):
        self._dim = check_positive_int(dim, "dim")
        self._m = check_positive_int(m, "m")
        if self._m > _MAX_M:
            raise ValueError(f"m must be between 1 and {_MAX_M}, got {m}")
        if self._dim % self._m:
            raise ValueError(f"dim={dim} is not divisible by m={m}; pick m among the divisors of "
                             f"dim (e.g. {', '.join(str(v) for v in _divisors(dim)[-4:])})")
        self._metric = check_choice(metric, "metric", METRICS)
        self._seed = int(seed)
        self._lock = threading.Lock()
        self._centroids = None  # [m, 16, dim / m]
        self._codes = np.empty((0, self._m), dtype=np.uint8)
        self._packed = _core.pq4_pack(self._codes, self._m)
        self._exact = np.empty((0, self._dim), dtype=np.float32)
        self._sq_norms = np.empty(0, dtype=np.float32)
        self._ids = np.empty(0, dtype=np.int64)
        self._sorted_ids = np.empty(0, dtype=np.int64)
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

    def __len__(self) -> int:
        return len(self._ids)

    def __repr__(self) -> str:
        return f"PQIndex(dim={self._dim}, m={self._m}, metric={self._metric!r}, n={len(self)})"

    def bytes_per_vector(self) -> dict:
        """Bytes scanned per vector (the 4-bit codes) and kept (codes + exact float32 + id)."""
        scanned = (self._m + 1) // 2
        return {"scanned": scanned, "kept": scanned + 4 * self._dim + 8 +
                (4 if self._metric == "l2" else 0), "float32": 4 * self._dim}

    def memory_bytes(self) -> int:
        parts = [self._packed, self._exact, self._ids, self._sq_norms, self._centroids]
        return int(sum(p.nbytes for p in parts if p is not None))

    def _prepared(self, vectors, name: str) -> np.ndarray:
        x = as_float_matrix(vectors, name, self._dim)
        return np.ascontiguousarray(normalized(x, name) if self._metric == "cosine" else x)

    def _require_trained(self, what: str) -> None:
        if self._centroids is None:
            raise RuntimeError(f"PQIndex.{what}: the index is not trained; call train(sample) first")

    def train(self, sample, n_threads: int = 0) -> None:
        """Learns 16 centroids per sub-quantiser by k-means (squared L2) on sample's parts.

        sample: at least 16 vectors (one per code); a few thousand give good codebooks.
        """
        n_threads = check_threads(n_threads)
        x = self._prepared(sample, "sample")
        if len(x) < _CODES:
            raise ValueError(f"sample has {len(x)} vectors; training 4-bit codes needs at least "
                             f"{_CODES} (one per code)")
        dsub = self._dim // self._m
        books = np.empty((self._m, _CODES, dsub), dtype=np.float32)
        for j in range(self._m):  # one native k-means per sub-quantiser
            part = np.ascontiguousarray(x[:, j * dsub : (j + 1) * dsub])
            books[j] = _core.kmeans(part, _CODES, seed=self._seed + j, n_threads=n_threads)[0]
        with self._lock:
            if len(self._ids):
                raise RuntimeError("train: the index already holds vectors; train a new PQIndex")
            self._centroids = books

    def encode(self, vectors, n_threads: int = 0) -> np.ndarray:
        """uint8 [n, m] codes: per sub-quantiser, the nearest centroid (squared L2)."""
        self._require_trained("encode")
        x = self._prepared(vectors, "vectors")
        return self._encode(x, check_threads(n_threads))

    def _encode(self, x: np.ndarray, n_threads: int) -> np.ndarray:
        dsub = self._dim // self._m
        codes = np.empty((len(x), self._m), dtype=np.uint8)
        for j in range(self._m):
            part = np.ascontiguousarray(x[:, j * dsub : (j + 1) * dsub])
            codes[:, j] = _core.assign_nearest(part, self._centroids[j], n_threads=n_threads)[0]
        return codes

    def add(self, vectors, ids=None, n_threads: int = 0) -> np.ndarray:
        """Encodes and stores vectors (and their exact float32 values); returns their ids."""
        self._require_trained("add")
        n_threads = check_threads(n_threads)
        x = self._prepared(vectors, "vectors")
        codes = self._encode(x, n_threads)
        with self._lock:
            new_ids = check_new_ids(ids, len(x), self._sorted_ids, self._next_id)
            all_codes = np.concatenate([self._codes, codes])
            # New arrays, not in-place growth: a running search keeps its snapshot.
            self._packed = _core.pq4_pack(all_codes, self._m)
            self._codes = all_codes
            self._exact = np.concatenate([self._exact, x])
            if self._metric == "l2":
                self._sq_norms = np.concatenate(
                    [self._sq_norms, np.einsum("ij,ij->i", x, x, dtype=np.float32)])
            self._ids = np.concatenate([self._ids, new_ids])
            self._sorted_ids = np.sort(self._ids)
            if len(new_ids):
                self._next_id = max(self._next_id, int(new_ids.max()) + 1)
        return new_ids.copy()

    def search(self, queries, k: int, rescore: int = 8, n_threads: int = 0) -> Hits:
        """Top-k: the rescore * k vectors with the best fast-scan estimates, re-scored
        exactly (returned scores are exact). Hits [nq, k], padded (-1, -inf)."""
        self._require_trained("search")
        k = check_positive_int(k, "k")
        rescore = check_positive_int(rescore, "rescore")
        n_threads = check_threads(n_threads)
        q = self._prepared(queries, "queries")
        with self._lock:
            packed, exact, ids = self._packed, self._exact, self._ids
            sq_norms = self._sq_norms if self._metric == "l2" else None
        scores, out_ids = _core.pq4_search(
            packed, self._m, self._centroids, exact, sq_norms, ids, NATIVE_METRIC[self._metric],
            q, k, rescore=rescore, n_threads=n_threads)
        return Hits(scores, out_ids)


def _divisors(n: int) -> list[int]:
    return [v for v in range(1, n + 1) if n % v == 0 and v <= _MAX_M]
