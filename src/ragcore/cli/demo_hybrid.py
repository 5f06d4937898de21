"""The main job: hybrid retrieval on a real corpus, quality and latency side by side.

``ragcore demo`` samples the standard-library documentation corpus
(``ragcore.datasets.stdlib_docs``), chunks it, builds a BM25 and a dense index
over the chunks (``encoders.default_encoder`` at ``--precision``: the fused fp32
all-MiniLM-L6-v2, or the bundled int8 file where that cannot be derived;
embeddings cached on disk), and splits the questions once, by the seed, into a tuning third and a
held-out rest. On the tuning third ``fusion.tune`` searches RRF's r0 and convex
fusion's alpha with each normalisation (theoretical min-max, min-max, z-score)
together, 5-fold cross-validated, and keeps the setting whose smaller gain, on
document recall@10 and on MRR@10 (the two metrics of the target), over the better
of dense and BM25 alone is largest. On the held-out questions it answers with
BM25, dense, hybrid RRF (r0 = 60), HybridRetriever's default fusion and the tuned
hybrid, each also reranked (late interaction over the top rerank_k0), and prints
recall@1/5/10 and MRR@10 against the evidence spans, nDCG@10 against the
documents, sign tests of the tuned hybrid against dense, BM25 and RRF, and
per-stage latency. ``ragcore eval PATH`` runs the same on a BEIR-format folder
or a built-in corpus by name (``debian_packages``, ``man_pages``; document-level labels: recall
and MRR count documents).
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

SPAN_METRICS = ("recall@1", "recall@5", "recall@10", "mrr@10")
DOC_METRICS = ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10")
PAIRED = ("recall@10", "mrr@10")   # the metrics of the sign tests
# The target asks the tuned hybrid to match the better single retriever on recall@10 AND
# MRR@10, so the criterion is the smaller of its two gains over the better list alone (a mean
# of the two would accept a recall loss bought with an MRR gain, and on these corpora it did).
TUNE_METRIC = ("recall@10", "mrr@10")
TUNE_CRITERION = "worst_gain"
TUNE_METHODS = ("rrf", "convex")
TUNE_NORMS = ("theoretical", "minmax", "zscore")  # convex: each with every alpha of the grid
TUNED = "hybrid (tuned)"
RRF60 = "hybrid RRF (r0 = 60)"


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


def evaluate_system(retrieval, data, qids, positions) -> tuple[dict, dict]:
    """(mean metrics, per-question values of PAIRED) for one system."""
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
        per_query = spans.per_query
    else:
        per_query = docs.per_query
    return means, {m: np.asarray(per_query[m], dtype=np.float64) for m in PAIRED}


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


def split_questions(n: int, seed: int) -> tuple:
    """Positions of the tuning third and of the held-out rest, chosen once by the seed."""
    if n < 3:
        raise ValueError(f"the demo needs at least 3 questions (tuning and held-out), got {n}")
    order = np.random.default_rng(seed).permutation(n)
    n_tune = max(2, n // 3)
    return np.sort(order[:n_tune]), np.sort(order[n_tune:])


def _tune(retriever, questions, qids, data, seed: int):
    """fusion.tune of RRF's r0 and convex alpha x norm together, on the tuning questions'
    first-stage candidates."""
    from ..rag import fusion

    candidates = [retriever.retrieve_batch(questions, m).candidates for m in ("dense", "sparse")]
    qrels = {q: {str(d): g for d, g in data.qrels[q].items()} for q in qids}
    docids = [str(c.doc_id) for c in retriever.chunks]
    return fusion.tune(candidates, qrels, TUNE_METRIC, method=TUNE_METHODS,
                       folds=min(5, len(qids)), seed=seed, qids=qids, docids=docids,
                       norm=TUNE_NORMS, criterion=TUNE_CRITERION)


def _systems(tuned) -> list:
    """(name, mode, fusion setting or None, rerank) of every system reported."""
    from ..rag.fusion import FusionSetting
    from ..rag.defaults import DEFAULT_FUSION

    first = [("BM25", "sparse", None), ("dense", "dense", None),
             (RRF60, "hybrid", FusionSetting("rrf", r0=60)),
             (f"hybrid default ({DEFAULT_FUSION.describe()})", "hybrid", DEFAULT_FUSION),
             (TUNED, "hybrid", tuned.setting)]
    return [(name, mode, setting, False) for name, mode, setting in first] + \
           [(f"{name} + rerank", mode, setting, True) for name, mode, setting in first]


def _sign_tests(per_query: dict) -> list:
    """The tuned hybrid against dense, BM25 and RRF (also each reranked), per question."""
    from ..evaluate import compare

    out = []
    for suffix in ("", " + rerank"):
        for other in ("dense", "BM25", RRF60):
            a, b = other + suffix, TUNED + suffix
            for metric in PAIRED:
                c = compare(per_query[a][metric], per_query[b][metric])
                out.append({"system": b, "against": a, "metric": metric, "gained": len(c.gained),
                            "lost": len(c.lost), "tied": c.tied, "p_value": c.p_value})
    return out


def _tuning_report(t) -> dict:
    return {"setting": t.setting.describe(), "method": t.setting.method, "value": t.value,
            "fold_settings": [f.describe() for f in t.fold_settings], "metric": t.label,
            "queries": len(t.qids), "folds": len(t.folds), "settings_searched": len(t.settings),
            "cv_score": t.cv_score, "fold_scores": t.fold_scores.tolist(),
            "best_score": float(t.mean_by_value.max()), "spread": t.spread}


def run(data, n_questions: int = 300, k0: int = 50, k: int = 10, chunk_size: int = 200,
        overlap: int = 40, rerank_k0: int = 20, latency_queries: int = 100, seed: int = 0,
        quiet: bool = False, precision: str = "fp32") -> dict:
    """Builds, tunes on a third of the questions, evaluates on the rest; returns the report."""
    from ..rag.chunking import Chunker
    from .embedding_cache import EmbeddingCache
    from ..encoders import LateInteractionReranker
    from ..encoders import default_encoder
    from ..rag.pipeline import HybridRetriever

    rng = np.random.default_rng(seed)
    positions = sorted(rng.choice(len(data.questions), min(n_questions, len(data.questions)),
                                  replace=False).tolist())
    tune_at, held_at = split_questions(len(positions), seed)
    tune_pos = [positions[i] for i in tune_at]
    held_pos = [positions[i] for i in held_at]
    t0 = time.perf_counter()
    encoder = default_encoder(precision)
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
    _say(f"tuning RRF r0 and convex alpha x normalisation on {len(tune_pos)} questions", quiet)
    tuned = _tune(retriever, [data.questions[i] for i in tune_pos],
                  [data.qids[i] for i in tune_pos], data, seed)
    _say(tuned.summary(), quiet)
    questions = [data.questions[i] for i in held_pos]
    qids = [data.qids[i] for i in held_pos]
    reranker = LateInteractionReranker(encoder)
    quality, per_query = {}, {}
    for name, mode, setting, rerank in _systems(tuned):
        _say(f"answering {len(questions)} held-out questions: {name}", quiet)
        retriever.reranker = reranker if rerank else None
        retriever.k0 = rerank_k0 if rerank else k0
        if setting is not None:
            retriever.fusion = setting
        quality[name], per_query[name] = evaluate_system(
            retriever.retrieve_batch(questions, mode), data, qids, held_pos)
    _say(f"timing {min(latency_queries, len(questions))} single questions", quiet)
    retriever.k0, retriever.fusion = rerank_k0, tuned.setting
    latency = _latency(retriever, questions, reranker, latency_queries)
    return {
        "dataset": data.name, "documents": len(data.documents), "chunks": len(retriever.chunks),
        "questions": len(positions), "tuning_questions": len(tune_pos),
        "held_out_questions": len(held_pos), "tuning_qids": [data.qids[i] for i in tune_pos],
        "held_out_qids": qids, "k0": k0, "rerank_k0": rerank_k0, "k": k,
        "chunk_size": chunk_size, "overlap": overlap, "encoder": str(encoder.model.path),
        "precision": precision,
        "provider": encoder.provider, "build_seconds": build_s,
        "embeddings_cached": cache.hits, "embeddings_computed": cache.misses,
        "tuning": _tuning_report(tuned),
        "quality": quality,
        "sign_tests": _sign_tests(per_query),
        "latency_ms_p50_p95": latency,
    }


def format_report(report: dict) -> str:
    """The report as tables, then a legend of every column and a summary of the numbers."""
    from .demo_explain import legend, summary

    metrics = list(next(iter(report["quality"].values())))
    tc = report["tuning"]
    lines = [f"{report['dataset']}: {report['documents']} documents, {report['chunks']} chunks, "
             f"{report['questions']} questions: {report['tuning_questions']} to tune, "
             f"{report['held_out_questions']} held out; k0 = {report['k0']} (reranker: top "
             f"{report['rerank_k0']}), k = {report['k']}", "",
             f"tuned on {tc['queries']} questions ({tc['metric']}, {tc['folds']}-fold "
             f"cross-validation over {tc['settings_searched']} settings of RRF and convex): "
             f"{tc['setting']} (folds chose {', '.join(tc['fold_settings'])}; held-out "
             f"{tc['metric']} {tc['cv_score']:.3f}, fold std {np.std(tc['fold_scores']):.3f})",
             "",
             f"held-out questions ({report['held_out_questions']}):", "",
             "| system | " + " | ".join(metrics) + " |", "|---" + "|---:" * len(metrics) + "|"]
    for name, values in report["quality"].items():
        lines.append(f"| {name} | " + " | ".join(f"{values[m]:.3f}" for m in metrics) + " |")
    lines += ["", "| per question | metric | gained | lost | tied | sign test p |",
              "|---|---|---:|---:|---:|---:|"]
    for s in report["sign_tests"]:
        lines.append(f"| {s['system']} vs {s['against']} | {s['metric']} | {s['gained']} | "
                     f"{s['lost']} | {s['tied']} | {s['p_value']:.3g} |")
    lines += ["", f"latency of {TUNED} + rerank, one question at a time:", "",
              "| stage | p50 ms | p95 ms |", "|---|---:|---:|"]
    for stage, (p50, p95) in report["latency_ms_p50_p95"].items():
        lines.append(f"| {stage} | {p50:.2f} | {p95:.2f} |")
    lines += ["", *legend(report, metrics, TUNED), "", *summary(report, metrics, TUNED)]
    return "\n".join(lines) + "\n"


def main(args) -> int:
    from .datasets import load, stdlib_docs

    data = load(args.path, args.split, max_docs=args.docs, seed=args.seed) \
        if getattr(args, "path", None) else stdlib_docs(max_docs=args.docs, seed=args.seed)
    report = run(data, n_questions=args.questions, k0=args.k0, k=args.k,
                 chunk_size=args.chunk_size, overlap=args.overlap, seed=args.seed,
                 latency_queries=args.latency_queries, quiet=args.json,
                 precision=getattr(args, "precision", "fp32"))
    print(json.dumps(report, indent=1) if args.json else format_report(report))
    return 0
