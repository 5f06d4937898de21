"""IVFIndex with RaBitQ storage (``IVFIndex(..., dtype="rabitq", bits=...)``).

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
from .._util.allow import allow_mask
from .._util.arrays import (
    MAX_NLIST, MAX_NORM, ONE_ROW_SQ_NORM_LIMIT, check_limit, check_positive_int, check_threads,
    plain_row_args,
)
from .._util.file_checks import FileFields
from .._util.fileformat import write_index
from .._util.ids import check_new_ids
from ..hits import Hits
from ._lists import Lists
from ._metric import METRICS, NATIVE_METRIC
from ._rabitq import (
    DEFAULT_EPSILON, FAST_SCAN_MAX_DIM, LAYOUT, MAX_RABITQ_DIM, check_bits, check_epsilon, checked_factors,
    checked_rotation, code_bytes, dense_rotation, native_rescore, padded_dim, rotate,
    rotation_signs,
)
from .ivf import INITS, MAX_ITER, MAX_SEED, IVFIndex, checked_training

ENCODE_TILE = 8192  # rows per encoding tile (see RabitqIVFIndex.encode)
FILE_KIND = "IVFIndex"  # one kind for every IVF storage; params.dtype tells them apart


class RabitqIVFIndex(IVFIndex, dtype="rabitq"):
    """Approximate top-k over k-means lists stored as RaBitQ codes, re-scored exactly.

    Made by ``IVFIndex(dim, nlist, metric, dtype="rabitq", bits=...)``; the same
    train / add / remove / search / save / load as the other IVF storages.

    Args:
        dim: dimensions per vector, 1 to 65,536.
        nlist: number of lists; train needs >= nlist vectors.
        metric: "ip", "cosine" or "l2" (higher score is better).
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
        seed: k-means and rotation seed.
    """

    def __init__(self, dim: int, nlist: int, metric: str = "ip", dtype: str = "rabitq", *,
                 bits: int = 3, rescore="bound", epsilon: float = DEFAULT_EPSILON,
                 init: str = "kmeans++", max_iter: int = 25, seed: int = 0):
        if dtype != "rabitq":
            raise ValueError(f"RabitqIVFIndex stores dtype 'rabitq', got {dtype!r}")
        check_limit(dim, "dim", MAX_RABITQ_DIM)
        super().__init__(dim, nlist, metric, "float32", init=init, max_iter=max_iter, seed=seed)
        self._dtype = "rabitq"
        self._bits = check_bits(bits)
        self._rescore, self._native_rescore = rescore, native_rescore(rescore)
        self._epsilon = check_epsilon(epsilon)
        self._rotation = self._rot_centroids = None
        self._fast_scan = True
        self._fast = None  # (lists, their fast-scan blocks): built on the first search of them
        empty = self._lists  # float32 lists of the parent: keep their empty ids and exact rows
        self._lists = Lists(empty.offsets, np.empty((0, code_bytes(dim, self._bits)), np.uint8),
                            empty.ids, empty.sorted_ids, empty.sq_norms,
                            np.empty((0, dim), np.float32))

    bits = property(lambda self: self._bits)

    @property
    def fast_scan(self) -> bool:
        """Whether 1-bit codes are scanned by 4-bit table look-ups in SIMD registers (the
        fast scan: the codes and factors are re-packed in memory in blocks of 32 on the first
        search after a change, as many bytes again as the codes). True by default; applies at
        bits=1 and dim <= 1024 only; False: the bit-plane kernel (what bits > 1 use)."""
        return self._fast_scan and self._bits == 1 and padded_dim(self._dim) <= FAST_SCAN_MAX_DIM

    @fast_scan.setter
    def fast_scan(self, on: bool) -> None:
        if not isinstance(on, (bool, np.bool_)):
            raise ValueError(f"fast_scan must be True or False, got {on!r}")
        self._fast_scan = bool(on)
    epsilon = property(lambda self: self._epsilon)

    @property
    def rotation(self) -> np.ndarray:
        """float32 [padded dim, dim]: the matrix of the random orthogonal rotation (built
        on request: the index keeps only its sign bits)."""
        self._require_trained("rotation")
        return dense_rotation(self._rotation, self._dim)

    @property
    def last_search_counts(self) -> dict:
        """Rows scanned and exactly re-scored (all queries) by this thread's last search."""
        return dict(getattr(self._local, "counts", {}))

    def bytes_per_vector(self) -> dict:
        """Bytes per vector scanned (codes + factors) and kept (+ exact float32 row, id,
        squared norm for l2, and with the fast scan its second copy of codes + factors),
        next to float32's."""
        scanned = code_bytes(self._dim, self._bits)
        kept = scanned * (2 if self.fast_scan else 1) + 4 * self._dim + 8 + (4 if self._metric == "l2" else 0)
        return {"scanned": scanned, "kept": kept, "float32": 4 * self._dim}

    def memory_bytes(self) -> int:
        fast = self._fast
        extra = [p for p in (self._rotation, self._rot_centroids) if p is not None]
        if fast is not None and fast[0] is self._lists:
            extra.append(fast[1])
        return super().memory_bytes() + int(sum(p.nbytes for p in extra))

    def __repr__(self) -> str:
        return super().__repr__().replace("dtype='rabitq'", f"dtype='rabitq', bits={self._bits}")

    # ---- training and mutation -------------------------------------------

    def add(self, vectors, ids=None, n_threads: int = 0) -> np.ndarray:
        """Adds vectors to the lists of their nearest centroids; returns their ids."""
        self._require_trained("add")
        n_threads = check_threads(n_threads)
        x = np.ascontiguousarray(self._prepared(vectors, "vectors"))
        labels, _ = _core.assign_nearest(x, self._centroids, n_threads=n_threads)
        rows = self.encode(x, labels, n_threads)
        sq_norms = np.einsum("ij,ij->i", x, x, dtype=np.float32) if self._metric == "l2" else None
        with self._lock:
            new_ids = check_new_ids(ids, len(x), self._lists.sorted_ids, self._next_id)
            self._lists = self._lists.with_added(labels, rows, new_ids, sq_norms, x)
            if len(new_ids):
                self._next_id = max(self._next_id, int(new_ids.max()) + 1)
        return new_ids.copy()

    def encode(self, x: np.ndarray, labels: np.ndarray, n_threads: int = 0) -> np.ndarray:
        """uint8 rows (codes + factors) of prepared float32 vectors in lists `labels`.

        In tiles of ENCODE_TILE rows: the residuals and their rotation of one tile (12 MB at
        d = 384) are reused from the heap, where whole-batch temporaries (two n x d float32
        arrays) would be fresh pages, first touched, each time. Each row's code depends on
        that row alone, so the rows equal those of one call over the whole batch."""
        labels = np.ascontiguousarray(labels)
        rows = np.empty((len(x), code_bytes(self._dim, self._bits)), dtype=np.uint8)
        for start in range(0, len(x), ENCODE_TILE):
            part = slice(start, start + ENCODE_TILE)
            rotated = rotate(x[part] - self._centroids[labels[part]], self._rotation, n_threads)
            rows[part] = _core.rabitq_encode(rotated, self._rot_centroids, labels[part],
                                             bits=self._bits, n_threads=n_threads)[0]
        return rows

    def _set_centroids(self, centroids: np.ndarray, rotation: np.ndarray | None = None) -> None:
        """The centroids, and the rotation (sign bits drawn from the seed unless given, as
        on load: then sign bits or a layout-1 dense matrix)."""
        super()._set_centroids(centroids)
        self._rotation = rotation_signs(self._dim, self._seed) if rotation is None else rotation
        self._rot_centroids = rotate(self._centroids, self._rotation)

    # ---- search ---------------------------------------------------------

    def _fast_blocks(self, lists: Lists) -> np.ndarray | None:
        """The fast-scan blocks of these lists (packed once per Lists: they never change),
        or None where the fast scan is off or does not apply."""
        if not self.fast_scan:
            return None
        fast = self._fast
        if fast is None or fast[0] is not lists:
            fast = (lists, _core.rabitq_fast_pack(lists.rows, lists.offsets, dim=self._dim))
            self._fast = fast  # one assignment: a concurrent search sees the old or the new pair
        return fast[1]

    def search(self, queries, k: int, nprobe: int | None = None, n_threads: int = 0, allow=None,
               rescore=None) -> Hits:
        """Top-k of each query with exact scores: ``Hits`` [nq, k], padded (-1, -inf).

        nprobe: lists scanned per query, 1..nlist; default min(8, nlist).
        allow: only these ids may be returned (ids, or a boolean mask by id); a
            query whose nprobe lists hold fewer than k allowed rows scans further.
        rescore: "bound", "all" or an integer (see the class); None: the index's.
        """
        if rescore is None and allow is None and self._metric != "cosine":
            found = self._search_row(queries, k, nprobe, n_threads)
            if found is not None:  # one clean row with plain arguments, checked natively
                self._local.counts = found[2]
                return Hits.of_native(found[0], found[1])
        self._require_trained("search")
        k = check_positive_int(k, "k")
        nprobe = min(8, self._nlist) if nprobe is None else check_positive_int(nprobe, "nprobe")
        if nprobe > self._nlist:
            raise ValueError(f"nprobe must be between 1 and nlist={self._nlist}, got {nprobe}")
        mode, count = native_rescore(self._rescore if rescore is None else rescore)
        n_threads = check_threads(n_threads)
        q = self._prepared(queries, "queries")
        lists = self._lists
        mask, by_row = (None, False) if allow is None else allow_mask(allow, lists.ids)
        scores, ids, counts = _core.rabitq_ivf_search(
            lists.rows, q, k, centroids=self._centroids,
            centroid_sq_norms=self._centroid_sq_norms, rotation=self._rotation, bits=self._bits,
            list_offsets=lists.offsets, ids=lists.ids, exact_rows=lists.exact,
            sq_norms=lists.sq_norms, metric=NATIVE_METRIC[self._metric], nprobe=nprobe,
            rescore=mode, rescore_count=count, epsilon=self._epsilon, allow=mask,
            allow_by_row=by_row, n_threads=n_threads, fast_blocks=self._fast_blocks(lists))
        self._local.counts = counts
        return Hits(scores, ids)

    def _search_row(self, query, k, nprobe, n_threads):
        """(scores, ids, counts) of one contiguous, finite float32 row with plain int
        arguments in range and the index's rescore; None for anything else."""
        if nprobe is None:
            nprobe = min(8, self._nlist)
        if (self._centroids is None or not plain_row_args(n_threads, k, nprobe)
                or nprobe > self._nlist):
            return None
        lists, (mode, count) = self._lists, self._native_rescore
        return _core.rabitq_ivf_search_row(
            lists.rows, query, k, self._centroids, self._centroid_sq_norms, self._rotation,
            self._bits, lists.offsets, lists.ids, lists.exact, lists.sq_norms,
            NATIVE_METRIC[self._metric], nprobe, mode, count, self._epsilon,
            self._fast_blocks(lists), ONE_ROW_SQ_NORM_LIMIT, n_threads)

    def estimates(self, query, list_number: int) -> tuple[np.ndarray, np.ndarray]:
        """(estimated scores, one-standard-deviation error bounds) of the rows of one list
        for one query, in list order (what the scan ranks by; for inspection and tests).
        With the fast scan on, the bounds include its worst quantisation error."""
        self._require_trained("estimates")
        q = np.ascontiguousarray(self._prepared(query, "query")[:1])
        lists = self._lists
        list_number = check_limit(list_number + 1, "list_number + 1", self._nlist) - 1
        return _core.rabitq_estimates(
            lists.rows, q, list_number, centroids=self._centroids,
            centroid_sq_norms=self._centroid_sq_norms, rotation=self._rotation, bits=self._bits,
            list_offsets=lists.offsets, ids=lists.ids, exact_rows=lists.exact,
            sq_norms=lists.sq_norms, metric=NATIVE_METRIC[self._metric],
            fast_blocks=self._fast_blocks(lists))

    # ---- persistence ----------------------------------------------------

    def save(self, path) -> None:
        """Writes the index to path (atomically: temporary file, then rename)."""
        with self._lock:
            lists = self._lists
            arrays = {"offsets": lists.offsets, "rows": lists.rows, "ids": lists.ids,
                      "exact": lists.exact}
            if self._centroids is not None:
                arrays.update(centroids=self._centroids, rotation=self._rotation)
            if lists.sq_norms is not None:
                arrays["sq_norms"] = lists.sq_norms
            params = {"dim": self._dim, "nlist": self._nlist, "metric": self._metric,
                      "dtype": "rabitq", "rabitq_layout": self._layout(), "bits": self._bits, "rescore": self._rescore,
                      "epsilon": self._epsilon, "init": self._init, "max_iter": self._max_iter,
                      "seed": self._seed, "next_id": self._next_id, "training": self._training}
            write_index(path, FILE_KIND, params, arrays)

    def _layout(self) -> int:
        """2 (sign bits) unless this index came from a layout-1 file with a dense matrix."""
        dense = self._rotation is not None and self._rotation.dtype != np.uint8
        return 1 if dense else LAYOUT

    @classmethod
    def from_file(cls, f: FileFields) -> RabitqIVFIndex:
        """The index held by a file's checked fields (IVFIndex.load calls this for
        dtype "rabitq"); a field that is wrong raises IndexFileError naming it."""
        rescore = f.param("rescore")
        try:
            native_rescore(rescore)
        except ValueError as e:
            f.fail("params.rescore", str(e))
        index = cls(f.int_param("dim", 1, MAX_RABITQ_DIM), f.int_param("nlist", 1, MAX_NLIST),
                    f.choice_param("metric", METRICS), bits=f.int_param("bits", 1, 8),
                    rescore=rescore, epsilon=f.float_param("epsilon", 0.0, 1e6),
                    init=f.choice_param("init", INITS),
                    max_iter=f.int_param("max_iter", 1, MAX_ITER),
                    seed=f.int_param("seed", 0, MAX_SEED))
        index._restore(f)
        return index

    def _restore(self, f: FileFields) -> None:
        dim, nlist = self._dim, self._nlist
        ids, offsets = self._checked_layout(f)
        n = len(ids)
        rows = f.array("rows", np.uint8, (n, code_bytes(dim, self._bits)))
        checked_factors(f, rows, 8 * MAX_NORM)
        exact = f.array("exact", np.float32, (n, dim))
        sorted_ids = f.sorted_ids("ids", ids)
        self._next_id = f.next_id(ids)
        if "centroids" in f.arrays:
            centroids = f.array("centroids", np.float32, (nlist, dim))
            f.bounded_rows("centroids", centroids)
            layout = f.int_param("rabitq_layout", 1, LAYOUT) if "rabitq_layout" in f.params else 1
            self._set_centroids(centroids, checked_rotation(f, dim, layout))
        elif n:
            f.fail("centroids", "missing, but the index holds vectors")
        sq_norms = self._checked_sq_norms(f, "exact", f.bounded_rows("exact", exact))
        self._lists = Lists(offsets, rows, ids, sorted_ids, sq_norms, exact)
        self._training = checked_training(f)

