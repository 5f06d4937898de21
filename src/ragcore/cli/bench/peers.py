"""The approximate-search adapters: ragcore's IVFIndex and HNSWIndex, and their peers.

The one copy of each: ``ragcore bench ann`` sweeps them, and the benchmark suite's ann task
(bench/peers/ lists them per library) runs them too. The interface:

    cls(threads, params)      params: nlist (IVF), M and ef_construction (graphs), seed
    cls.available()           whether the library it needs (``module``) is installed
    build(x, sample=None)     sample: the IVF training rows (default x)
    search(q, k, value)       ids[nq, k] with the swept knob at value
    memory_bytes()

``name`` is the system's name in tables and plots, ``knob`` the library's name of the swept
parameter and ``sweep`` which sweep of a grid it takes ("nprobe" or "ef"). All use inner
product on the same unit vectors and the same thread count; the codes (ragcore IVF sq8 / pq4 /
rabitq, faiss IVFRaBitQ, IVFRaBitQFastScan and IVFPQFastScan) all return exact scores of
re-scored candidates; the graph indexes (ragcore HNSWIndex, faiss IndexHNSWFlat, hnswlib,
usearch) all build with the same M and ef_construction.
"""

from __future__ import annotations

import importlib.util

import numpy as np

from ...dense.hnsw import HNSWIndex
from ...dense.ivf import IVFIndex

# The graph indexes' build parameters when none are given: hnswlib's README example.
GRAPH_M, GRAPH_EF_CONSTRUCTION = 16, 200
# 4-bit PQ: one sub-quantiser per 4 dimensions (2 bits scanned per dimension, 1/16 of float32),
# candidates re-scored exactly: rescore * k (ragcore's default rescore, 4) = k_factor * k (faiss
# IndexRefineFlat).
PQ_DIMS_PER_CODE, PQ_RESCORE = 4, 4


class System:
    """One index configuration: build(x) once, then search at each value of its knob."""

    name = ""      # the system's name in tables and plots (one Pareto front each)
    knob = ""      # the library's name of the swept parameter
    sweep = ""     # the grid's sweep it takes: "nprobe" or "ef"
    module = None  # the Python module it needs, if any

    def __init__(self, threads: int, params: dict):
        self.threads, self.seed = threads, params.get("seed", 0)

    @classmethod
    def available(cls) -> bool:
        return cls.module is None or importlib.util.find_spec(cls.module) is not None

    @property
    def config(self) -> str:
        return ""

    def build(self, x: np.ndarray, sample: np.ndarray | None = None) -> None:
        raise NotImplementedError

    def search(self, queries: np.ndarray, k: int, value: int) -> np.ndarray:
        raise NotImplementedError

    def memory_bytes(self) -> int:
        raise NotImplementedError

    def threads_for(self, queries: np.ndarray) -> int:
        """One thread for one query: hnswlib and usearch start their threads on
        every call, which costs more than a single query's search."""
        return self.threads if len(queries) > 1 else 1


class IvfSystem(System):
    """An inverted-file index of nlist lists, swept over nprobe."""
    knob = sweep = "nprobe"

    def __init__(self, threads, params):
        super().__init__(threads, params)
        self.nlist = params["nlist"]

    config = property(lambda self: f"nlist={self.nlist}")


class RagcoreIVF(IvfSystem):
    name, dtype = "ragcore IVF float32", "float32"

    options: dict = {}  # IVFIndex keywords of the variant

    def build(self, x, sample=None):
        options = {"m": pq_codes(x.shape[1])} if self.dtype == "pq4" else dict(self.options)
        self.index = IVFIndex(x.shape[1], self.nlist, "ip", self.dtype, seed=self.seed, **options)
        self.index.train(x if sample is None else sample, n_threads=self.threads)
        self.index.add(x, n_threads=self.threads)

    def search(self, queries, k, value):
        return self.index.search(queries, k, nprobe=value, n_threads=self.threads).ids

    @property
    def last_stage_seconds(self) -> dict:
        return self.index.last_stage_seconds

    def memory_bytes(self):
        return self.index.memory_bytes()


class RagcoreIVFBf16Compute(RagcoreIVF):
    """bfloat16 rows, the queries rounded to bfloat16 and multiplied by the bf16 kernels."""
    name, dtype, options = "ragcore IVF bf16 compute", "bfloat16", {"compute": "bfloat16"}


class RagcoreIVFSq8(RagcoreIVF):
    name, dtype = "ragcore IVF sq8", "sq8"


class RagcoreIVFRabitq(RagcoreIVF):
    name, dtype = "ragcore IVF rabitq", "rabitq"


class RagcoreIVFPq4(RagcoreIVF):
    """4-bit PQ codes, one per PQ_DIMS_PER_CODE dimensions, candidates re-scored exactly
    (its default rescore, PQ_RESCORE)."""
    name, dtype = "ragcore IVF pq4", "pq4"


class FaissIVFFlat(IvfSystem):
    """faiss IndexIVFFlat; its subclasses change the lists' index (make_base), the coarse
    quantizer and what wraps the lists (wrap)."""
    name, module = "faiss IndexIVFFlat", "faiss"
    quantizer = "IndexFlatIP"

    def make_base(self, quantizer, d):
        import faiss

        return faiss.IndexIVFFlat(quantizer, d, self.nlist, faiss.METRIC_INNER_PRODUCT)

    def wrap(self, base):
        return base

    def build(self, x, sample=None):
        import faiss

        faiss.omp_set_num_threads(self.threads)
        self.coarse = getattr(faiss, self.quantizer)(x.shape[1])
        self.base = self.make_base(self.coarse, x.shape[1])
        self.base.cp.seed = self.seed
        self.index = self.wrap(self.base)
        self.index.train(np.ascontiguousarray(x if sample is None else sample))
        self.index.add(x)

    def search(self, queries, k, value):
        import faiss

        faiss.omp_set_num_threads(self.threads)
        self.base.nprobe = value
        return self.index.search(queries, k)[1]

    def memory_bytes(self):
        import faiss

        return int(faiss.serialize_index(self.index).nbytes)


class FaissIVFRefined(FaissIVFFlat):
    """A faiss IVF code index (make_base) re-ranked by IndexRefineFlat (k_factor), so that
    its scores are exact as those of ragcore's code storages are."""
    k_factor, quantizer = 8, "IndexFlatL2"

    def make_base(self, quantizer, d):
        raise NotImplementedError

    def wrap(self, base):
        import faiss

        index = faiss.IndexRefineFlat(base)
        index.k_factor = self.k_factor
        return index


class FaissIVFRaBitQ(FaissIVFRefined):
    """faiss IndexIVFRaBitQ (1-bit codes, faiss's defaults), k_factor 8."""
    name = "faiss IndexIVFRaBitQ+RefineFlat"

    def make_base(self, quantizer, d):
        import faiss

        return faiss.IndexIVFRaBitQ(quantizer, d, self.nlist, faiss.METRIC_INNER_PRODUCT)


class FaissIVFRaBitQFastScan(FaissIVFRefined):
    """faiss IndexIVFRaBitQFastScan (1-bit codes in blocks of 32, scanned by table look-ups)
    re-ranked by IndexRefineFlat (k_factor 8)."""
    name = "faiss IndexIVFRaBitQFastScan+RefineFlat"

    def make_base(self, quantizer, d):
        import faiss

        return faiss.IndexIVFRaBitQFastScan(quantizer, d, self.nlist, faiss.METRIC_INNER_PRODUCT,
                                            32, True, 1)


class FaissIVFPQFastScan(FaissIVFRefined):
    """faiss IndexIVFPQFastScan (4-bit codes, one per PQ_DIMS_PER_CODE dimensions) re-ranked
    by IndexRefineFlat (k_factor PQ_RESCORE), as ragcore IVF pq4 is."""
    name, k_factor = "faiss IndexIVFPQFastScan+RefineFlat", PQ_RESCORE

    def make_base(self, quantizer, d):
        import faiss

        return faiss.IndexIVFPQFastScan(quantizer, d, self.nlist, pq_codes(d), 4,
                                        faiss.METRIC_INNER_PRODUCT)


def pq_codes(d: int) -> int:
    if d % PQ_DIMS_PER_CODE:
        raise SystemExit(f"4-bit PQ systems need d divisible by {PQ_DIMS_PER_CODE}, got {d}")
    return d // PQ_DIMS_PER_CODE


class GraphSystem(System):
    """A graph index built with M and ef_construction (the same for every one), swept over
    its search-time candidate list (ef, at least k)."""
    sweep = "ef"

    def __init__(self, threads, params):
        super().__init__(threads, params)
        self.M = params.get("M", GRAPH_M)
        self.EF_CONSTRUCTION = params.get("ef_construction", GRAPH_EF_CONSTRUCTION)

    config = property(lambda self: f"M={self.M},efC={self.EF_CONSTRUCTION}")


class RagcoreHNSW(GraphSystem):
    name, knob = "ragcore HNSW", "ef"
    dtype = "float32"

    def build(self, x, sample=None):
        self.index = HNSWIndex(x.shape[1], "ip", M=self.M, ef_construction=self.EF_CONSTRUCTION,
                               seed=self.seed, dtype=self.dtype)
        self.index.add(x, n_threads=self.threads)

    def search(self, queries, k, value):
        return self.index.search(queries, k, ef=value, n_threads=self.threads_for(queries)).ids

    def memory_bytes(self):
        return self.index.memory_bytes()


class RagcoreHNSWInt8(RagcoreHNSW):
    """The walk on int8 codes, candidates re-scored with the float32 vectors."""
    name, dtype = "ragcore HNSW int8", "int8"


class FaissHNSW(GraphSystem):
    name, knob, module = "faiss IndexHNSWFlat", "efSearch", "faiss"

    def build(self, x, sample=None):
        import faiss

        faiss.omp_set_num_threads(self.threads)
        self.index = faiss.IndexHNSWFlat(x.shape[1], self.M, faiss.METRIC_INNER_PRODUCT)
        self.index.hnsw.efConstruction = self.EF_CONSTRUCTION
        self.index.add(x)

    def search(self, queries, k, value):
        import faiss

        faiss.omp_set_num_threads(self.threads_for(queries))
        self.index.hnsw.efSearch = max(value, k)
        return self.index.search(queries, k)[1]

    def memory_bytes(self):
        import faiss

        return int(faiss.serialize_index(self.index).nbytes)


class Hnswlib(GraphSystem):
    name, knob, module = "hnswlib", "ef", "hnswlib"

    def build(self, x, sample=None):
        import hnswlib

        self.index = hnswlib.Index(space="ip", dim=x.shape[1])
        self.index.init_index(max_elements=len(x), ef_construction=self.EF_CONSTRUCTION,
                              M=self.M, random_seed=self.seed)
        self.index.add_items(x, np.arange(len(x)), num_threads=self.threads)

    def search(self, queries, k, value):
        self.index.set_ef(max(value, k))
        return self.index.knn_query(queries, k,
                                    num_threads=self.threads_for(queries))[0].astype(np.int64)

    def memory_bytes(self):
        return int(self.index.index_file_size())


class Usearch(GraphSystem):
    name, knob, module = "usearch", "expansion_search", "usearch"

    def build(self, x, sample=None):
        from usearch.index import Index

        self.index = Index(ndim=x.shape[1], metric="ip", dtype="f32",
                           connectivity=self.M, expansion_add=self.EF_CONSTRUCTION)
        self.index.add(np.arange(len(x)), x, threads=self.threads)

    def search(self, queries, k, value):
        self.index.expansion_search = max(value, k)
        keys = self.index.search(queries, k, threads=self.threads_for(queries)).keys
        return np.asarray(keys, dtype=np.int64).reshape(len(queries), k)

    def memory_bytes(self):
        return int(self.index.memory_usage)


# The names --systems takes.
SYSTEMS = {"ragcore-f32": RagcoreIVF, "ragcore-bf16-compute": RagcoreIVFBf16Compute,
           "ragcore-sq8": RagcoreIVFSq8,
           "ragcore-rabitq": RagcoreIVFRabitq, "ragcore-pq4": RagcoreIVFPq4,
           "ragcore-hnsw": RagcoreHNSW, "ragcore-hnsw-int8": RagcoreHNSWInt8,
           "faiss-ivf": FaissIVFFlat, "faiss-ivf-rabitq": FaissIVFRaBitQ,
           "faiss-ivf-rabitq-fastscan": FaissIVFRaBitQFastScan,
           "faiss-ivfpq-fastscan": FaissIVFPQFastScan, "faiss-hnsw": FaissHNSW,
           "hnswlib": Hnswlib, "usearch": Usearch}
SYSTEM_NAMES = tuple(SYSTEMS)


def make_systems(names, nlists, threads: int, seed: int, M: int = GRAPH_M,
                 ef_construction: int = GRAPH_EF_CONSTRUCTION) -> tuple[list, list]:
    """(systems to run: one per nlist for the IVF ones, names skipped because their library
    is missing)."""
    graph = {"M": M, "ef_construction": ef_construction, "seed": seed}
    systems, missing = [], set()
    for name in names:
        cls = SYSTEMS[name]
        if not cls.available():
            missing.add(cls.name)
        elif issubclass(cls, IvfSystem):
            systems += [cls(threads, {"nlist": nlist, "seed": seed}) for nlist in nlists]
        else:
            systems.append(cls(threads, graph))
    return systems, sorted(missing)
