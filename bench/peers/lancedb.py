"""LanceDB (embedded, on disk): its default flat scan, the filter applied first (collection)."""

from __future__ import annotations

import numpy as np

LIBRARY, DISTRIBUTION = "lancedb", "lancedb"


class Collection:
    name = "lancedb"

    def __init__(self, path):
        import lancedb

        self.path, self.lancedb = path, lancedb
        self.db = lancedb.connect(path)
        self.table = None

    def add(self, ids, texts, vectors, buckets):
        import pyarrow as pa

        batch = pa.table({"id": pa.array(np.asarray(ids, dtype=np.int64)), "text": texts,
                          "bucket": pa.array(np.asarray(buckets, dtype=np.int64)),
                          "vector": pa.FixedSizeListArray.from_arrays(
                              pa.array(vectors.reshape(-1)), vectors.shape[1])})
        if self.table is None:
            self.table = self.db.create_table("bench", batch)
        else:
            self.table.add(batch)

    def reopen(self):
        self.db = self.lancedb.connect(self.path)
        self.table = self.db.open_table("bench")

    def search(self, q, k, below):
        query = self.table.search(q).metric("dot").limit(k).select(["id", "_distance"])
        if below is not None:
            query = query.where(f"bucket < {below}", prefilter=True)
        return [int(i) for i in query.to_arrow()["id"].to_pylist()]


TASKS = {"collection": [Collection]}
