"""Ingest and query latency with the model in the loop. Ingest: whole documents into an
embedded store on disk, encoding included, on every core: ragcore's Collection.add with its
defaults (chunker of 200 tokens with 40 of overlap, the bundled all-MiniLM-L6-v2 at its
default precision; and at fp32) against the pipeline a user would write instead,
sentence-transformers encode (the same weights, torch fp32, batch 32) of the same passages
(ragcore's chunks, chunking not timed) then Chroma's add. Each round adds every document to a
fresh store of each system in turn; the best round (wall clock) is kept, with the CPU time of
its process (every thread) per chunk: on a shared machine the wall clock also measures how
each library's threads fare under contention. Queries: one short query (a man
page's one-line description) encoded alone on one thread, p50 over the queries, the encoders
in turn per query (fastest: the least disturbed call on a shared machine); and ragcore's
hybrid search (BM25 + dense, fused, k = 10, the bundled
encoder on every core) on a Collection of stdlib docstring paragraphs, p50 end to end.
Documents: a seeded sample of this machine's man pages (ragcore.cli.datasets.man_pages)."""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

from peers import adapters, distributions
from results_file import table, write_section

EXCLUDE = ("gcloud*",)  # thousands of near-identical generated pages


def passages_of(documents, encoder) -> list[list[str]]:
    """Each document's chunks, as the Collection's default chunker cuts them."""
    from ragcore.rag.chunking import Chunker

    chunker = Chunker(encoder, 200, 40)
    return [[c.text for c in chunker.chunk(d)] for d in documents]


def ingest_rows(documents, passages, threads, rounds) -> list[dict]:
    classes, _ = adapters("ingest")
    n_chunks = sum(len(p) for p in passages)
    best = {}
    with tempfile.TemporaryDirectory() as root:
        for r in range(rounds):
            for i, cls in enumerate(classes):
                path = os.path.join(root, f"r{r}_{i}")
                system = cls(path, threads)
                start, cpu = time.perf_counter(), time.process_time()
                system.add(documents, passages)
                elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
                system.close()
                if elapsed < best.get(cls.name, (float("inf"), 0))[0]:
                    best[cls.name] = (elapsed, cpu)
    return [{"peer": name, "seconds": s, "chunks_s": n_chunks / s,
             "docs_s": len(documents) / s, "cpu_ms": 1e3 * cpu / n_chunks}
            for name, (s, cpu) in best.items()]


def p50_ms(samples) -> float:
    return 1e3 * float(np.percentile(samples, 50))


def query_rows(queries, hybrid_n) -> list[dict]:
    """p50 ms of one query encoded alone on one thread per encoder, and of ragcore's
    hybrid search on a collection of hybrid_n paragraphs."""
    from ragcore.cli.bench.stdlib_vectors import stdlib_paragraphs
    from ragcore.cli.embedding_cache import EmbeddingCache
    from ragcore.encoders.defaults import default_encoder
    from ragcore.rag.collection import Collection

    encoders = {"ragcore BiEncoder (default)": default_encoder(threads=1).encode,
                "ragcore BiEncoder fp32": default_encoder("fp32", threads=1).encode}
    classes, _ = adapters("encode")
    for cls in classes:
        if not cls.name.startswith("ragcore"):
            encoders[cls.name] = lambda texts, peer=cls(1): peer.encode(texts, 1)
    for encode in encoders.values():
        encode(queries[:3])  # warm-up
    lat = {name: [] for name in encoders}
    for q in queries:
        for name, encode in encoders.items():
            start = time.perf_counter()
            encode([q])
            lat[name].append(time.perf_counter() - start)
    rows = [{"peer": name, "what": "encode 1 query, 1 thread", "p50_ms": p50_ms(v),
             "min_ms": 1e3 * min(v)} for name, v in lat.items()]

    pool = stdlib_paragraphs()
    pick = np.random.default_rng(0).choice(len(pool), min(hybrid_n, len(pool)), replace=False)
    texts = [pool[i] for i in sorted(pick)]
    encoder = default_encoder()
    vectors = EmbeddingCache(encoder, show_progress=False).encode(texts)
    with tempfile.TemporaryDirectory() as root:
        with Collection.create(os.path.join(root, "c"), encoder=encoder, chunker="none") as col:
            col.add(texts, ids=list(range(len(texts))), embeddings=vectors)
            for q in queries[:3]:
                col.search(q, k=10)
            samples = []
            for q in queries:
                start = time.perf_counter()
                col.search(q, k=10, mode="hybrid")
                samples.append(time.perf_counter() - start)
    rows.append({"peer": "ragcore Collection (default)",
                 "what": f"hybrid query, {len(texts):,} chunks, end to end",
                 "p50_ms": p50_ms(samples), "min_ms": 1e3 * min(samples)})
    return rows


def run(grid, out_dir, command, limits):
    from ragcore.cli.datasets import man_pages
    from ragcore.encoders.defaults import default_encoder

    threads = grid["threads"] or os.cpu_count() or 1
    corpus = man_pages(max_docs=grid["docs"], seed=0, exclude=EXCLUDE)
    documents = [d.text for d in corpus.documents]
    passages = passages_of(documents, default_encoder("fp32"))
    n_chunks = sum(len(p) for p in passages)
    rows = ingest_rows(documents, passages, threads, grid["rounds"])
    # short queries: one-line descriptions of other man pages than the ingested ones
    asked = man_pages(max_docs=3 * grid["queries"], seed=1, exclude=EXCLUDE).questions
    queries = asked[:grid["queries"]]
    qrows = query_rows(queries, grid["hybrid_n"])

    peer = next((r for r in rows if not r["peer"].startswith("ragcore")), None)
    for r in rows:
        r["ratio"] = r["chunks_s"] / peer["chunks_s"] if peer else None
        r["cpu_ratio"] = peer["cpu_ms"] / r["cpu_ms"] if peer else None
    summary = []
    me = next((r for r in rows if r["peer"] == "ragcore Collection"), None)
    if me and peer:
        summary.append({"row": f"ingest, {n_chunks:,} man-page chunks, {threads} threads",
                        "measure": "chunks/s", "ragcore": me["chunks_s"],
                        "best_peer": peer["peer"], "best_peer_value": peer["chunks_s"],
                        "format": ",.1f"})
    encode_peer = next((r for r in qrows if not r["peer"].startswith("ragcore")), None)
    mine = qrows[0]
    if encode_peer:
        summary.append({"row": "encode 1 short query, 1 thread", "measure": "p50 ms",
                        "ragcore": mine["p50_ms"], "best_peer": encode_peer["peer"],
                        "best_peer_value": encode_peer["p50_ms"], "higher_is_better": False,
                        "format": ".2f"})
    columns = [{"key": "peer", "label": "pipeline"},
               {"key": "chunks_s", "label": "chunks/s", "format": ",.1f"},
               {"key": "docs_s", "label": "documents/s", "format": ",.2f"},
               {"key": "seconds", "label": "seconds", "format": ",.1f"},
               {"key": "ratio", "label": "x peer", "format": ".2f"},
               {"key": "cpu_ms", "label": "CPU ms per chunk", "format": ",.1f"},
               {"key": "cpu_ratio", "label": "x peer, CPU", "format": ".2f"}]
    qcolumns = [{"key": "peer", "label": "system"}, {"key": "what", "label": "measure"},
                {"key": "p50_ms", "label": "p50 ms", "format": ".2f"},
                {"key": "min_ms", "label": "fastest ms", "format": ".2f"}]
    _, missing = adapters("ingest")
    notes = [f"Not installed here: {', '.join(missing)}."] if missing else []
    notes.append("Share of limit: not given; ingest is bound by the encoder (the encode "
                 "task gives its share of the arithmetic peak).")
    lengths = [len(p) for p in passages]
    return write_section(
        "ingest", "Ingest and query latency", command, threads=threads, order=45,
        intro=(f"{len(documents)} man pages, {n_chunks:,} chunks (median {np.median(lengths):.0f} "
               f"per page), {grid['rounds']} round(s), {len(queries)} queries. "
               + " ".join(__doc__.split())),
        tables=[table(f"Ingest, {threads} threads", columns, rows, notes),
                table("Query latency", qcolumns, qrows, [])],
        peers=distributions("ingest"), summary=summary, limits=limits, out_dir=out_dir)
