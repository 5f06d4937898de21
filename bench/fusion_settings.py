"""Fixed fusion settings and the BM25 analyzer on held-out questions of three corpora, first
stage only (no reranker).

The demo (``ragcore demo`` / ``ragcore eval NAME``) tunes alpha and r0 on a third of the
questions; this script asks what one fixed default would give on the held-out rest of each
built-in corpus (stdlib_docs, debian_packages, man_pages), with the same split, chunking,
indexes and metrics: BM25 alone, dense alone, RRF at several r0 and convex at several alpha
with each normalisation, each with the BM25 index built without stemming (today's default) and
with Snowball's English stemmer (PyStemmer); stopwords "en" in both. A setting "loses" on a
corpus when one of recall@10, MRR@10 and nDCG@10 is below the better of BM25 and dense alone
(with the same analyzer). Embeddings come from the demo's cache (~/.cache/ragcore), so a
second run only re-encodes the questions.

    .venv/bin/python bench/fusion_settings.py > bench/results/fusion_settings.md  (BENCHMARKS.md,
    "Fusion and analyzer defaults", holds the last run)

man_pages: a seeded sample of --man-docs pages, leaving out the pages matching --man-exclude
(default gcloud*: Google Cloud's CLI installs some 16,600 generated pages, five in six of this
machine's pages, which would make the sample a gcloud corpus).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import shlex
import subprocess
import sys

import numpy as np

from ragcore.cli.datasets import debian_packages, man_pages, stdlib_docs
from ragcore.cli.demo_hybrid import evaluate_system, split_questions
from ragcore.cli.embedding_cache import EmbeddingCache
from ragcore.encoders import default_encoder
from ragcore.evaluate import compare
from ragcore.rag import fusion
from ragcore.rag.chunking import Chunker
from ragcore.rag.defaults import DEFAULT_FUSION
from ragcore.rag.pipeline import HybridRetriever
from ragcore.sparse.bm25 import BM25Index

SETTINGS = [("RRF r0 = 60", fusion.FusionSetting("rrf", r0=60)),
            ("RRF r0 = 10", fusion.FusionSetting("rrf", r0=10)),
            ("RRF r0 = 2", fusion.FusionSetting("rrf", r0=2))] + [
    (f"convex {norm} alpha = {a:g}", fusion.FusionSetting("convex", alpha=a, norm=norm))
    for norm in ("theoretical", "minmax", "zscore") for a in (0.5, 0.7, 0.8, 0.9)]
ANALYZERS = (("no stemming", None), ("english stemming", "english"))
SINGLES = ("BM25", "dense")
PAIRED = ("recall@10", "mrr@10")


def corpora(args) -> list:
    """(loader, number of questions drawn before the split) per corpus."""
    return [(lambda: stdlib_docs(max_docs=3000, seed=0), 300),
            (lambda: debian_packages(), 600),
            (lambda: man_pages(max_docs=args.man_docs, seed=0, exclude=tuple(args.man_exclude)),
             args.man_questions)]


def held_out(data, n_questions: int, seed: int, k0: int, encoder):
    rng = np.random.default_rng(seed)
    positions = sorted(rng.choice(len(data.questions), min(n_questions, len(data.questions)),
                                  replace=False).tolist())
    _, held_at = split_questions(len(positions), seed)
    held = [positions[i] for i in held_at]
    retriever = HybridRetriever.from_texts(
        data.texts(), doc_ids=[d.doc_id for d in data.documents],
        metadata=[d.metadata for d in data.documents], encoder=encoder,
        chunker=Chunker(encoder, chunk_size=200, overlap=40),
        embed=EmbeddingCache(encoder, show_progress=False).encode, k0=k0, k=10)
    return retriever, [data.questions[i] for i in held], [data.qids[i] for i in held], held


def with_analyzer(retriever, stemmer) -> HybridRetriever:
    """The same chunks and dense index, the BM25 index built with this stemmer (stopwords as
    BM25Index's default)."""
    bm25 = BM25Index(stemmer=stemmer)
    bm25.index([c.text for c in retriever.chunks])
    return HybridRetriever(retriever.encoder, retriever.dense_index, bm25, retriever.chunks,
                           k0=retriever.k0, k=retriever.k)


def summary_metrics(rows: dict) -> tuple:
    ndcg = "doc ndcg@10" if "doc ndcg@10" in rows["dense"] else "ndcg@10"
    return ("recall@10", "mrr@10", ndcg)


def evaluate_corpus(data, n: int, args, encoder) -> dict:
    """{analyzer: (rows {system: means}, per {system: per-question PAIRED})} and the sizes."""
    base, questions, qids, held = held_out(data, n, args.seed, args.k0, encoder)
    dense = evaluate_system(base.retrieve_batch(questions, "dense"), data, qids, held)
    out = {}
    for label, stemmer in ANALYZERS:
        retriever = with_analyzer(base, stemmer)
        rows, per = {}, {}
        rows["BM25"], per["BM25"] = evaluate_system(retriever.retrieve_batch(questions, "sparse"),
                                                    data, qids, held)
        rows["dense"], per["dense"] = dense
        for name, setting in SETTINGS:
            retriever.fusion = setting
            rows[name], per[name] = evaluate_system(retriever.retrieve_batch(questions, "hybrid"),
                                                    data, qids, held)
        out[label] = (rows, per)
    sizes = {"documents": len(data.documents), "chunks": len(base.chunks),
             "questions": len(data.questions), "held": len(questions)}
    return out, sizes


def better_single(rows: dict, metric: str) -> str:
    return max(SINGLES, key=lambda s: rows[s][metric])


def worst_margin(rows: dict, name: str) -> tuple:
    """(smallest of hybrid - better single over the summary metrics, that metric)."""
    margins = {m: rows[name][m] - rows[better_single(rows, m)][m] for m in summary_metrics(rows)}
    metric = min(margins, key=margins.get)
    return margins[metric], metric


def print_corpus(name: str, sizes: dict, results: dict, k0: int) -> None:
    print(f"\n## {name}\n\n{sizes['documents']} documents ({sizes['chunks']} chunks), "
          f"{sizes['questions']} questions, {sizes['held']} held out, k0 = {k0}, no reranker\n")
    for label, (rows, per) in results.items():
        metrics = list(rows["dense"])
        best = {m: better_single(rows, m) for m in PAIRED}
        print(f"\n### {name}, BM25 with {label}\n")
        print("| system | " + " | ".join(metrics) + " | vs better single: " +
              " | ".join(f"{m} ({best[m]}) gained/lost, p" for m in PAIRED) + " |")
        print("|---" + "|---:" * len(metrics) + "|---" * len(PAIRED) + "|")
        for system, values in rows.items():
            tests = []
            for m in PAIRED:
                if system == best[m]:
                    tests.append("-")
                    continue
                c = compare(per[best[m]][m], per[system][m])
                tests.append(f"{len(c.gained)}/{len(c.lost)}, p = {c.p_value:.2g}")
            print(f"| {system} | " + " | ".join(f"{values[m]:.3f}" for m in metrics) + " | " +
                  " | ".join(tests) + " |", flush=True)


def print_fusion_summary(all_results: dict) -> None:
    print("\n## Fusion: hybrid minus the better single retriever, worst of recall@10, MRR@10 "
          "and nDCG@10\n")
    print("Each cell: the smallest difference (hybrid - max(BM25, dense)) over the three metrics, "
          "and which metric; negative = loses to the better single retriever there.\n")
    columns = [(c, a) for c in all_results for a, _ in ANALYZERS]
    print("| fusion | " + " | ".join(f"{c} ({'stem' if 'english' in a else 'no stem'})"
                                     for c, a in columns) + " | corpora lost (no stem / stem) |")
    print("|---" + "|---:" * len(columns) + "|---:|")
    for name, _ in SETTINGS:
        cells, lost = [], {a: 0 for a, _ in ANALYZERS}
        for corpus, analyzer in columns:
            margin, metric = worst_margin(all_results[corpus][analyzer][0], name)
            lost[analyzer] += margin < -1e-9  # below, not a tie
            cells.append(f"{margin:+.3f} ({metric.replace('doc ', '')})")
        print(f"| {name} | " + " | ".join(cells) + f" | {' / '.join(map(str, lost.values()))} |")


def print_overall(all_results: dict) -> None:
    print("\n## Every setting over the corpora: means, worst margin, and against RRF r0 = 2\n")
    print("Means of recall@10, MRR@10 and nDCG@10 over the corpora; the worst margin over the "
          "better single retriever (as above); sign tests against RRF r0 = 2 (today's default) "
          "with the same analyzer, MRR@10 question by question, per corpus (gained/lost).\n")
    corpora = list(all_results)
    print("| analyzer | system | recall@10 | MRR@10 | nDCG@10 | worst margin | " +
          " | ".join(f"MRR@10 vs RRF 2, {c}" for c in corpora) + " |")
    print("|---|---|---:|---:|---:|---:|" + "---|" * len(corpora))
    for analyzer, _ in ANALYZERS:
        for system in ["BM25", "dense"] + [n for n, _ in SETTINGS]:
            rows = [all_results[c][analyzer][0] for c in corpora]
            means = [np.mean([r[system][summary_metrics(r)[i]] for r in rows]) for i in range(3)]
            worst = ("" if system in SINGLES else
                     f"{min(worst_margin(r, system)[0] for r in rows):+.3f}")
            tests = []
            for c in corpora:
                per = all_results[c][analyzer][1]
                if system == "RRF r0 = 2":
                    tests.append("-")
                    continue
                t = compare(per["RRF r0 = 2"]["mrr@10"], per[system]["mrr@10"])
                tests.append(f"{len(t.gained)}/{len(t.lost)}, p = {t.p_value:.2g}")
            print(f"| {analyzer} | {system} | " + " | ".join(f"{v:.3f}" for v in means) +
                  f" | {worst} | " + " | ".join(tests) + " |", flush=True)


def print_analyzer_summary(all_results: dict) -> None:
    print("\n## Analyzer: BM25 index without and with English stemming\n")
    print("Per corpus: each metric without / with stemming; sign tests of stemming against no "
          "stemming, question by question (gained/lost, p).\n")
    systems = ["BM25"] + [n for n, _ in SETTINGS if n.startswith("RRF")] + [
        "convex minmax alpha = 0.7", "convex zscore alpha = 0.7"]
    print("| corpus | system | recall@10 | MRR@10 | nDCG@10 | recall@10 stem vs not | "
          "MRR@10 stem vs not |")
    print("|---|---|---:|---:|---:|---|---|")
    (plain, _), (stem, _) = ANALYZERS
    for corpus, results in all_results.items():
        rows0, per0 = results[plain]
        rows1, per1 = results[stem]
        for system in systems:
            cells = [f"{rows0[system][m]:.3f} / {rows1[system][m]:.3f}"
                     for m in summary_metrics(rows0)]
            tests = []
            for m in PAIRED:
                c = compare(per0[system][m], per1[system][m])
                tests.append(f"{len(c.gained)}/{len(c.lost)}, p = {c.p_value:.2g}")
            print(f"| {corpus} | {system} | " + " | ".join(cells + tests) + " |", flush=True)


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return platform.processor() or "unknown"
    return next((line.split(":", 1)[1].strip() for line in out.splitlines()
                 if line.startswith("Model name")), "unknown")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--k0", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0,
                        help="the draw of questions and their tuning / held-out split")
    parser.add_argument("--precision", default="fp32",
                        help="encoders.default_encoder's precision (the demo's default, fp32; "
                             "it falls back to int8-bundled where fp32 cannot be derived)")
    parser.add_argument("--man-docs", type=int, default=1000,
                        help="man_pages: pages in the seeded sample")
    parser.add_argument("--man-questions", type=int, default=1000,
                        help="man_pages: questions drawn before the tuning / held-out split")
    parser.add_argument("--man-exclude", nargs="*", default=["gcloud*"],
                        help="man_pages: glob patterns of page files left out")
    parser.add_argument("--corpora", nargs="*", default=["stdlib_docs", "debian_packages",
                                                          "man_pages"])
    args = parser.parse_args()
    encoder = default_encoder(args.precision)
    print("# Fusion and BM25 analyzer on held-out questions of three corpora\n")
    print(f"- command: `PYTHONPATH=src {shlex.join([sys.executable] + sys.argv)}`")
    print(f"- date: {datetime.date.today().isoformat()}; CPU: {cpu_model()}; "
          f"Python {platform.python_version()}")
    print(f"- encoder: {encoder.model.path} (precision {args.precision}, {encoder.provider}); "
          f"chunks of 200 tokens, overlap 40; k0 = {args.k0}; k = 10; no reranker")
    print(f"- HybridRetriever's DEFAULT_FUSION today: {DEFAULT_FUSION}")
    print(f"- corpora: stdlib_docs (3000 documents sampled, seed 0), debian_packages (all), "
          f"man_pages ({args.man_docs} pages sampled, seed 0, leaving out "
          f"{', '.join(args.man_exclude) or 'none'}); stemming: BM25Index(stemmer='english'), "
          "Snowball via PyStemmer; stopwords 'en' in both")
    print(f"- questions: a seeded draw per corpus, split by `demo_hybrid.split_questions` "
          f"(seed {args.seed}) into a tuning third (unused here) and the held-out rest reported below; stdlib_docs "
          "metrics recall/MRR count evidence spans, nDCG documents; the others count documents")
    all_results = {}
    for (load, n), name in zip(corpora(args), ("stdlib_docs", "debian_packages", "man_pages")):
        if name not in args.corpora:
            continue
        try:
            data = load()
        except (FileNotFoundError, ValueError) as err:
            print(f"\n## {name}\n\nskipped: {err}")
            continue
        results, sizes = evaluate_corpus(data, n, args, encoder)
        print_corpus(name, sizes, results, args.k0)
        all_results[name] = results
    if all_results:
        print_fusion_summary(all_results)
        print_overall(all_results)
        print_analyzer_summary(all_results)


if __name__ == "__main__":
    main()
