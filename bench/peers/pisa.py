"""PISA through pyterrier-pisa (needs Java): no stemming or stopwords (bm25).

One call for all queries: the native retrieval call under PisaRetrieve.transform, writing
into arrays made beforehand, without transform's DataFrame of queries and of results
(100,000 rows at k = 100). Of PISA's block-max WAND and MaxScore, the faster on the first
batch of each k (each run twice, alternating) is kept. The hits come back as PISA's docnos
(the row numbers as str); turning them into ids per query is not timed (`ids`)."""

from __future__ import annotations

import time

import numpy as np

LIBRARY, DISTRIBUTION = "pyterrier_pisa", "pyterrier-pisa"
ALGORITHMS = ("block_max_wand", "maxscore")


class Bm25:
    name = "PISA"

    def __init__(self, threads, workdir):
        self.threads, self.workdir = threads, workdir

    def build(self, texts):
        from pyterrier_pisa import PisaIndex

        self.index = PisaIndex(f"{self.workdir}/pisa", stemmer="none", stops="none",
                               threads=self.threads, overwrite=True)
        self.index.index({"docno": str(i), "text": t} for i, t in enumerate(texts))
        self.retrievers, self.algorithm = {}, {}

    def _retrieve(self, retriever, queries, k):
        from pyterrier_pisa import _pisathon

        retriever.reset_retrieval_context()  # a no-op once the context is made
        size = len(queries) * k
        qidxs, docnos = np.empty(size, np.int32), np.empty(size, object)
        ranks, scores = np.empty(size, np.int32), np.empty(size, np.float32)
        n = _pisathon.retrieve(retriever._ctxt, retriever.query_algorithm.value,
                               list(enumerate(queries)), k=k, threads=self.threads,
                               query_weighted=0, pretokenised=False, result_qidxs=qidxs,
                               result_docnos=docnos, result_ranks=ranks, result_scores=scores)
        return len(queries), qidxs[:n], docnos[:n]

    def search(self, queries, k):
        if k not in self.retrievers:
            candidates = {a: self.index.bm25(k1=1.2, b=0.75, num_results=k,
                                             threads=self.threads, query_algorithm=a)
                          for a in ALGORITHMS}
            best = {a: float("inf") for a in ALGORITHMS}
            for _ in range(2):
                for a, retriever in candidates.items():
                    start = time.perf_counter()
                    self._retrieve(retriever, queries, k)
                    best[a] = min(best[a], time.perf_counter() - start)
            self.algorithm[k] = min(ALGORITHMS, key=best.get)
            self.retrievers[k] = candidates[self.algorithm[k]]
        return self._retrieve(self.retrievers[k], queries, k)

    @staticmethod
    def ids(result):
        nq, qidxs, docnos = result
        out = [[] for _ in range(nq)]
        for q, docno in zip(qidxs.tolist(), docnos.tolist()):
            out[q].append(int(docno))
        return out

    def detail(self, k):
        return self.algorithm.get(k)


TASKS = {"bm25": [Bm25]}
