"""IVFIndex: approximate dense top-k over inverted lists (a k-means coarse quantizer)."""

from __future__ import annotations

import threading

import numpy as np

from .. import _core
from .._util.allow import allow_mask
from .._util.arrays import (
    MAX_DIM, MAX_NLIST, as_float_matrix, check_choice, check_limit, check_positive_int,
    as_query_rows, check_threads,
)
from .._util.file_checks import FileFields
from .._util.fileformat import read_index, write_index
from .._util.ids import check_known_ids, check_new_ids
from ._ivf_storage_base import Coarse, IvfStorage, Snapshot
from ._kmeans_sample import kmeans_sample
from ._lists import Lists
from ._metric import METRICS, NATIVE_METRIC, normalized
from .ivf_storage import DTYPES, FILE_DTYPE_RENAMES, STORAGES, dtypes_with, make_storage
from ..hits import Hits

_NATIVE_INIT = {"kmeans++": _core.KMeansInit.KMeansPlusPlus, "random": _core.KMeansInit.Random}
INITS = tuple(_NATIVE_INIT)
_FILE_KIND = "IVFIndex"
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
        dtype: storage of the vectors (ivf_storage.STORAGES): "float32", "float16",
            "bfloat16" (scored as FlatIndex scores them), or "sq8": per-dimension 8-bit
            codes scanned first, then the best ``rescore * k`` candidates re-scored
            with the exact float32 vectors (which the index also keeps), so the
            returned scores and ids come from exact scores. "pq4": 4-bit product
            quantisation (m sub-quantisers, m / 2 bytes scanned per vector) in
            fast-scan blocks, re-scored the same way. "rabitq": RaBitQ codes of the
            rotated residuals, the candidates their error bound cannot rule out
            re-scored exactly (options bits, rescore, epsilon: see
            ivf_rabitq.RabitqStorage).
        compute: dtype="bfloat16" only: "float32" (default) or "bfloat16", as for FlatIndex:
            the queries rounded to bfloat16 and multiplied by the CPU's bfloat16 instructions,
            scores bit for bit FlatIndex(dtype="bfloat16", compute="bfloat16")'s; faster where
            many queries of a batch probe the same list (big batches), not for one query.
        m: dtype="pq4" only (and required there): sub-quantisers, 1..256, dividing dim.
        bits, rescore, epsilon: dtype="rabitq" only; bits per dimension 1..8 (default 3),
            the candidates re-scored ("bound", "all" or a count per result) and the error
            bound's width in standard deviations (1.9).
        init: k-means initialisation, "kmeans++" or "random".
        max_iter: k-means iterations at most, up to 2**20 (it stops earlier on convergence).
        seed: k-means seed (and rabitq's rotation); the same seed and sample give the
            same index.

    For "ip" and "cosine" the k-means is spherical (unit-norm centroids, as faiss's
    IVF does for inner product), which keeps the lists balanced on
    high-dimensional data. Vectors go to the list of their nearest centroid
    (squared L2, after normalisation for "cosine"); a query scans the lists of its nprobe nearest
    centroids. With nprobe = nlist the answer is FlatIndex's (float storage).
    ``search`` may run concurrently with ``add`` / ``remove``.
    """

    def __init__(self, dim: int, nlist: int, metric: str = "ip", dtype: str = "float32", *,
                 init: str = "kmeans++", max_iter: int = 25, seed: int = 0, **options):
        self._dim = check_limit(dim, "dim", MAX_DIM)
        self._nlist = check_limit(nlist, "nlist", MAX_NLIST)
        self._metric = check_choice(metric, "metric", METRICS)
        self._dtype = check_choice(dtype, "dtype", DTYPES)
        self._init = check_choice(init, "init", INITS)
        self._max_iter = check_limit(max_iter, "max_iter", MAX_ITER)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed <= MAX_SEED:
            raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
        self._seed = int(seed)
        self._storage: IvfStorage = make_storage(self._dtype, self._dim, self._metric,
                                                 self._seed, options)
        self._lock = threading.Lock()
        self._coarse: Coarse | None = None
        self._training: dict = {}
        self._set_lists(self._storage.empty_lists(self._nlist))
        self._next_id = 0

    # ---- properties -----------------------------------------------------

    dim = property(lambda self: self._dim)
    nlist = property(lambda self: self._nlist)
    metric = property(lambda self: self._metric)
    dtype = property(lambda self: self._dtype)
    m = property(lambda self: self._storage.options.get("m"), doc="pq4's sub-quantisers, else None")
    bits = property(lambda self: self._storage.options.get("bits"), doc="rabitq's bits, else None")
    epsilon = property(lambda self: self._storage.options.get("epsilon"),
                       doc="rabitq's error bound width, else None")
    compute = property(lambda self: self._storage.options.get("compute", "float32"),
                       doc='"bfloat16" for bfloat16 compute (dtype="bfloat16"), else "float32"')

    @property
    def is_trained(self) -> bool:
        return self._coarse is not None

    @property
    def centroids(self) -> np.ndarray:
        """float32 [nlist, dim] copy of the list centroids."""
        self._require_trained("centroids")
        return self._coarse.centroids.copy()

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
    def _lists(self) -> Lists:
        return self._snapshot.lists

    @property
    def last_stage_seconds(self) -> dict:
        """Seconds per stage (coarse, scan, rescore) of this thread's last IVF search, when
        it was on this index (empty otherwise); empty for the pq4 and rabitq scans, which
        take none. Kept natively per thread and read only here: a search builds no dict."""
        return _core.ivf_last_report(self._storage.owner)[0]

    @property
    def last_search_counts(self) -> dict:
        """Rows scanned and exactly re-scored (all queries) by this thread's last IVF search,
        when it was on this index (dtype="rabitq"; empty for the other storages and
        otherwise)."""
        return _core.ivf_last_report(self._storage.owner)[1]

    def memory_bytes(self) -> int:
        """Bytes held by the index arrays (centroids, rows, ids, norms, exact rows, and the
        storage's own: codebooks, rotation, fast-scan blocks)."""
        snapshot, lists = self._snapshot, self._snapshot.lists
        parts = [None if self._coarse is None else self._coarse.centroids, lists.rows,
                 lists.ids, lists.sq_norms, lists.exact, lists.offsets, lists.sorted_ids,
                 *self._storage.memory_arrays(snapshot)]
        return int(sum(p.nbytes for p in parts if p is not None))

    def bytes_per_vector(self) -> dict:
        """Bytes scanned per vector (its stored row or codes) and kept (that, what the
        storage keeps beside it: the exact float32 row for sq8, pq4 and rabitq, pq4's codes
        one per byte, which add and remove re-pack, rabitq's fast-scan copy; the id, and
        the squared norm for "l2"), next to float32's."""
        scanned = self._storage.scanned_bytes()
        kept = scanned + self._storage.kept_extra_bytes() + 8 + (4 if self._metric == "l2" else 0)
        return {"scanned": scanned, "kept": kept, "float32": 4 * self._dim}

    def __len__(self) -> int:
        return len(self._lists)

    def __repr__(self) -> str:
        return (f"IVFIndex(dim={self._dim}, nlist={self._nlist}, metric={self._metric!r}, "
                f"dtype={self._dtype!r}{self._storage.repr_options()}, n={len(self)}, "
                f"trained={self.is_trained})")

    # ---- the features of one storage (rabitq) ---------------------------

    def _feature(self, name: str, attribute: str | None = None):
        """The storage, if it has the attribute behind IVFIndex.<name> (by default the same
        name); else an AttributeError naming the dtypes whose storage has it."""
        attribute = attribute or name
        if not hasattr(self._storage, attribute):
            raise AttributeError(f"IVFIndex.{name} applies to dtype="
                                 f"{' or '.join(map(repr, dtypes_with(attribute)))} only, "
                                 f"not dtype={self._dtype!r}")
        return self._storage

    @property
    def fast_scan(self) -> bool:
        """dtype="rabitq": whether 1-bit codes are scanned by 4-bit table look-ups in SIMD
        registers (the fast scan: the codes and factors are re-packed in memory in blocks of
        32 on the first search after a change, as many bytes again as the codes). True by
        default; applies at bits=1 and dim <= 1024 only; False: the bit-plane kernel (what
        bits > 1 use)."""
        return self._feature("fast_scan").fast_scan

    @fast_scan.setter
    def fast_scan(self, on: bool) -> None:
        self._feature("fast_scan").fast_scan = on

    @property
    def rotation(self) -> np.ndarray:
        """dtype="rabitq": float32 [padded dim, dim], the matrix of the random orthogonal
        rotation (built on request: the index keeps only its sign bits)."""
        storage = self._feature("rotation", "rotation_matrix")
        self._require_trained("rotation")
        return storage.rotation_matrix()

    def estimates(self, query, list_number: int) -> tuple[np.ndarray, np.ndarray]:
        """dtype="rabitq": (estimated scores, one-standard-deviation error bounds) of the
        rows of one list for one query, in list order (what the scan ranks by; for
        inspection and tests). With the fast scan on, the bounds include its worst
        quantisation error."""
        storage = self._feature("estimates")
        self._require_trained("estimates")
        q = np.ascontiguousarray(self._prepared(query, "query")[:1])
        list_number = check_limit(list_number + 1, "list_number + 1", self._nlist) - 1
        return storage.estimates(self._snapshot, self._coarse, q, list_number)

    # ---- training and mutation -------------------------------------------

    def train(self, sample, n_threads: int = 0) -> None:
        """Learns the nlist centroids and what the storage learns (sq8's code ranges, pq4's
        codebooks) from sample.

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
        fitted = self._storage.fit(x, n_threads)
        points = kmeans_sample(x, self._nlist, self._seed)
        centroids, objective, iterations, reseeded = _core.kmeans(
            points, self._nlist, max_iter=self._max_iter, seed=self._seed,
            init=_NATIVE_INIT[self._init], n_threads=n_threads,
            spherical=self._metric != "l2")  # unit centroids rank lists as inner product does
        with self._lock:
            if len(self._lists):
                raise RuntimeError(f"train: the index already holds {len(self._lists)} vectors; "
                                   "train a new IVFIndex instead")
            self._set_trained(centroids, fitted)
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
        labels, _ = _core.assign_nearest(x, self._coarse.centroids, n_threads=n_threads)
        rows = self._storage.encode(x, labels, n_threads)
        exact = x if self._storage.KEEPS_EXACT else None
        sq_norms = None
        if self._metric == "l2":  # of the values scored, computed as FlatIndex computes them
            values = x if exact is not None else self._storage.decoded(rows)
            sq_norms = np.einsum("ij,ij->i", values, values, dtype=np.float32)
        with self._lock:
            new_ids = check_new_ids(ids, len(x), self._lists.sorted_ids, self._next_id)
            self._set_lists(self._lists.with_added(labels, rows, new_ids, sq_norms, exact))
            if len(new_ids):
                self._next_id = max(self._next_id, int(new_ids.max()) + 1)
        return new_ids.copy()

    def encode(self, vectors: np.ndarray, labels: np.ndarray, n_threads: int = 0) -> np.ndarray:
        """The rows the storage keeps for prepared float32 vectors (unit rows for "cosine")
        that go to lists ``labels`` (for inspection and tests; add encodes)."""
        self._require_trained("encode")
        return self._storage.encode(vectors, labels, n_threads)

    def remove(self, ids) -> None:
        """Removes the vectors with these ids; unknown ids are an error (nothing is removed)."""
        with self._lock:
            arr = check_known_ids(ids, self._lists.sorted_ids)
            self._set_lists(self._lists.without(arr))

    def _set_lists(self, lists: Lists) -> None:
        self._snapshot: Snapshot = self._storage.attach(lists)

    def _prepared(self, vectors, name: str) -> np.ndarray:
        x = as_float_matrix(vectors, name, self._dim)
        return normalized(x, name) if self._metric == "cosine" else x

    def _set_trained(self, centroids: np.ndarray, fitted) -> None:
        """The coarse quantizer of these centroids, and what the storage learned with it."""
        centroids = np.ascontiguousarray(centroids, dtype=np.float32)
        sq_norms = np.einsum("ij,ij->i", centroids, centroids, dtype=np.float32)
        self._storage.set_trained(fitted, centroids)
        self._coarse = Coarse(centroids, sq_norms, NATIVE_METRIC[self._metric])

    def _require_trained(self, what: str) -> None:
        if self._coarse is None:
            raise RuntimeError(f"IVFIndex.{what}: the index is not trained; call train(sample) first")

    # ---- search ---------------------------------------------------------

    def search(self, queries, k: int, nprobe: int | None = None, n_threads: int = 0, allow=None,
               rescore=None) -> Hits:
        """Approximate top-k of each query: ``Hits`` [nq, k], best first, padded (-1, -inf).

        nprobe: lists scanned per query, 1..nlist (more: higher recall, slower);
            default min(8, nlist).
        allow: only these ids may be returned (an id list or array, or a
            boolean mask indexed by id). Applied inside the scan; a query whose
            nprobe lists hold fewer than k allowed vectors scans further lists,
            nearest first, until it has k (or has scanned all).
        rescore: sq8 and pq4: candidates re-scored exactly per result (rescore * k;
            None: 4); rabitq: "bound", "all" or a count per result (None: the index's).
        n_threads: 0 uses all cores.
        """
        self._require_trained("search")
        if type(k) is not int or k < 1:  # the plain case costs one test
            k = check_positive_int(k, "k")
        nprobe = min(8, self._nlist) if nprobe is None else check_positive_int(nprobe, "nprobe")
        if nprobe > self._nlist:
            raise ValueError(f"nprobe must be between 1 and nlist={self._nlist}, got {nprobe}")
        rescore = self._storage.checked_rescore(rescore)
        if type(n_threads) is not int or not 0 <= n_threads <= 1 << 16:
            n_threads = check_threads(n_threads)
        if self._metric == "cosine":
            q = normalized(as_float_matrix(queries, "queries", self._dim), "queries")
        else:
            q = as_query_rows(queries, self._dim)  # values checked natively, once
        snapshot = self._snapshot  # one for the whole search
        lists = snapshot.lists
        mask, by_row = (None, False) if allow is None else allow_mask(allow, lists.ids)
        return self._storage.search(snapshot, self._coarse, q, k, nprobe, rescore, mask, by_row,
                                    n_threads)

    # ---- persistence ----------------------------------------------------

    def save(self, path) -> None:
        """Writes the index to path (atomically: temporary file, then rename)."""
        with self._lock:
            lists = self._lists
            arrays = {"offsets": lists.offsets, "rows": lists.rows, "ids": lists.ids}
            optional = {"centroids": None if self._coarse is None else self._coarse.centroids,
                        "sq_norms": lists.sq_norms, "exact": lists.exact}
            arrays.update({name: a for name, a in optional.items() if a is not None})
            arrays.update(self._storage.trained_arrays())
            params = {"dim": self._dim, "nlist": self._nlist, "metric": self._metric,
                      "dtype": self._dtype, **self._storage.file_params(), "init": self._init,
                      "max_iter": self._max_iter, "seed": self._seed, "next_id": self._next_id,
                      "training": self._training}
            write_index(path, _FILE_KIND, params, arrays)

    @classmethod
    def load(cls, path, mmap: bool = False) -> IVFIndex:
        """Reads an index written by save(); damaged, foreign or crafted files raise
        IndexFileError naming the field that is wrong. mmap=True maps the arrays
        read-only from the file (for sq8, pq4 and rabitq, the exact rows used by the
        re-scoring stay on disk until read); a later add or remove copies them."""
        params, arrays = read_index(path, _FILE_KIND, mmap=mmap)
        f = FileFields(path, params, arrays)
        dim = f.int_param("dim", 1, MAX_DIM)
        nlist = f.int_param("nlist", 1, MAX_NLIST)
        metric = f.choice_param("metric", METRICS)
        dtype = params.get("dtype")
        dtype = FILE_DTYPE_RENAMES.get(dtype, dtype) if isinstance(dtype, str) else dtype
        if not isinstance(dtype, str) or dtype not in STORAGES:
            f.fail("params.dtype", f"{params.get('dtype')!r} is not one of {', '.join(map(repr, DTYPES))}")
        options = STORAGES[dtype].options_from_file(f, dim)
        index = cls(dim, nlist, metric, dtype, init=f.choice_param("init", INITS),
                    max_iter=f.int_param("max_iter", 1, MAX_ITER),
                    seed=f.int_param("seed", 0, MAX_SEED), **options)
        index._restore(f)
        index._training = checked_training(f)
        return index

    def _restore(self, f: FileFields) -> None:
        """Checks the arrays of a file against the parameters and takes them."""
        storage = self._storage
        ids, offsets = self._checked_layout(f)
        n = len(ids)
        rows = storage.checked_rows(f, n)
        sorted_ids = f.sorted_ids("ids", ids)
        self._next_id = f.next_id(ids)
        exact = f.array("exact", np.float32, (n, self._dim)) if storage.KEEPS_EXACT else None
        if "centroids" in f.arrays:
            centroids = f.array("centroids", np.float32, (self._nlist, self._dim))
            f.bounded_rows("centroids", centroids)
            self._set_trained(centroids, storage.trained_from_file(f))
        elif n:
            f.fail("centroids", "missing, but the index holds vectors")
        if exact is not None:
            values_sq = f.bounded_rows("exact", exact)
        else:
            values_sq = f.bounded_rows("rows", rows, storage.decoded)
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
