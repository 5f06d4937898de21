"""The main job: hybrid retrieval on a real corpus, quality and latency side by side.

``ragcore demo`` samples the standard-library documentation corpus
(``ragcore.datasets.stdlib_docs``), chunks it, builds a BM25 and a dense index
over the chunks (the bundled int8 all-MiniLM-L6-v2; embeddings cached on disk),
answers the questions with BM25, dense, hybrid RRF and hybrid + late-interaction
reranking, and prints recall@1/5/10 and MRR@10 against the evidence spans,
nDCG@10 against the documents, the sign test of hybrid against the better single
retriever, and per-stage latency. ``ragcore eval PATH`` runs the same on a
BEIR-format folder (document-level labels: recall and MRR count documents).
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

SYSTEMS = (  # name, mode, rerank
    ("BM25", "sparse", False),
    ("dense", "dense", False),
    ("hybrid RRF", "hybrid", False),
    ("hybrid + rerank", "hybrid", True),
)
SPAN_METRICS = ("recall@1", "recall@5", "recall@10", "mrr@10")
DOC_METRICS = ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10")


def _say(message: str, quiet: bool) -> None:
    if not quiet:
        print(message, file=sys.stderr, flush=True)


def _doc_run(retrieval, qids) -> dict:
    """Chunks to documents: each document ranked where its first chunk is."""
    run = {}
    for qid, chunks in zip(qids, retrieval.chunks):
        docs = list(dict.fromkeys(str(c.doc_id) for c in chunks))
        run[qid] = {doc: float(len(docs) - r) for r, doc in enumerate(docs)}
    return run


def _quality(retrieval, data, qids, positions) -> tuple[dict, dict]:
    """(mean metrics, per-question recall@10) for one system."""
    from ..evaluate import evaluate, evaluate_evidence

    qrels = {q: {str(d): g for d, g in data.qrels[q].items()} for q in qids}
    docs = evaluate(_doc_run(retrieval, qids), qrels, ["ndcg@10"] if data.evidence else DOC_METRICS,
                    ties="as_ranked")
    means = {f"doc {m}" if data.evidence else m: v for m, v in docs.mean.items()}
    if data.evidence:
        gold = [data.evidence[i] for i in positions]
        spans = evaluate_evidence([[c.span for c in row] for row in retrieval.chunks], gold,
                                  SPAN_METRICS)
        means = {**spans.mean, **means}
        per_query = spans.per_query["recall@10"]
    else:
        per_query = docs.per_query["recall@10"]
    return means, np.asarray(per_query, dtype=np.float64)


def _latency(retriever, questions, rerank, n: int) -> dict:
    """p50 / p95 milliseconds per stage, one question at a time."""
    retriever.reranker = rerank
    samples = {}
    for q in questions[:n]:
        for stage, seconds in retriever.retrieve(q, mode="hybrid").timings.items():
            samples.setdefault(stage, []).append(seconds * 1e3)
    total = [sum(v) for v in zip(*samples.values())]
    out = {stage: (float(np.percentile(v, 50)), float(np.percentile(v, 95)))
           for stage, v in samples.items() if max(v) > 0}
    out["total"] = (float(np.percentile(total, 50)), float(np.percentile(total, 95)))
    return out


def run(data, n_questions: int = 300, k0: int = 50, k: int = 10, chunk_size: int = 200,
        overlap: int = 40, rerank_k0: int = 20, latency_queries: int = 100, seed: int = 0,
        quiet: bool = False) -> dict:
    """Builds, answers and evaluates; returns the report (also printed by main)."""
    from ..rag.chunking import Chunker
    from .embedding_cache import EmbeddingCache
    from ..encoders import LateInteractionReranker
    from ..evaluate import compare
    from ..encoders import default_encoder
    from ..rag.pipeline import HybridRetriever

    rng = np.random.default_rng(seed)
    positions = sorted(rng.choice(len(data.questions), min(n_questions, len(data.questions)),
                                  replace=False).tolist())
    questions = [data.questions[i] for i in positions]
    qids = [data.qids[i] for i in positions]
    t0 = time.perf_counter()
    encoder = default_encoder()
    cache = EmbeddingCache(encoder)
    _say(f"chunking {len(data.documents)} documents and encoding the chunks "
         f"({encoder.provider}; cached under {cache.directory})", quiet)
    retriever = HybridRetriever.from_texts(
        data.texts(), doc_ids=[d.doc_id for d in data.documents],
        metadata=[d.metadata for d in data.documents], encoder=encoder,
        chunker=Chunker(encoder, chunk_size=chunk_size, overlap=overlap),
        embed=cache.encode, k0=k0, k=k)
    build_s = time.perf_counter() - t0
    _say(f"{len(retriever.chunks)} chunks indexed in {build_s:.1f} s "
         f"({cache.hits} embeddings from the cache, {cache.misses} computed)", quiet)
    reranker = LateInteractionReranker(encoder)
    quality, per_query = {}, {}
    for name, mode, rerank in SYSTEMS:
        _say(f"answering {len(questions)} questions: {name}", quiet)
        retriever.reranker = reranker if rerank else None
        retriever.k0 = rerank_k0 if rerank else k0
        quality[name], per_query[name] = _quality(retriever.retrieve_batch(questions, mode),
                                                  data, qids, positions)
    retriever.k0 = k0
    single = max(("BM25", "dense"), key=lambda s: per_query[s].mean())
    sign = compare(per_query[single], per_query["hybrid RRF"])
    _say(f"timing {min(latency_queries, len(questions))} single questions", quiet)
    retriever.k0 = rerank_k0
    latency = _latency(retriever, questions, reranker, latency_queries)
    return {
        "dataset": data.name, "documents": len(data.documents), "chunks": len(retriever.chunks),
        "questions": len(questions), "k0": k0, "rerank_k0": rerank_k0, "k": k,
        "chunk_size": chunk_size, "overlap": overlap, "encoder": str(encoder.model.path),
        "provider": encoder.provider, "build_seconds": build_s,
        "embeddings_cached": cache.hits, "embeddings_computed": cache.misses,
        "quality": quality,
        "hybrid_vs_best_single": {"single": single, "metric": "recall@10",
                                  "gained": len(sign.gained), "lost": len(sign.lost),
                                  "tied": sign.tied, "p_value": sign.p_value},
        "latency_ms_p50_p95": latency,
    }


def format_report(report: dict) -> str:
    metrics = list(next(iter(report["quality"].values())))
    lines = [f"{report['dataset']}: {report['documents']} documents, {report['chunks']} chunks, "
             f"{report['questions']} questions; k0 = {report['k0']} (reranker: top "
             f"{report['rerank_k0']}), k = {report['k']}", "",
             "| system | " + " | ".join(metrics) + " |", "|---" + "|---:" * len(metrics) + "|"]
    for name, values in report["quality"].items():
        lines.append(f"| {name} | " + " | ".join(f"{values[m]:.3f}" for m in metrics) + " |")
    s = report["hybrid_vs_best_single"]
    lines += ["", f"hybrid RRF vs {s['single']} ({s['metric']}, per question): {s['gained']} gained, "
              f"{s['lost']} lost, {s['tied']} tied; two-sided sign test p = {s['p_value']:.3g}", "",
              "| stage (hybrid + rerank, one question) | p50 ms | p95 ms |", "|---|---:|---:|"]
    for stage, (p50, p95) in report["latency_ms_p50_p95"].items():
        lines.append(f"| {stage} | {p50:.2f} | {p95:.2f} |")
    return "\n".join(lines) + "\n"


def main(args) -> int:
    from .datasets import load_beir, stdlib_docs

    data = load_beir(args.path, args.split) if getattr(args, "path", None) else \
        stdlib_docs(max_docs=args.docs, seed=args.seed)
    report = run(data, n_questions=args.questions, k0=args.k0, k=args.k,
                 chunk_size=args.chunk_size, overlap=args.overlap, seed=args.seed,
                 latency_queries=args.latency_queries, quiet=args.json)
    print(json.dumps(report, indent=1) if args.json else format_report(report))
    return 0
