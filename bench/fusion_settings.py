"""Fixed fusion settings on the demo's held-out questions, first stage only (no reranker).

The demo (``ragcore demo`` / ``ragcore eval debian_packages``) tunes alpha and r0 on a third of
the questions; this script asks what a fixed default would give on the held-out rest of both
corpora, with the same split, indexes and metrics: RRF at several r0, convex at several alpha
with each normalisation. Embeddings come from the demo's cache, so run the demo first.

    .venv/bin/python bench/fusion_settings.py > bench/results/fusion_settings.md
"""

from __future__ import annotations

import argparse

import numpy as np

from ragcore.cli.datasets import debian_packages, stdlib_docs
from ragcore.cli.demo_hybrid import evaluate_system, split_questions
from ragcore.cli.embedding_cache import EmbeddingCache
from ragcore.encoders import default_encoder
from ragcore.evaluate import compare
from ragcore.rag import fusion
from ragcore.rag.chunking import Chunker
from ragcore.rag.pipeline import HybridRetriever

SETTINGS = [("RRF r0 = 60", fusion.FusionSetting("rrf", r0=60)),
            ("RRF r0 = 10", fusion.FusionSetting("rrf", r0=10)),
            ("RRF r0 = 2", fusion.FusionSetting("rrf", r0=2))] + [
    (f"convex {norm} alpha = {a:g}", fusion.FusionSetting("convex", alpha=a, norm=norm))
    for norm in ("theoretical", "minmax", "zscore") for a in (0.5, 0.7, 0.8, 0.9)]


def held_out(data, n_questions: int, seed: int, k0: int, precision: str):
    rng = np.random.default_rng(seed)
    positions = sorted(rng.choice(len(data.questions), min(n_questions, len(data.questions)),
                                  replace=False).tolist())
    _, held_at = split_questions(len(positions), seed)
    held = [positions[i] for i in held_at]
    encoder = default_encoder(precision)
    retriever = HybridRetriever.from_texts(
        data.texts(), doc_ids=[d.doc_id for d in data.documents],
        metadata=[d.metadata for d in data.documents], encoder=encoder,
        chunker=Chunker(encoder, chunk_size=200, overlap=40),
        embed=EmbeddingCache(encoder, show_progress=False).encode, k0=k0, k=10)
    return retriever, [data.questions[i] for i in held], [data.qids[i] for i in held], held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--k0", type=int, default=50)
    parser.add_argument("--precision", default="fp32",
                        help="encoders.default_encoder's precision; int8-bundled is what "
                             "`make demo` gets without torch")
    args = parser.parse_args()
    for data, n in ((stdlib_docs(max_docs=3000, seed=0), 300), (debian_packages(), 600)):
        retriever, questions, qids, held = held_out(data, n, 0, args.k0, args.precision)
        rows, per = {}, {}
        for name, mode in (("BM25", "sparse"), ("dense", "dense")):
            rows[name], per[name] = evaluate_system(retriever.retrieve_batch(questions, mode),
                                                    data, qids, held)
        for name, setting in SETTINGS:
            retriever.fusion = setting
            rows[name], per[name] = evaluate_system(retriever.retrieve_batch(questions, "hybrid"),
                                             data, qids, held)
        metrics = list(rows["dense"])
        print(f"\n{data.name}: {len(questions)} held-out questions, k0 = {args.k0}, no reranker\n")
        print("| fusion | " + " | ".join(metrics) + " | recall@10 vs RRF 60 (gained/lost, p) |")
        print("|---" + "|---:" * len(metrics) + "|---|")
        for name, values in rows.items():
            c = compare(per["RRF r0 = 60"]["recall@10"], per[name]["recall@10"])
            print(f"| {name} | " + " | ".join(f"{values[m]:.3f}" for m in metrics) +
                  f" | {len(c.gained)}/{len(c.lost)}, p = {c.p_value:.2g} |", flush=True)


if __name__ == "__main__":
    main()
