"""HNSWIndex: approximate dense top-k over a hierarchical navigable small-world graph."""

from __future__ import annotations

import threading

import numpy as np

from .. import _core
from .._util.allow import allow_mask
from .._util.arrays import (MAX_DIM, as_float_matrix, as_query_rows, check_choice,
                            check_positive_int, check_threads, raw_ids)
from .._util.file_checks import FileFields
from .._util.fileformat import read_index, write_index
from .._util.ids import check_known_ids, check_new_ids
from ..hits import Hits
from ._metric import METRICS, NATIVE_METRIC, normalized
from ._storage import NATIVE_STORAGE, NUMPY_DTYPE, STORAGE_DTYPES, to_float32, to_storage

_FILE_KIND = "HNSWIndex"
_MAX_M = 512
# ef and ef_construction cross to the graph as native sizes; far above any useful breadth
# (a walk keeps at most every node), low enough for every platform's size_t.
MAX_EF = (1 << 31) - 1
_MAX_SEED = (1 << 64) - 1  # seed and rng_state are uint64
_MAX_LEVEL = 48  # the graph's highest level (kMaxLevel in cpp/src/dense/hnsw.cpp)
# ef of search() when none is given: one step of the benchmark's sweep above 48, the smallest
# that reaches recall@10 >= 0.95 on both of its data sets (clustered and stdlib embeddings), as
# recall at a given ef falls slowly with N (`ragcore bench ann`; recall by ef against the peers:
# BENCHMARKS.md, "Approximate search (ANN): recall against QPS").
DEFAULT_EF = 64
# A filtered search scores the allowed vectors exactly when they number at most
# EXACT_FILTER_FACTOR * sqrt(ef * M * n): a walk that keeps ef allowed results out of a
# fraction s = allowed / n expands about ef / s nodes of about 2M neighbours each, which
# costs more than scoring the allowed set once allowed**2 < c * ef * M * n
# (bench/calibrate/hnsw_filter.py measures the crossover).
EXACT_FILTER_FACTOR = 1.0
_NO_ROWS = np.empty(0, dtype=np.int64)


class HNSWIndex:
    """Approximate top-k search over an HNSW graph (Malkov and Yashunin, 2018).

    Args:
        dim: dimensions per vector.
        metric: "ip", "cosine" or "l2", as for FlatIndex (higher score is better;
            for "l2" the score is minus the squared distance).
        M: neighbours per node on the upper levels (2M on the bottom level), 2..512.
            More: higher recall at a given ef, more memory, slower build.
        ef_construction: candidates kept while linking a new node (>= 1).
        dtype: storage of the vectors: "float32", "float16", "bfloat16" or "int8".
            "int8" keeps the float32 vectors and, beside them, int8 codes (per vector:
            x ~ codes * max|x| / 127, d + 4 bytes); a search walks the graph scoring
            codes against the int8-quantised query (AVX-512 VNNI, BW or AVX2), then
            re-scores the walk's max(ef, k) candidates with the float32 vectors, so the
            returned scores are exact. The graph is built on the float32 vectors (the
            same graph as "float32"). Memory: 1.25x float32's for the vectors; with
            load(mmap=True) the float32 vectors are mapped from the file (read once to
            derive the codes, then only the candidates' rows), the codes held in memory.
        seed: draws the node levels; with n_threads=1 in add() the graph depends
            only on the seed and the vectors added, in order.
        ef: the default search breadth (see search).

    Scores are computed as FlatIndex computes them (same kernels), so the score
    of a returned vector is exact. ``remove`` re-links the removed nodes'
    neighbours and frees their slots for later adds. ``search`` may run from
    several threads and while another thread adds or removes: an add takes the
    graph in chunks of 4096 vectors, and a search sees the graph between two chunks.

    Memory: the vectors, links and codes are held in 64-byte aligned arrays, from
    2 MiB up advised for transparent huge pages (Linux), on which a walk's random
    reads miss the TLB far less; the environment variable
    RAGCORE_NO_HUGE_PAGES (read at each add, remove and load) turns the advice off.
    Vectors mapped by load(mmap=True) stay on the file's pages.
    """

    def __init__(self, dim: int, metric: str = "ip", M: int = 16, ef_construction: int = 200,
                 dtype: str = "float32", seed: int = 0, *, ef: int = DEFAULT_EF):
        self._dim = check_positive_int(dim, "dim")
        self._metric = check_choice(metric, "metric", METRICS)
        M = check_positive_int(M, "M")
        if not 2 <= M <= _MAX_M:
            raise ValueError(f"M must be between 2 and {_MAX_M}, got {M}")
        self._M = M
        self._ef_construction = check_ef(ef_construction, "ef_construction")
        self._dtype = check_choice(dtype, "dtype", STORAGE_DTYPES + ("int8",))
        # int8: the float32 vectors are stored (and saved) as for "float32"; the walk
        # scores int8 codes derived from them and re-scores its candidates exactly.
        self._stored = "float32" if self._dtype == "int8" else self._dtype
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**64:
            raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
        self._seed = int(seed)
        self._ef = check_ef(ef, "ef")
        self._graph = self._new_graph()
        self._lock = threading.Lock()
        self._local = threading.local()
        self._sorted_ids = np.empty(0, dtype=np.int64)
        self._next_id = 0

    def _new_graph(self):
        return _core.HnswIndex(self._dim, metric=NATIVE_METRIC[self._metric],
                               storage=NATIVE_STORAGE[self._stored], M=self._M,
                               ef_construction=self._ef_construction, seed=self._seed,
                               int8_walk=self._dtype == "int8")

    # ---- properties -----------------------------------------------------

    dim = property(lambda self: self._dim)
    metric = property(lambda self: self._metric)
    dtype = property(lambda self: self._dtype)
    M = property(lambda self: self._M)
    ef_construction = property(lambda self: self._ef_construction)
    ef = property(lambda self: self._ef)

    def __len__(self) -> int:
        return self._graph.size()

    def __repr__(self) -> str:
        return (f"HNSWIndex(dim={self._dim}, metric={self._metric!r}, M={self._M}, "
                f"ef_construction={self._ef_construction}, dtype={self._dtype!r}, n={len(self)})")

    @property
    def ids(self) -> np.ndarray:
        """The ids of the stored vectors, in slot order (a copy)."""
        slot_ids = self._graph.slot_ids()
        return slot_ids[slot_ids >= 0]

    def memory_bytes(self) -> int:
        """Bytes held by the graph: vectors, links, ids and the id map."""
        return int(self._graph.memory_bytes())

    @property
    def last_search(self) -> dict:
        """This thread's last filtered search: whether the allowed set was scored
        exactly ("exact") and how many stored vectors the filter allowed ("allowed")."""
        return dict(getattr(self._local, "last", {}))

    # ---- mutation -------------------------------------------------------

    def add(self, vectors, ids=None, n_threads: int = 0) -> np.ndarray:
        """Inserts vectors into the graph; returns their ids.

        ids: unique non-negative int64 ids not in the index; default:
        consecutive ids after the largest so far. n_threads=0 uses all cores;
        n_threads=1 builds the same graph on every run.
        """
        n_threads = check_threads(n_threads)
        x = as_float_matrix(vectors, "vectors", self._dim)
        if self._metric == "cosine":
            x = normalized(x, "vectors")
        stored = np.ascontiguousarray(to_storage(x, self._stored, "vectors"))
        sq_norms = None
        if self._metric == "l2":  # of the stored values, as FlatIndex computes them
            values = to_float32(stored, self._stored)
            sq_norms = np.einsum("ij,ij->i", values, values, dtype=np.float32)
        with self._lock:
            new_ids = check_new_ids(ids, len(x), self._sorted_ids, self._next_id)
            new_ids = np.ascontiguousarray(new_ids, dtype=np.int64)
            self._graph.add(stored, new_ids, sq_norms=sq_norms, n_threads=n_threads)
            self._sorted_ids = np.union1d(self._sorted_ids, new_ids)
            if len(new_ids):
                self._next_id = max(self._next_id, int(new_ids.max()) + 1)
        return new_ids.copy()

    def remove(self, ids, n_threads: int = 0) -> None:
        """Removes the vectors with these ids (unknown ids are an error; nothing is
        removed). Their neighbours are re-linked and their slots reused by later adds."""
        n_threads = check_threads(n_threads)
        with self._lock:
            arr = np.ascontiguousarray(np.unique(check_known_ids(ids, self._sorted_ids)))
            self._graph.remove(arr, n_threads=n_threads)
            self._sorted_ids = np.setdiff1d(self._sorted_ids, arr, assume_unique=True)

    # ---- search ---------------------------------------------------------

    def search(self, queries, k: int, ef: int | None = None, n_threads: int = 0,
               allow=None) -> Hits:
        """Approximate top-k of each query: ``Hits`` [nq, k], best first, padded (-1, -inf).

        ef: candidates kept by the walk (max(ef, k) are kept); more gives higher
            recall and slower search. Default: the index's ``ef``.
        allow: only these ids may be returned (an id list or array, or a boolean
            mask indexed by id). Applied inside the walk; when the allowed set is
            small (see EXACT_FILTER_FACTOR) its vectors are scored exactly instead,
            so a restrictive filter returns the exact filtered top-k.
        n_threads: 0 uses all cores (queries are spread over them).
        """
        if ef is None:
            ef = self._ef
        if type(k) is not int or k < 1:  # the plain case costs one test
            k = check_positive_int(k, "k")
        ef = check_ef(ef, "ef")
        if type(n_threads) is not int or not 0 <= n_threads <= 1 << 16:
            n_threads = check_threads(n_threads)
        if self._metric == "cosine":
            q = normalized(as_float_matrix(queries, "queries", self._dim), "queries")
        else:
            q = as_query_rows(queries, self._dim)  # values checked natively, once
        mask = allow_ids = None
        exact_below = 0
        if allow is not None:
            mask, by_row = allow_mask(allow, _NO_ROWS)
            if by_row:  # ids too sparse for a mask by id: the graph maps them to slots itself
                mask, allow_ids = None, np.ascontiguousarray(raw_ids(allow, "allow"), dtype=np.int64)
            exact_below = exact_filter_limit(len(self), ef, self._M)
        scores, ids, exact, allowed = self._graph.search(q, k, ef, mask, allow_ids, exact_below,
                                                         n_threads)
        if allow is not None:
            self._local.last = {"exact": bool(exact), "allowed": int(allowed)}
        return Hits.of_native(scores, ids)

    # ---- persistence ----------------------------------------------------

    def save(self, path) -> None:
        """Writes the index to path (atomically: temporary file, then rename)."""
        with self._lock:
            snap = self._graph.snapshot()
            params = {"dim": self._dim, "metric": self._metric, "M": self._M,
                      "ef_construction": self._ef_construction, "dtype": self._dtype,
                      "seed": self._seed, "ef": self._ef, "next_id": self._next_id,
                      "entry": int(snap["entry"]), "rng_state": int(snap["rng_state"])}
        arrays = {"vectors": snap["vectors"].view(NUMPY_DTYPE[self._stored]), "ids": snap["ids"],
                  "levels": snap["levels"], "links0": snap["links0"], "upper": snap["upper"],
                  "upper_offsets": snap["upper_offsets"]}
        if self._metric == "l2":
            arrays["sq_norms"] = snap["sq_norms"]
        write_index(path, _FILE_KIND, params, arrays)

    @classmethod
    def load(cls, path, mmap: bool = False) -> HNSWIndex:
        """Reads an index written by save(); damaged, foreign or crafted files raise
        IndexFileError naming the field that is wrong (a neighbour outside the index, ...).

        mmap=True maps the vectors read-only (the graph links are read into
        memory); a later add() copies the vectors into memory first.
        """
        params, arrays = read_index(path, _FILE_KIND, mmap=mmap)
        f = FileFields(path, params, arrays)
        index = cls(f.int_param("dim", 1, MAX_DIM), f.choice_param("metric", METRICS),
                    f.int_param("M", 2, _MAX_M), f.int_param("ef_construction", 1, MAX_EF),
                    f.choice_param("dtype", STORAGE_DTYPES + ("int8",)),
                    f.int_param("seed", 0, _MAX_SEED), ef=f.int_param("ef", 1, MAX_EF))
        ids = f.array("ids", np.int64, (None,))
        levels = f.array("levels", np.int32, (len(ids),))
        sorted_ids = _checked_slots(f, ids, levels)
        vectors, sq_norms = index._checked_vectors(f, levels >= 0)
        links0 = f.array("links0", np.uint32, (len(ids), 1 + 2 * index._M))
        upper = f.array("upper", np.uint32, (None,))
        upper_offsets = f.array("upper_offsets", np.int64, (len(ids) + 1,))
        entry = f.int_param("entry", -1, len(ids) - 1)
        rng_state = f.int_param("rng_state", 0, _MAX_SEED)
        try:  # the graph's links, checked natively (every list within the degree and the index)
            index._graph.restore(vectors, sq_norms, ids, levels, links0, upper, upper_offsets,
                                 entry=entry, rng_state=rng_state, borrow_vectors=bool(mmap))
        except ValueError as err:
            f.fail("links0, upper, upper_offsets, entry", str(err))
        _check_reachable(f, links0, levels, entry)
        index._sorted_ids = sorted_ids
        index._next_id = f.next_id(sorted_ids)
        return index

    def _checked_vectors(self, f: FileFields, live: np.ndarray) -> tuple:
        """The file's vectors, finite and of norm <= MAX_NORM, unit rows for cosine, and
        (for l2) its sq_norms, which must be the live rows' squared norms."""
        vectors = f.array("vectors", NUMPY_DTYPE[self._stored], (len(live), self._dim))
        values_sq = f.bounded_rows("vectors", vectors, lambda rows: to_float32(rows, self._stored))
        if self._metric == "cosine":  # a free slot's row is never scored
            f.unit_rows("vectors", np.where(live, values_sq, np.float32(1)))
        if self._metric != "l2":
            return vectors, None
        sq_norms = f.array("sq_norms", np.float32, (len(live),))
        f.matching_norms("sq_norms", np.where(live, sq_norms, values_sq), values_sq)
        return vectors, sq_norms


def _checked_slots(f: FileFields, ids: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """The sorted ids of the live slots: a free slot has id -1 and level -1, a live one
    a unique id in [0, 2**63 - 2] and a level in [0, _MAX_LEVEL]."""
    if len(levels) and (levels.min() < -1 or levels.max() > _MAX_LEVEL):
        slot = int(np.argmax((levels < -1) | (levels > _MAX_LEVEL)))
        f.fail("levels", f"slot {slot} has level {int(levels[slot])}, outside [-1, {_MAX_LEVEL}]")
    disagree = (levels < 0) != (ids == -1)
    if disagree.any():
        slot = int(np.argmax(disagree))
        f.fail("ids, levels", f"slot {slot}: id {int(ids[slot])} and level {int(levels[slot])} "
                              "disagree (a free slot has both -1, a live one neither)")
    return f.sorted_ids("ids", ids, allow_removed=True)


def _check_reachable(f: FileFields, links0: np.ndarray, levels: np.ndarray, entry: int) -> None:
    """Every live slot is reachable from the entry point on level 0, as add and remove
    leave the graph: a search with ef >= n then finds every vector (links0 is known to
    hold in-range lists here)."""
    if entry < 0:
        return
    reached = np.zeros(len(levels), dtype=bool)
    reached[entry] = True
    frontier = np.array([entry])
    place = np.arange(links0.shape[1] - 1)
    while len(frontier):
        rows = links0[frontier]
        neighbours = rows[:, 1:][place[None, :] < rows[:, :1]]
        frontier = np.unique(neighbours[~reached[neighbours]])
        reached[frontier] = True
    cut_off = (levels >= 0) & ~reached
    if cut_off.any():
        f.fail("links0", f"slot {int(np.argmax(cut_off))} is not reachable from the entry point "
                         "on level 0 (in a saved graph every live slot is)")


def check_ef(value, name: str) -> int:
    value = check_positive_int(value, name)
    if value > MAX_EF:
        raise ValueError(f"{name} must be at most {MAX_EF}, got {value}")
    return value


def exact_filter_limit(n: int, ef: int, M: int) -> int:
    """Largest allowed set that a filtered search scores exactly instead of walking."""
    return int(EXACT_FILTER_FACTOR * np.sqrt(float(ef) * M * max(n, 1)))
