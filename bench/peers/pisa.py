"""PISA through pyterrier-pisa (needs Java): block-max WAND, no stemming or stopwords (bm25)."""

from __future__ import annotations

LIBRARY, DISTRIBUTION = "pyterrier_pisa", "pyterrier-pisa"


class Bm25:
    name = "PISA"

    def __init__(self, threads, workdir):
        self.threads, self.workdir = threads, workdir

    def build(self, texts):
        from pyterrier_pisa import PisaIndex

        self.index = PisaIndex(f"{self.workdir}/pisa", stemmer="none", stops="none",
                               threads=self.threads, overwrite=True)
        self.index.index({"docno": str(i), "text": t} for i, t in enumerate(texts))
        self.retrievers = {}

    def search(self, queries, k):
        import pandas as pd

        if k not in self.retrievers:
            self.retrievers[k] = self.index.bm25(k1=1.2, b=0.75, num_results=k,
                                                 threads=self.threads)
        frame = pd.DataFrame({"qid": [str(i) for i in range(len(queries))], "query": queries})
        rows = self.retrievers[k].transform(frame)
        out = [[] for _ in queries]
        for qid, docno in zip(rows["qid"], rows["docno"]):
            out[int(qid)].append(int(docno))
        return out


TASKS = {"bm25": [Bm25]}
