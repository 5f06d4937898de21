"""IVFIndex: approximate dense top-k over inverted lists (a k-means coarse quantizer)."""

from __future__ import annotations

import threading

import numpy as np

from .. import _core
from .._util.allow import allow_mask
from .._util.arrays import (
    MAX_DIM, MAX_NLIST, MAX_NORM, as_float_matrix, check_choice, check_limit,
    ONE_ROW_SQ_NORM_LIMIT, check_positive_int, check_threads, one_float32_row, plain_row_args,
)
from .._util.file_checks import FileFields
from .._util.fileformat import read_index, write_index
from .._util.ids import check_known_ids, check_new_ids
from . import _ivf_pq4, _pq4_codes
from ._kmeans_sample import kmeans_sample
from ._lists import Lists
from ._sq8 import LEVELS, encode_sq8, train_sq8
from ._storage import NATIVE_STORAGE, NUMPY_DTYPE, STORAGE_DTYPES, to_float32, to_storage
from ._metric import METRICS, NATIVE_METRIC, normalized
from ..hits import Hits

DTYPES = STORAGE_DTYPES + ("sq8", "pq4")
# Files written before the 8-bit code took the name "sq8" call it "int8" (same code and layout).
_FILE_DTYPE_RENAMES = {"int8": "sq8"}
_NATIVE_INIT = {"kmeans++": _core.KMeansInit.KMeansPlusPlus, "random": _core.KMeansInit.Random}
INITS = tuple(_NATIVE_INIT)
_FILE_KIND = "IVFIndex"
_NO_STAGES: dict = {}  # the stages of a one-query search (read only through a copy)
MAX_ITER = 1 << 20  # k-means iterations at most
MAX_SEED = (1 << 64) - 1
_UNIT_TOLERANCE = 0.05  # squared norm of a stored unit vector: 1 within storage rounding


_TRAINING_FIELDS = {"objective": list, "iterations": int, "reseeded": int, "sample_size": int}


class IVFIndex:
    """Approximate top-k search: k-means lists, of which each query scans ``nprobe``.

    Args:
        dim: dimensions per vector, 1 to 65,536 (``MAX_DIM``).
        nlist: number of lists (k-means clusters), 1 to 4,194,304 (``MAX_NLIST``); train
            needs >= nlist vectors.
        metric: "ip", "cosine" or "l2", as for FlatIndex (higher score is better).
        dtype: storage of the vectors: "float32", "float16", "bfloat16" (scored
            as FlatIndex scores them), or "sq8": per-dimension 8-bit codes
            scanned first, then the best ``rescore * k`` candidates re-scored
            with the exact float32 vectors (which the index also keeps), so the
            returned scores and ids come from exact scores. "pq4": 4-bit product
            quantisation (m sub-quantisers, m / 2 bytes scanned per vector) in
            fast-scan blocks, re-scored the same way.
        m: dtype="pq4" only (and required there): sub-quantisers, 1..256, dividing dim.
        init: k-means initialisation, "kmeans++" or "random".
        max_iter: k-means iterations at most, up to 2**20 (it stops earlier on convergence).
        seed: k-means seed; the same seed and sample give the same index.

    For "ip" and "cosine" the k-means is spherical (unit-norm centroids, as faiss's
    IVF does for inner product), which keeps the lists balanced on
    high-dimensional data. Vectors go to the list of their nearest centroid
    (squared L2, after normalisation for "cosine"); a query scans the lists of its nprobe nearest
    centroids. With nprobe = nlist the answer is FlatIndex's (float storage).
    ``search`` may run concurrently with ``add`` / ``remove``.

    dtype="rabitq" (keywords bits=1..8, rescore=, epsilon=) builds a
    ``RabitqIVFIndex`` (dense/ivf_rabitq.py): RaBitQ codes re-scored exactly.
    """

    # Storages with their own subclass register here (class X(IVFIndex, dtype="...")), so
    # IVFIndex(..., dtype=...) and IVFIndex.load build them without importing them.
    _subclass_of_dtype: dict = {}

    def __init_subclass__(cls, dtype: str = "", **kwargs):
        super().__init_subclass__(**kwargs)
        if dtype:
            IVFIndex._subclass_of_dtype[dtype] = cls

    def __new__(cls, *args, **kwargs):
        dtype = args[3] if len(args) > 3 else kwargs.get("dtype")
        if cls is IVFIndex and isinstance(dtype, str):
            cls = IVFIndex._subclass_of_dtype.get(dtype, cls)
        return super().__new__(cls)

    def __init__(self, dim: int, nlist: int, metric: str = "ip", dtype: str = "float32", *,
                 m: int | None = None, init: str = "kmeans++", max_iter: int = 25, seed: int = 0):
        self._dim = check_limit(dim, "dim", MAX_DIM)
        self._nlist = check_limit(nlist, "nlist", MAX_NLIST)
        self._metric = check_choice(metric, "metric", METRICS)
        self._dtype = check_choice(dtype, "dtype", DTYPES + tuple(self._subclass_of_dtype))
        self._init = check_choice(init, "init", INITS)
        self._max_iter = check_limit(max_iter, "max_iter", MAX_ITER)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed <= MAX_SEED:
            raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
        self._seed = int(seed)
        self._lock = threading.Lock()
        self._local = threading.local()
        self._centroids: np.ndarray | None = None
        self._centroid_sq_norms: np.ndarray | None = None
        self._code_min = self._code_scale = None  # sq8 only
        self._training: dict = {}
        self._m = self._pq4_books = self._pq4_by_dim = self._pq4 = None  # pq4 only
        if dtype == "pq4":
            if m is None:
                raise ValueError("dtype='pq4' needs m= (sub-quantisers, a divisor of dim)")
            self._m = _pq4_codes.check_m(self._dim, m)
            self._set_lists(_ivf_pq4.empty_lists(self._nlist, self._dim, self._m, metric == "l2"))
        elif m is not None:
            raise ValueError(f"m applies to dtype='pq4' only, not dtype={dtype!r}")
        else:
            self._lists = Lists.empty(self._nlist, self._dim, NUMPY_DTYPE[dtype], metric == "l2",
                                      dtype == "sq8")
        self._next_id = 0

    # ---- properties -----------------------------------------------------

    dim = property(lambda self: self._dim)
    nlist = property(lambda self: self._nlist)
    metric = property(lambda self: self._metric)
    dtype = property(lambda self: self._dtype)
    m = property(lambda self: self._m)

    @property
    def is_trained(self) -> bool:
        return self._centroids is not None

    @property
    def centroids(self) -> np.ndarray:
        """float32 [nlist, dim] copy of the list centroids."""
        self._require_trained("centroids")
        return self._centroids.copy()

    @property
    def training(self) -> dict:
        """k-means record: objective after each assignment, iterations, clusters re-seeded."""
        return dict(self._training)

    @property
    def ids(self) -> np.ndarray:
        """The ids of the stored vectors, in list order (a copy)."""
        return self._lists.ids.copy()

    def list_sizes(self) -> np.ndarray:
        """Vectors per list, int64 [nlist]."""
        return np.diff(self._lists.offsets)

    @property
    def last_stage_seconds(self) -> dict:
        """Seconds per stage (coarse, scan, rescore) of this thread's last search; empty
        after a search of one clean row, whose native path takes no stage times."""
        return dict(getattr(self._local, "stages", {}))

    def memory_bytes(self) -> int:
        """Bytes held by the index arrays (centroids, rows, ids, norms, exact rows)."""
        parts = [self._centroids, self._lists.rows, self._lists.ids, self._lists.sq_norms,
                 self._lists.exact, self._lists.offsets, self._lists.sorted_ids, self._pq4_books,
                 None if self._pq4 is None else self._pq4.packed]
        return int(sum(p.nbytes for p in parts if p is not None))

    def bytes_per_vector(self) -> dict:
        """Bytes scanned per vector (its stored row, or its packed 4-bit codes) and kept
        (that, the exact float32 row for sq8 and pq4, pq4's codes one per byte, which add
        and remove re-pack, the id, and the squared norm for "l2")."""
        row = self._lists.rows.shape[1] * self._lists.rows.itemsize
        scanned = (self._m + 1) // 2 if self._dtype == "pq4" else row
        extra = (4 * self._dim if self._lists.exact is not None else 0) + \
            (row if self._dtype == "pq4" else 0)
        return {"scanned": scanned, "kept": scanned + extra + 8 + (4 if self._metric == "l2" else 0),
                "float32": 4 * self._dim}

    def __len__(self) -> int:
        return len(self._lists)

    def __repr__(self) -> str:
        return (f"IVFIndex(dim={self._dim}, nlist={self._nlist}, metric={self._metric!r}, "
                f"dtype={self._dtype!r}, n={len(self)}, trained={self.is_trained})")

    # ---- training and mutation -------------------------------------------

    def train(self, sample, n_threads: int = 0) -> None:
        """Learns the nlist centroids (and, for sq8, the code ranges) from sample.

        sample: at least nlist vectors; typically 30 to 256 per list. As faiss does, the
        centroids learn from at most 256 * nlist of them (MAX_POINTS_PER_CLUSTER), drawn by the
        seed (training["sample_size"] says how many), and each pq4 codebook from at most
        256 * 16 = 4,096 (the same rows for every sub-quantiser); sq8 ranges from all.
        """
        n_threads = check_threads(n_threads)
        x = self._prepared(sample, "sample")
        if len(x) < self._nlist:
            raise ValueError(f"sample has {len(x)} vectors; training nlist={self._nlist} lists "
                             f"needs at least {self._nlist}")
        books = None  # pq4: codebooks first, so that a too small sample changes nothing
        if self._dtype == "pq4":
            books = _pq4_codes.train_codebooks(x, self._m, self._seed, n_threads)
        points = kmeans_sample(x, self._nlist, self._seed)
        centroids, objective, iterations, reseeded = _core.kmeans(
            points, self._nlist, max_iter=self._max_iter, seed=self._seed,
            init=_NATIVE_INIT[self._init], n_threads=n_threads,
            spherical=self._metric != "l2")  # unit centroids rank lists as inner product does
        with self._lock:
            if len(self._lists):
                raise RuntimeError(f"train: the index already holds {len(self._lists)} vectors; "
                                   "train a new IVFIndex instead")
            self._set_centroids(centroids)
            if self._dtype == "sq8":
                self._code_min, self._code_scale = train_sq8(x)
            if books is not None:
                self._pq4_books, self._pq4_by_dim = books, _pq4_codes.by_dimension(books)
            self._training = {"objective": list(objective), "iterations": iterations,
                              "reseeded": reseeded, "sample_size": len(points)}

    def add(self, vectors, ids=None, n_threads: int = 0) -> np.ndarray:
        """Adds vectors to the lists of their nearest centroids; returns their ids.

        ids: unique non-negative int64 ids not in the index; default:
        consecutive ids after the largest so far.
        """
        self._require_trained("add")
        n_threads = check_threads(n_threads)
        x = np.ascontiguousarray(self._prepared(vectors, "vectors"))
        labels, _ = _core.assign_nearest(x, self._centroids, n_threads=n_threads)
        rows, exact, sq_norms = self._stored_rows(x, n_threads)
        with self._lock:
            new_ids = check_new_ids(ids, len(x), self._lists.sorted_ids, self._next_id)
            self._set_lists(self._lists.with_added(labels, rows, new_ids, sq_norms, exact))
            if len(new_ids):
                self._next_id = max(self._next_id, int(new_ids.max()) + 1)
        return new_ids.copy()

    def remove(self, ids) -> None:
        """Removes the vectors with these ids; unknown ids are an error (nothing is removed)."""
        with self._lock:
            arr = check_known_ids(ids, self._lists.sorted_ids)
            self._set_lists(self._lists.without(arr))

    def _set_lists(self, lists: Lists) -> None:
        self._lists = lists
        if self._dtype == "pq4":
            self._pq4 = _ivf_pq4.Pq4Layout.of(lists)

    def _prepared(self, vectors, name: str) -> np.ndarray:
        x = one_float32_row(vectors, self._dim)  # the single-query path: no copy, few checks
        if x is None:
            x = as_float_matrix(vectors, name, self._dim)
        return normalized(x, name) if self._metric == "cosine" else x

    def _stored_rows(self, x: np.ndarray, n_threads: int):
        """(rows as stored, exact float32 rows or None, squared norms or None)."""
        if self._dtype == "sq8":
            rows, exact, values = encode_sq8(x, self._code_min, self._code_scale), x, x
        elif self._dtype == "pq4":
            rows, exact, values = _pq4_codes.encode(x, self._pq4_books, n_threads), x, x
        else:
            rows = to_storage(x, self._dtype, "vectors")
            exact, values = None, to_float32(rows, self._dtype)
        sq_norms = None
        if self._metric == "l2":  # of the values scored, computed as FlatIndex computes them
            sq_norms = np.einsum("ij,ij->i", values, values, dtype=np.float32)
        return rows, exact, sq_norms

    def _set_centroids(self, centroids: np.ndarray) -> None:
        self._centroids = np.ascontiguousarray(centroids, dtype=np.float32)
        self._centroid_sq_norms = np.einsum("ij,ij->i", self._centroids, self._centroids,
                                            dtype=np.float32)

    def _require_trained(self, what: str) -> None:
        if self._centroids is None:
            raise RuntimeError(f"IVFIndex.{what}: the index is not trained; call train(sample) first")

    # ---- search ---------------------------------------------------------

    def search(self, queries, k: int, nprobe: int | None = None, n_threads: int = 0, allow=None,
               rescore: int = 4) -> Hits:
        """Approximate top-k of each query: ``Hits`` [nq, k], best first, padded (-1, -inf).

        nprobe: lists scanned per query, 1..nlist (more: higher recall, slower);
            default min(8, nlist).
        allow: only these ids may be returned (an id list or array, or a
            boolean mask indexed by id). Applied inside the scan; a query whose
            nprobe lists hold fewer than k allowed vectors scans further lists,
            nearest first, until it has k (or has scanned all).
        rescore: sq8 and pq4: candidates re-scored exactly per result (rescore * k).
        n_threads: 0 uses all cores.
        """
        if allow is None and self._metric != "cosine":
            found = self._search_row(queries, k, nprobe, rescore, n_threads)
            if found is not None:  # one clean row with plain arguments, checked natively
                self._local.stages = _NO_STAGES
                return Hits.of_native(*found)
        self._require_trained("search")
        k = check_positive_int(k, "k")
        nprobe = min(8, self._nlist) if nprobe is None else check_positive_int(nprobe, "nprobe")
        if nprobe > self._nlist:
            raise ValueError(f"nprobe must be between 1 and nlist={self._nlist}, got {nprobe}")
        rescore = check_positive_int(rescore, "rescore")
        n_threads = check_threads(n_threads)
        q = self._prepared(queries, "queries")
        layout = self._pq4
        lists = self._lists if layout is None else layout.lists  # one snapshot for the whole search
        mask, by_row = (None, False) if allow is None else allow_mask(allow, lists.ids)
        if layout is not None:
            scores, ids = _ivf_pq4.search(
                layout, self._centroids, self._centroid_sq_norms, self._m, self._pq4_by_dim,
                NATIVE_METRIC[self._metric], q, k, nprobe, rescore, mask, by_row, n_threads)
            self._local.stages = {}
            return Hits(scores, ids)
        scores, ids, stages = _core.ivf_search(
            lists.rows, q, k, centroids=self._centroids,
            centroid_sq_norms=self._centroid_sq_norms, list_offsets=lists.offsets,
            storage=NATIVE_STORAGE[self._dtype], ids=lists.ids, sq_norms=lists.sq_norms,
            metric=NATIVE_METRIC[self._metric], nprobe=nprobe, code_min=self._code_min,
            code_scale=self._code_scale, exact_rows=lists.exact, rescore=rescore, allow=mask,
            allow_by_row=by_row, n_threads=n_threads)
        self._local.stages = stages
        return Hits(scores, ids)

    def _search_row(self, query, k, nprobe, rescore, n_threads):
        """(scores, ids) of one contiguous, finite float32 row with plain int arguments in
        range; None for anything else."""
        if nprobe is None:
            nprobe = min(8, self._nlist)
        if (self._centroids is None or not plain_row_args(n_threads, k, nprobe, rescore)
                or nprobe > self._nlist):
            return None
        if self._pq4 is not None:
            return _ivf_pq4.search_row(
                self._pq4, self._centroids, self._centroid_sq_norms, self._m, self._pq4_by_dim,
                NATIVE_METRIC[self._metric], query, k, nprobe, rescore, n_threads)
        lists = self._lists
        return _core.ivf_search_row(
            lists.rows, query, k, self._centroids, self._centroid_sq_norms, lists.offsets,
            NATIVE_STORAGE[self._dtype], lists.ids, lists.sq_norms, NATIVE_METRIC[self._metric],
            nprobe, self._code_min, self._code_scale, lists.exact, rescore,
            ONE_ROW_SQ_NORM_LIMIT, n_threads)

    # ---- persistence ----------------------------------------------------

    def save(self, path) -> None:
        """Writes the index to path (atomically: temporary file, then rename)."""
        with self._lock:
            lists = self._lists
            arrays = {"offsets": lists.offsets, "rows": lists.rows, "ids": lists.ids}
            if self._centroids is not None:
                arrays["centroids"] = self._centroids
            optional = {"sq_norms": lists.sq_norms, "exact": lists.exact,
                        "code_min": self._code_min, "code_scale": self._code_scale,
                        "codebooks": None if self._pq4_books is None else
                        self._pq4_books.reshape(-1, self._pq4_books.shape[2])}
            arrays.update({name: a for name, a in optional.items() if a is not None})
            params = {"dim": self._dim, "nlist": self._nlist, "metric": self._metric,
                      "dtype": self._dtype, "init": self._init, "max_iter": self._max_iter,
                      "seed": self._seed, "next_id": self._next_id, "training": self._training}
            if self._m is not None:
                params["m"] = self._m
            write_index(path, _FILE_KIND, params, arrays)

    @classmethod
    def load(cls, path, mmap: bool = False) -> IVFIndex:
        """Reads an index written by save(); damaged, foreign or crafted files raise
        IndexFileError naming the field that is wrong. mmap=True maps the arrays
        read-only from the file (for sq8 and pq4, the exact rows used by the
        re-scoring stay on disk until read); a later add or remove copies them."""
        params, arrays = read_index(path, _FILE_KIND, mmap=mmap)
        f = FileFields(path, params, arrays)
        stored = params.get("dtype")
        subclass = cls._subclass_of_dtype.get(stored) if isinstance(stored, str) else None
        if subclass is not None:
            return subclass.from_file(f)
        dim = f.int_param("dim", 1, MAX_DIM)
        nlist = f.int_param("nlist", 1, MAX_NLIST)
        metric = f.choice_param("metric", METRICS)
        dtype = params.get("dtype")
        dtype = _FILE_DTYPE_RENAMES.get(dtype, dtype) if isinstance(dtype, str) else dtype
        if not isinstance(dtype, str) or dtype not in DTYPES:
            f.fail("params.dtype", f"{params.get('dtype')!r} is not one of {', '.join(map(repr, DTYPES))}")
        m = f.int_param("m", 1, _pq4_codes.MAX_M) if dtype == "pq4" else None
        if m is not None and dim % m:
            f.fail("params.m", f"{m} does not divide dim={dim}")
        index = cls(dim, nlist, metric, dtype, m=m, init=f.choice_param("init", INITS),
                    max_iter=f.int_param("max_iter", 1, MAX_ITER),
                    seed=f.int_param("seed", 0, MAX_SEED))
        index._restore(f)
        index._training = checked_training(f)
        return index

    def _restore(self, f: FileFields) -> None:
        """Checks the arrays of a file against the parameters and takes them."""
        dim, nlist = self._dim, self._nlist
        ids, offsets = self._checked_layout(f)
        n = len(ids)
        if self._dtype == "pq4":
            rows = _pq4_codes.checked_codes(f, n, self._m, "rows")
        else:
            rows = f.array("rows", self._lists.rows.dtype, (n, dim))
        sorted_ids = f.sorted_ids("ids", ids)
        self._next_id = f.next_id(ids)
        exact = f.array("exact", np.float32, (n, dim)) if self._dtype in ("sq8", "pq4") else None
        if "centroids" in f.arrays:
            centroids = f.array("centroids", np.float32, (nlist, dim))
            f.bounded_rows("centroids", centroids)
            self._set_centroids(centroids)
            if self._dtype == "sq8":
                self._code_min, self._code_scale = _checked_codes(f, dim)
            if self._dtype == "pq4":
                self._pq4_books = _pq4_codes.checked_codebooks(f, dim, self._m)
                self._pq4_by_dim = _pq4_codes.by_dimension(self._pq4_books)
        elif n:
            f.fail("centroids", "missing, but the index holds vectors")
        if exact is not None:
            values_sq = f.bounded_rows("exact", exact)
        else:
            values_sq = f.bounded_rows("rows", rows, lambda r: to_float32(r, self._dtype))
        sq_norms = self._checked_sq_norms(f, "exact" if exact is not None else "rows", values_sq)
        self._set_lists(Lists(offsets, rows, ids, sorted_ids, sq_norms, exact))

    def _checked_layout(self, f: FileFields) -> tuple:
        """A file's ids and list offsets, which rise from 0 to the number of rows."""
        ids = f.array("ids", np.int64, (None,))
        offsets = f.array("offsets", np.int64, (self._nlist + 1,))
        # Compared pairwise, not by np.diff: a difference of int64 values can wrap around.
        if offsets[0] != 0 or offsets[-1] != len(ids) or (offsets[1:] < offsets[:-1]).any():
            f.fail("offsets", f"list offsets must rise from 0 to the {len(ids)} rows")
        return ids, offsets

    def _checked_sq_norms(self, f: FileFields, rows_name: str, values_sq: np.ndarray):
        """Checks the rows' squared norms against the metric: unit rows for cosine, the
        stored sq_norms for l2 (returned; None for the other metrics)."""
        n = len(values_sq)
        if self._metric == "cosine" and n and (np.abs(values_sq - 1.0) > _UNIT_TOLERANCE).any():
            f.fail(rows_name, "a cosine index holds unit vectors; a row is not of norm 1")
        if self._metric != "l2":
            return None
        f.matching_norms("sq_norms", f.array("sq_norms", np.float32, (n,)), values_sq)
        return values_sq


def _checked_codes(f: FileFields, dim: int):
    """sq8 code_min and code_scale: finite, scale > 0, and every decodable row
    (min + scale * code, code <= 255) of norm <= MAX_NORM."""
    code_min = f.array("code_min", np.float32, (dim,))
    code_scale = f.array("code_scale", np.float32, (dim,))
    f.finite("code_min", code_min)
    f.finite("code_scale", code_scale)
    if (code_scale <= 0).any():
        f.fail("code_scale", "every scale must be > 0")
    top = code_min.astype(np.float64) + LEVELS * code_scale.astype(np.float64)
    widest = np.maximum(np.abs(code_min.astype(np.float64)), np.abs(top))
    if float(np.sqrt(np.sum(widest ** 2))) > MAX_NORM or not np.isfinite(top).all():
        f.fail("code_min, code_scale", f"decoded rows could exceed norm {MAX_NORM:g}")
    return code_min, code_scale


def checked_training(f: FileFields) -> dict:
    training = f.param("training")
    if not isinstance(training, dict):
        f.fail("params.training", f"expected an object, got {type(training).__name__}")
    for name, value in training.items():
        kind = _TRAINING_FIELDS.get(name)
        if kind is None or not isinstance(value, kind) or isinstance(value, bool):
            f.fail(f"params.training.{name}", f"unexpected {type(value).__name__}")
    objective = training.get("objective", [])
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in objective):
        f.fail("params.training.objective", "expected a list of numbers")
    return dict(training)
