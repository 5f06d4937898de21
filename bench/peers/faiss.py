"""faiss-cpu: IndexFlatIP (exact), IndexHNSWFlat and IndexIVFFlat (ann)."""

from __future__ import annotations

import numpy as np

LIBRARY, DISTRIBUTION = "faiss", "faiss-cpu"


class Exact:
    name = "faiss"

    def __init__(self, threads):
        self.threads = threads

    def build(self, x):
        import faiss

        faiss.omp_set_num_threads(self.threads)
        self.index = faiss.IndexFlatIP(x.shape[1])
        self.index.add(x)

    def search(self, q, k):
        import faiss

        faiss.omp_set_num_threads(self.threads)
        return self.index.search(q, k)[1]


class ExactBlas(Exact):
    """IndexFlatIP with its BLAS path at every batch (its default takes it only from
    nq * d >= faiss.cvar.distance_compute_blas_threshold): the better of the two is faiss's
    figure."""
    name = "faiss BLAS"

    def search(self, q, k):
        import faiss

        faiss.omp_set_num_threads(self.threads)
        saved = faiss.cvar.distance_compute_blas_threshold
        faiss.cvar.distance_compute_blas_threshold = 0
        try:
            return self.index.search(q, k)[1]
        finally:
            faiss.cvar.distance_compute_blas_threshold = saved


class Hnsw:
    name, knob = "faiss HNSWFlat", "ef"

    def __init__(self, threads, params):
        self.threads, self.params = threads, params

    def build(self, x):
        import faiss

        faiss.omp_set_num_threads(self.threads)
        self.index = faiss.IndexHNSWFlat(x.shape[1], self.params["M"], faiss.METRIC_INNER_PRODUCT)
        self.index.hnsw.efConstruction = self.params["ef_construction"]
        self.index.add(x)

    def search(self, q, k, value):
        import faiss

        faiss.omp_set_num_threads(self.threads)
        self.index.hnsw.efSearch = value
        return self.index.search(q, k)[1]


class Ivf:
    name, knob = "faiss IVFFlat", "nprobe"

    def __init__(self, threads, params):
        self.threads, self.nlist = threads, params["nlist"]

    def build(self, x):
        import faiss

        faiss.omp_set_num_threads(self.threads)
        self.quantizer = faiss.IndexFlatIP(x.shape[1])
        self.index = faiss.IndexIVFFlat(self.quantizer, x.shape[1], self.nlist,
                                        faiss.METRIC_INNER_PRODUCT)
        self.index.cp.seed = 0
        self.index.train(np.ascontiguousarray(x))
        self.index.add(x)

    def search(self, q, k, value):
        import faiss

        faiss.omp_set_num_threads(self.threads)
        self.index.nprobe = value
        return self.index.search(q, k)[1]


class IvfPq4(Ivf):
    """IndexIVFPQFastScan (4-bit codes, one per 4 dimensions) re-ranked exactly by
    IndexRefineFlat (k_factor 4), as ragcore's IVF pq4 is."""
    name = "faiss IVFPQFastScan+refine"

    def build(self, x):
        import faiss

        faiss.omp_set_num_threads(self.threads)
        self.quantizer = faiss.IndexFlatIP(x.shape[1])
        self.base = faiss.IndexIVFPQFastScan(self.quantizer, x.shape[1], self.nlist,
                                             x.shape[1] // 4, 4, faiss.METRIC_INNER_PRODUCT)
        self.base.cp.seed = 0
        self.index = faiss.IndexRefineFlat(self.base)
        self.index.k_factor = 4
        self.index.train(np.ascontiguousarray(x))
        self.index.add(x)

    def search(self, q, k, value):
        import faiss

        faiss.omp_set_num_threads(self.threads)
        self.base.nprobe = value
        return self.index.search(q, k)[1]


TASKS = {"exact": [Exact, ExactBlas], "ann": [Hnsw, Ivf, IvfPq4]}
