"""faiss-cpu: IndexFlatIP (exact); IndexHNSWFlat, IndexIVFFlat and IndexIVFPQFastScan re-ranked
by IndexRefineFlat (ann: the adapters of ragcore bench ann, ragcore.cli.bench.peers)."""

from __future__ import annotations

from ragcore.cli.bench.peers import FaissHNSW, FaissIVFFlat, FaissIVFPQFastScan

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


TASKS = {"exact": [Exact, ExactBlas], "ann": [FaissHNSW, FaissIVFFlat, FaissIVFPQFastScan]}
