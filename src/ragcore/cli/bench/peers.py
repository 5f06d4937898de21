"""The indexes compared by ``ragcore bench ann``: ragcore's IVFIndex and HNSWIndex, and peers.

Each system builds once and then sweeps its search-time knob (nprobe or
efSearch); a peer whose library is not installed is skipped and said so.
All use inner product on the same unit vectors and the same thread count; the
codes (ragcore IVF sq8 / pq4 / rabitq, faiss IVFRaBitQ, IVFRaBitQFastScan and
IVFPQFastScan) all return exact scores of re-scored candidates; the graph indexes (ragcore HNSWIndex, faiss IndexHNSWFlat, hnswlib, usearch) all
build with the same M and ef_construction.
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
    """One index configuration: build(x) once, then search at each sweep value."""

    family = ""    # the system's name in tables and plots (one Pareto front each)
    knob = ""      # the name of the swept parameter
    module = None  # the Python module it needs, if any

    def __init__(self, sweep, threads: int, seed: int):
        self.sweep, self.threads, self.seed = list(sweep), threads, seed
        self.value = None

    @classmethod
    def available(cls) -> bool:
        return cls.module is None or importlib.util.find_spec(cls.module) is not None

    @property
    def config(self) -> str:
        return ""

    def set(self, value) -> None:
        self.value = value

    def build(self, x: np.ndarray, sample: np.ndarray) -> None:
        raise NotImplementedError

    def search(self, queries: np.ndarray, k: int) -> np.ndarray:
        raise NotImplementedError

    def memory_bytes(self) -> int:
        raise NotImplementedError

    def threads_for(self, queries: np.ndarray) -> int:
        """One thread for one query: hnswlib and usearch start their threads on
        every call, which costs more than a single query's search."""
        return self.threads if len(queries) > 1 else 1


class RagcoreIVF(System):
    knob = "nprobe"

    def __init__(self, sweep, threads, seed, nlist: int, dtype: str):
        super().__init__([p for p in sweep if p <= nlist], threads, seed)
        self.nlist, self.dtype = nlist, dtype
        self.family = f"ragcore IVF {dtype}"

    config = property(lambda self: f"nlist={self.nlist}")

    def build(self, x, sample):
        options = {"m": pq_codes(x.shape[1])} if self.dtype == "pq4" else {}
        self.index = IVFIndex(x.shape[1], self.nlist, "ip", self.dtype, seed=self.seed, **options)
        self.index.train(sample, n_threads=self.threads)
        self.index.add(x, n_threads=self.threads)

    def search(self, queries, k):
        return self.index.search(queries, k, nprobe=self.value, n_threads=self.threads).ids

    @property
    def last_stage_seconds(self) -> dict:
        return self.index.last_stage_seconds

    def memory_bytes(self):
        return self.index.memory_bytes()


class FaissIVFFlat(System):
    family, knob, module = "faiss IndexIVFFlat", "nprobe", "faiss"

    def __init__(self, sweep, threads, seed, nlist: int):
        super().__init__([p for p in sweep if p <= nlist], threads, seed)
        self.nlist = nlist

    config = property(lambda self: f"nlist={self.nlist}")

    def build(self, x, sample):
        import faiss

        faiss.omp_set_num_threads(self.threads)
        self.quantizer = faiss.IndexFlatIP(x.shape[1])
        self.index = faiss.IndexIVFFlat(self.quantizer, x.shape[1], self.nlist,
                                        faiss.METRIC_INNER_PRODUCT)
        self.index.cp.seed = self.seed
        self.index.train(sample)
        self.index.add(x)

    def search(self, queries, k):
        self.index.nprobe = self.value
        return self.index.search(queries, k)[1]

    def memory_bytes(self):
        import faiss

        return int(faiss.serialize_index(self.index).nbytes)


class FaissIVFRefined(FaissIVFFlat):
    """A faiss IVF code index (make_base) re-ranked by IndexRefineFlat (k_factor), so that
    its scores are exact as those of ragcore's code storages are."""
    k_factor = 8

    def make_base(self, quantizer, d):
        raise NotImplementedError

    def build(self, x, sample):
        import faiss

        faiss.omp_set_num_threads(self.threads)
        self.quantizer = faiss.IndexFlatL2(x.shape[1])
        self.base = self.make_base(self.quantizer, x.shape[1])
        self.base.cp.seed = self.seed
        self.index = faiss.IndexRefineFlat(self.base)
        self.index.k_factor = self.k_factor
        self.index.train(sample)
        self.index.add(x)

    def search(self, queries, k):
        self.base.nprobe = self.value
        return self.index.search(queries, k)[1]


class FaissIVFRaBitQ(FaissIVFRefined):
    """faiss IndexIVFRaBitQ (1-bit codes, faiss's defaults), k_factor 8."""
    family = "faiss IndexIVFRaBitQ+RefineFlat"

    def make_base(self, quantizer, d):
        import faiss

        return faiss.IndexIVFRaBitQ(quantizer, d, self.nlist, faiss.METRIC_INNER_PRODUCT)


class FaissIVFRaBitQFastScan(FaissIVFRefined):
    """faiss IndexIVFRaBitQFastScan (1-bit codes in blocks of 32, scanned by table look-ups)
    re-ranked by IndexRefineFlat (k_factor 8)."""
    family = "faiss IndexIVFRaBitQFastScan+RefineFlat"

    def make_base(self, quantizer, d):
        import faiss

        return faiss.IndexIVFRaBitQFastScan(quantizer, d, self.nlist, faiss.METRIC_INNER_PRODUCT,
                                            32, True, 1)


class FaissIVFPQFastScan(FaissIVFRefined):
    """faiss IndexIVFPQFastScan (4-bit codes, one per PQ_DIMS_PER_CODE dimensions) re-ranked
    by IndexRefineFlat (k_factor PQ_RESCORE), as ragcore IVF pq4 is."""
    family, k_factor = "faiss IndexIVFPQFastScan+RefineFlat", PQ_RESCORE

    def make_base(self, quantizer, d):
        import faiss

        return faiss.IndexIVFPQFastScan(quantizer, d, self.nlist, pq_codes(d), 4,
                                        faiss.METRIC_INNER_PRODUCT)


def pq_codes(d: int) -> int:
    if d % PQ_DIMS_PER_CODE:
        raise SystemExit(f"4-bit PQ systems need d divisible by {PQ_DIMS_PER_CODE}, got {d}")
    return d // PQ_DIMS_PER_CODE


class GraphSystem(System):
    """A graph index built with M and ef_construction (the same for every one)."""

    def __init__(self, sweep, threads, seed, M: int = GRAPH_M,
                 ef_construction: int = GRAPH_EF_CONSTRUCTION):
        super().__init__(sweep, threads, seed)
        self.M, self.EF_CONSTRUCTION = M, ef_construction

    config = property(lambda self: f"M={self.M},efC={self.EF_CONSTRUCTION}")


class RagcoreHNSW(GraphSystem):
    family, knob = "ragcore HNSW", "ef"
    dtype = "float32"

    def build(self, x, sample):
        self.index = HNSWIndex(x.shape[1], "ip", M=self.M, ef_construction=self.EF_CONSTRUCTION,
                               seed=self.seed, dtype=self.dtype)
        self.index.add(x, n_threads=self.threads)

    def search(self, queries, k):
        return self.index.search(queries, k, ef=self.value,
                                 n_threads=self.threads_for(queries)).ids

    def memory_bytes(self):
        return self.index.memory_bytes()


class RagcoreHNSWInt8(RagcoreHNSW):
    """The walk on int8 codes, candidates re-scored with the float32 vectors."""
    family, dtype = "ragcore HNSW int8", "int8"


class FaissHNSW(GraphSystem):
    family, knob, module = "faiss IndexHNSWFlat", "efSearch", "faiss"

    def build(self, x, sample):
        import faiss

        faiss.omp_set_num_threads(self.threads)
        self.index = faiss.IndexHNSWFlat(x.shape[1], self.M, faiss.METRIC_INNER_PRODUCT)
        self.index.hnsw.efConstruction = self.EF_CONSTRUCTION
        self.index.add(x)

    def search(self, queries, k):
        import faiss

        faiss.omp_set_num_threads(self.threads_for(queries))
        self.index.hnsw.efSearch = max(self.value, k)
        return self.index.search(queries, k)[1]

    def memory_bytes(self):
        import faiss

        return int(faiss.serialize_index(self.index).nbytes)


class Hnswlib(GraphSystem):
    family, knob, module = "hnswlib", "ef", "hnswlib"

    def build(self, x, sample):
        import hnswlib

        self.index = hnswlib.Index(space="ip", dim=x.shape[1])
        self.index.init_index(max_elements=len(x), ef_construction=self.EF_CONSTRUCTION,
                              M=self.M, random_seed=self.seed)
        self.index.add_items(x, np.arange(len(x)), num_threads=self.threads)

    def search(self, queries, k):
        self.index.set_ef(max(self.value, k))
        return self.index.knn_query(queries, k, num_threads=self.threads_for(queries))[0].astype(np.int64)

    def memory_bytes(self):
        return int(self.index.index_file_size())


class Usearch(GraphSystem):
    family, knob, module = "usearch", "expansion_search", "usearch"

    def build(self, x, sample):
        from usearch.index import Index

        self.index = Index(ndim=x.shape[1], metric="ip", dtype="f32",
                           connectivity=self.M, expansion_add=self.EF_CONSTRUCTION)
        self.index.add(np.arange(len(x)), x, threads=self.threads)

    def search(self, queries, k):
        self.index.expansion_search = max(self.value, k)
        keys = self.index.search(queries, k, threads=self.threads_for(queries)).keys
        return np.asarray(keys, dtype=np.int64).reshape(len(queries), k)

    def memory_bytes(self):
        return int(self.index.memory_usage)


SYSTEM_NAMES = ("ragcore-f32", "ragcore-sq8", "ragcore-rabitq", "ragcore-pq4", "ragcore-hnsw",
                "ragcore-hnsw-int8", "faiss-ivf", "faiss-ivf-rabitq", "faiss-ivf-rabitq-fastscan",
                "faiss-ivfpq-fastscan", "faiss-hnsw", "hnswlib", "usearch")
_IVF_DTYPES = {"ragcore-f32": "float32", "ragcore-sq8": "sq8", "ragcore-rabitq": "rabitq",
               "ragcore-pq4": "pq4"}
_FAISS_IVF = {"faiss-ivf": FaissIVFFlat, "faiss-ivf-rabitq": FaissIVFRaBitQ,
              "faiss-ivf-rabitq-fastscan": FaissIVFRaBitQFastScan,
              "faiss-ivfpq-fastscan": FaissIVFPQFastScan}
_GRAPHS = {"ragcore-hnsw": RagcoreHNSW, "ragcore-hnsw-int8": RagcoreHNSWInt8,
           "faiss-hnsw": FaissHNSW, "hnswlib": Hnswlib, "usearch": Usearch}


def make_systems(names, nlists, nprobes, efs, threads: int, seed: int, M: int = GRAPH_M,
                 ef_construction: int = GRAPH_EF_CONSTRUCTION) -> tuple[list, list]:
    """(systems to run, names skipped because their library is missing)."""
    systems, missing = [], []
    for name in names:
        if name in _IVF_DTYPES:
            systems += [RagcoreIVF(nprobes, threads, seed, nlist, _IVF_DTYPES[name]) for nlist in nlists]
        elif name in _FAISS_IVF:
            systems += [_FAISS_IVF[name](nprobes, threads, seed, nlist) for nlist in nlists]
        else:
            systems.append(_GRAPHS[name](efs, threads, seed, M, ef_construction))
    kept = [s for s in systems if s.available()]
    missing = sorted({s.family for s in systems if not s.available()})
    return kept, missing
