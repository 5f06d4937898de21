"""ragcore Collection against Chroma and LanceDB (embedded, on disk), with the same
embeddings given to all three (encoding is excluded).

    .venv/bin/python bench/collection.py [--n 100000] [--queries 200] [--systems ...]
                                         [--out bench/results/collection.json]

Corpus: the standard-library documentation (ragcore.cli.datasets.stdlib_docs) cut into
chunks of at most 128 tokens and encoded once with the bundled all-MiniLM-L6-v2 (int8;
cached); repeated until --n chunks, each repeat's vector the original plus small Gaussian
noise (sigma 0.01, renormalised) so that no two vectors tie, and every text suffixed with
its number so that no two texts are equal (equal texts share one embedding in a
collection). Metadata: an integer "bucket"
uniform in 0..99, so the filter bucket < 1 / 10 / 50 allows 1% / 10% / 50% of the chunks.
Queries: the corpus's questions (docstring summaries), encoded the same way.

Measured, each system side by side in one process, the searches interleaved query by query:
add throughput (batches of 5,000), the time to open the existing store and answer a first
query, search latency p50 / p99 at k = 10 without and with each filter, recall@10 against
exact filtered search (numpy, float64; a result within 1e-5 of the 10th exact score counts,
as near-duplicate vectors tie to float32 rounding), and the bytes on disk. Systems: ragcore
with its flat (exact) index and with dense="hnsw" (M 16, ef_construction 200, ef 64); Chroma's
HNSW index with its defaults (M 16, construction_ef 100, search_ef 10) and with ragcore's HNSW
settings (chroma-matched); LanceDB's default (no vector index: a flat scan) with the filter
applied before the search (prefilter).
"""

from __future__ import annotations

import _common  # noqa: F401  (first: BLAS environment)

import argparse
import os

os.environ.setdefault("LANCE_LOG", "error")  # a deprecation notice per query otherwise
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

from _common import LoadMeter, cpu_model, foreign_cores, markdown_table, write_json

FILTERS = {"none": None, "1%": 1, "10%": 10, "50%": 50}
_BATCH = 5000


def corpus(n: int, seed: int = 0):
    """(texts, vectors [n, 384], buckets, query vectors) as described in the docstring."""
    from ragcore.cli.datasets import stdlib_docs
    from ragcore.cli.embedding_cache import EmbeddingCache
    from ragcore.encoders import default_encoder
    from ragcore.rag.chunking import Chunker

    data = stdlib_docs()
    encoder = default_encoder()
    chunker = Chunker(encoder, chunk_size=128, overlap=16)
    chunks = [c.text for c in chunker.chunk_documents((d.doc_id, d.text) for d in data.documents)]
    # A cache of this script's own: a shared one is rewritten by whatever else encodes.
    cache = EmbeddingCache(encoder, directory=_common.RESULTS_DIR / "collection-embeddings",
                           show_progress=True)
    base = cache.encode(chunks)
    queries = cache.encode(data.questions)
    rng = np.random.default_rng(seed)
    reps = -(-n // len(chunks))
    # Every text unique (a collection gives equal texts one embedding; the noisy repeats
    # must stay distinct).
    texts = [f"{t} [{i}]" for i, t in enumerate(t for _ in range(reps) for t in chunks)][:n]
    vectors = np.tile(base, (reps, 1))[:n]
    noise = rng.normal(0.0, 0.01, size=vectors.shape).astype(np.float32)
    noise[: len(chunks)] = 0.0
    vectors = vectors + noise
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    buckets = rng.integers(0, 100, size=n)
    return texts, np.ascontiguousarray(vectors, dtype=np.float32), buckets, queries, len(chunks)


# ---- the three stores --------------------------------------------------------------


class Ragcore:
    name, dense = "ragcore", "flat"

    def __init__(self, path):
        from ragcore.rag.collection import Collection

        self.path, self._cls = path, Collection
        self.col = Collection.create(path, encoder=_NoEncoder(), chunker="none", dense=self.dense,
                                     metadata_schema={"bucket": "int"})

    def add(self, ids, texts, vectors, buckets):
        self.col.add(texts, ids=[int(i) for i in ids], metadata=[{"bucket": int(b)} for b in buckets],
                     embeddings=vectors)

    def finish(self):
        self.col.close()

    def open(self):
        self.col = self._cls.open(self.path, encoder=_NoEncoder())

    def search(self, q, k, below):
        flt = None if below is None else {"bucket": {"$lt": below}}
        return [m.id for m in self.col.search_by_vector(q, k=k, filter=flt)]


class RagcoreHNSW(Ragcore):
    name, dense = "ragcore-hnsw", "hnsw"  # M 16, ef_construction 200, ef 64


class Chroma:
    name = "chroma"
    settings = {"hnsw:space": "ip"}  # its defaults: M 16, construction_ef 100, search_ef 10

    def __init__(self, path):
        import chromadb

        self.path, self._chromadb = path, chromadb
        self.client = chromadb.PersistentClient(path=path)
        self.col = self.client.create_collection("bench", metadata=self.settings)

    def add(self, ids, texts, vectors, buckets):
        for start in range(0, len(ids), 5000):  # below Chroma's maximum batch size
            end = start + 5000
            self.col.add(ids=[str(i) for i in ids[start:end]], documents=texts[start:end],
                         embeddings=vectors[start:end],
                         metadatas=[{"bucket": int(b)} for b in buckets[start:end]])

    def finish(self):
        del self.col, self.client

    def open(self):
        self.client = self._chromadb.PersistentClient(path=self.path)
        self.col = self.client.get_collection("bench")

    def search(self, q, k, below):
        where = None if below is None else {"bucket": {"$lt": below}}
        got = self.col.query(query_embeddings=[q], n_results=k, where=where, include=[])
        return [int(i) for i in got["ids"][0]]


class ChromaMatched(Chroma):
    """Chroma's HNSW with ragcore's HNSW settings."""
    name = "chroma-matched"
    settings = {"hnsw:space": "ip", "hnsw:M": 16, "hnsw:construction_ef": 200,
                "hnsw:search_ef": 64}


class Lance:
    name = "lancedb"

    def __init__(self, path):
        import lancedb

        self.path, self._lancedb = path, lancedb
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

    def finish(self):
        del self.table, self.db

    def open(self):
        self.db = self._lancedb.connect(self.path)
        self.table = self.db.open_table("bench")

    def search(self, q, k, below):
        query = self.table.search(q).metric("dot").limit(k).select(["id"])
        if below is not None:
            query = query.where(f"bucket < {below}", prefilter=True)
        return [int(i) for i in query.to_arrow()["id"].to_pylist()]


class _NoEncoder:
    def encode(self, texts):
        raise RuntimeError("the benchmark gives every vector")

    def __repr__(self):
        return "given embeddings"


# ---- measuring ---------------------------------------------------------------------------


def disk_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(path)
               for f in files)


def exact_scores(vectors, buckets, q, below):
    """float64 scores of every chunk (-inf where the filter refuses it)."""
    scores = vectors.astype(np.float64) @ q.astype(np.float64)
    return scores if below is None else np.where(buckets < below, scores, -np.inf)


def recall(got, scores, k, eps=1e-5) -> float:
    """Share of the k results that are among the exact top k; a chunk scoring within eps of
    the k-th exact score counts (near-duplicate vectors tie to float32 rounding)."""
    kth = np.partition(scores, -k)[-k]
    got = [i for i in got if 0 <= i < len(scores)]
    return sum(scores[i] >= kth - eps for i in got) / k


SYSTEMS = {cls.name: cls for cls in (Ragcore, RagcoreHNSW, Chroma, ChromaMatched, Lance)}


def run(n: int, n_queries: int, workdir: str, names=tuple(SYSTEMS)) -> dict:
    texts, vectors, buckets, queries, base_chunks = corpus(n)
    queries = queries[np.random.default_rng(1).permutation(len(queries))[:n_queries]]
    ids = np.arange(n, dtype=np.int64)
    systems = [SYSTEMS[name](os.path.join(workdir, name)) for name in names]
    result = {"n": n, "queries": len(queries), "base_chunks": base_chunks, "systems": {}}
    meter = LoadMeter()
    for s in systems:  # add: each store in turn (a fresh start for each)
        t = time.perf_counter()
        for start in range(0, n, _BATCH):
            end = min(n, start + _BATCH)
            s.add(ids[start:end], texts[start:end], vectors[start:end], buckets[start:end])
        s.finish()
        elapsed = time.perf_counter() - t
        result["systems"][s.name] = {"add_s": elapsed, "add_per_s": n / elapsed,
                                     "disk_bytes": disk_bytes(s.path)}
        print(f"{s.name}: added {n} in {elapsed:.1f} s", file=sys.stderr)
    for s in systems:
        t = time.perf_counter()
        s.open()
        s.search(queries[0], 10, None)
        result["systems"][s.name]["open_s"] = time.perf_counter() - t
    latency = {s.name: {f: [] for f in FILTERS} for s in systems}
    recalls = {s.name: {f: [] for f in FILTERS} for s in systems}
    for s in systems:  # warm-up
        for f, below in FILTERS.items():
            s.search(queries[0], 10, below)
    for i, q in enumerate(queries):
        for f, below in FILTERS.items():
            truth = exact_scores(vectors, buckets, q, below)
            first = i % len(systems)  # interleaved, rotating who goes first
            order = systems[first:] + systems[:first]
            for s in order:
                t = time.perf_counter()
                got = s.search(q, 10, below)
                latency[s.name][f].append(time.perf_counter() - t)
                recalls[s.name][f].append(recall(got, truth, 10))
    for s in systems:
        r = result["systems"][s.name]
        for f in FILTERS:
            lat = sorted(latency[s.name][f])
            r[f"p50_ms_{f}"] = 1000 * statistics.median(lat)
            r[f"p99_ms_{f}"] = 1000 * lat[min(len(lat) - 1, int(0.99 * len(lat)))]
            r[f"recall_{f}"] = float(np.mean(recalls[s.name][f]))
    result["load"] = meter.report()
    result["cpu"] = cpu_model()
    return result


def table(result: dict) -> str:
    headers = ["system", "add (chunks/s)", "open + 1st query (s)", "disk (MB)"]
    for f in FILTERS:
        headers += [f"p50 / p99 ms, filter {f}", f"recall@10 {f}"]
    rows = []
    for name, r in result["systems"].items():
        row = [name, f"{r['add_per_s']:,.0f}", f"{r['open_s']:.2f}", f"{r['disk_bytes'] / 1e6:,.0f}"]
        for f in FILTERS:
            row += [f"{r[f'p50_ms_{f}']:.2f} / {r[f'p99_ms_{f}']:.2f}", f"{r[f'recall_{f}']:.3f}"]
        rows.append(row)
    return markdown_table(headers, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="chunks (default 100,000)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--systems", type=lambda v: v.split(","), default=list(SYSTEMS),
                        help=f"comma-separated subset of {','.join(SYSTEMS)} (default: all)")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument("--workdir", default=None, help="where the stores go (default: a temp dir)")
    args = parser.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="ragcore-bench-collection-")
    try:
        unknown = sorted(set(args.systems) - set(SYSTEMS))
        if unknown:
            raise SystemExit(f"--systems: unknown {', '.join(unknown)}; expected from {', '.join(SYSTEMS)}")
        result = run(args.n, args.queries, workdir, args.systems)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    result["foreign_cores"] = foreign_cores(result["load"])
    print(table(result))
    print(f"\nCPU: {result['cpu']}; other processes and steal: {result['foreign_cores']} cores "
          f"on average during the run")
    if args.out:
        write_json(args.out, result)


if __name__ == "__main__":
    main()
