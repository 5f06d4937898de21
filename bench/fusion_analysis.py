"""Why the tuned hybrid wins or loses against dense, and whether the candidate depth matters.

For each corpus (the demo's split, indexes and metrics; ``--precision`` picks the encoder), this
script takes each retriever's top 200 once, for the tuning third and the held-out rest, and:

1. depth: for a candidate depth d (the k0 of each retriever) in DEPTHS, tunes RRF r0 and convex
   alpha x normalisation together on the tuning third (``fusion.tune``, the demo's criterion and
   5 folds) and prints the cross-validated score; the depth with the best cross-validated score
   is the one chosen (on the tuning third only). The held-out recall@10 / MRR@10 of every depth
   are printed beside it, as an exploration: the choice never reads them.
2. the criterion: at depth 50, the demo's ("worst_gain": the setting whose smaller gain over
   the better list alone, on recall@10 and on MRR@10, is largest) against "mean" (the mean of
   recall@10 and MRR@10), each chosen on the tuning third with the same cross-validation and
   reported on the held-out rest.
3. per question, at the demo's depth 50: for the held-out questions where the tuned hybrid and
   dense differ on recall@10, the rank of the relevant document in dense, in BM25 (">d": not in
   its top d) and in the fused list.

Embeddings come from the demo's cache, so run the demo with the same precision first.

    .venv/bin/python bench/fusion_analysis.py --precision int8-bundled
"""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import numpy as np

from ragcore.cli.datasets import debian_packages, stdlib_docs
from ragcore.cli.demo_hybrid import (TUNE_CRITERION, TUNE_METHODS, TUNE_METRIC, TUNE_NORMS,
                                     evaluate_system, split_questions)
from ragcore.cli.embedding_cache import EmbeddingCache
from ragcore.encoders import default_encoder
from ragcore.evaluate import compare
from ragcore.hits import Hits
from ragcore.rag import fusion
from ragcore.rag.chunking import Chunker
from ragcore.rag.pipeline import HybridRetriever

DEPTHS = (20, 50, 100, 200)
DEMO_DEPTH = 50


def build(data, n_questions: int, seed: int, precision: str):
    """The demo's retriever and (positions, questions, qids) of its tuning and held-out parts."""
    rng = np.random.default_rng(seed)
    positions = sorted(rng.choice(len(data.questions), min(n_questions, len(data.questions)),
                                  replace=False).tolist())
    encoder = default_encoder(precision)
    retriever = HybridRetriever.from_texts(
        data.texts(), doc_ids=[d.doc_id for d in data.documents],
        metadata=[d.metadata for d in data.documents], encoder=encoder,
        chunker=Chunker(encoder, chunk_size=200, overlap=40),
        embed=EmbeddingCache(encoder, show_progress=False).encode, k0=max(DEPTHS), k=10)
    parts = []
    for at in split_questions(len(positions), seed):
        pos = [positions[i] for i in at]
        parts.append((pos, [data.questions[i] for i in pos], [data.qids[i] for i in pos]))
    return retriever, parts


def first_stage(retriever, questions) -> tuple:
    return tuple(retriever.retrieve_batch(questions, m).candidates for m in ("dense", "sparse"))


def top(hits: Hits, d: int) -> Hits:
    return Hits(np.ascontiguousarray(hits.scores[:, :d]), np.ascontiguousarray(hits.ids[:, :d]))


def as_retrieval(retriever, hits: Hits, k: int = 10):
    return SimpleNamespace(chunks=[[retriever.chunks[i] for i in row if i >= 0]
                                   for row in hits.ids[:, :k]])


def doc_rank(retriever, row_ids, relevant: set) -> int | None:
    """1-based rank of the first relevant document in a list of chunk ids (documents once)."""
    seen = []
    for i in row_ids:
        if i < 0:
            break
        doc = str(retriever.chunks[i].doc_id)
        if doc not in seen:
            seen.append(doc)
            if doc in relevant:
                return len(seen)
    return None


def tuned(candidates, qrels, qids, docids, seed: int, criterion: str):
    return fusion.tune(candidates, qrels, TUNE_METRIC, method=TUNE_METHODS, folds=5, seed=seed,
                       qids=qids, docids=docids, norm=TUNE_NORMS, criterion=criterion)


def analyse(data, n_questions: int, seed: int, precision: str) -> None:
    retriever, (tune_part, held_part) = build(data, n_questions, seed, precision)
    docids = [str(c.doc_id) for c in retriever.chunks]
    tune_first = first_stage(retriever, tune_part[1])
    held_first = first_stage(retriever, held_part[1])
    qrels = {q: {str(d): g for d, g in data.qrels[q].items()} for q in tune_part[2]}
    held_pos, held_qids = held_part[0], held_part[2]
    single = {name: evaluate_system(as_retrieval(retriever, top(h, 10)), data, held_qids, held_pos)
              for name, h in zip(("dense", "BM25"), held_first)}
    print(f"\n#### {data.name} ({precision}): {len(tune_part[0])} tuning, {len(held_pos)} "
          f"held-out questions\n")
    print(f"held out: dense recall@10 {single['dense'][0]['recall@10']:.3f} MRR@10 "
          f"{single['dense'][0]['mrr@10']:.3f}; BM25 {single['BM25'][0]['recall@10']:.3f} / "
          f"{single['BM25'][0]['mrr@10']:.3f}\n")
    print("| depth d | tuned on the tuning third | CV score | held-out recall@10 | held-out "
          "MRR@10 | recall@10 vs dense (gained/lost, p) |")
    print("|---:|---|---:|---:|---:|---|")
    rows, per_depth = [], {}
    for d in DEPTHS:
        t = tuned([top(h, d) for h in tune_first], qrels, tune_part[2], docids, seed,
                  TUNE_CRITERION)
        fused = t.setting.fuse(*(top(h, d) for h in held_first), k=10)
        means, per = evaluate_system(as_retrieval(retriever, fused), data, held_qids, held_pos)
        per_depth[d] = (t, fused, per)
        c = compare(single["dense"][1]["recall@10"], per["recall@10"])
        rows.append(t.cv_score)
        print(f"| {d} | {t.setting.describe()} | {t.cv_score:.4f} | {means['recall@10']:.3f} | "
              f"{means['mrr@10']:.3f} | {len(c.gained)}/{len(c.lost)}, p = {c.p_value:.2g} |",
              flush=True)
    print(f"\ncross-validation chooses depth {DEPTHS[int(np.argmax(rows))]}\n")
    t, fused, per = per_depth[DEMO_DEPTH]
    held_top = [top(h, DEMO_DEPTH) for h in held_first]
    rrf60 = fusion.FusionSetting("rrf", r0=60).fuse(*held_top, k=10)
    _, rrf_per = evaluate_system(as_retrieval(retriever, rrf60), data, held_qids, held_pos)
    for criterion in ("worst_gain", "mean"):
        c_t = tuned([top(h, DEMO_DEPTH) for h in tune_first], qrels, tune_part[2], docids, seed,
                    criterion)
        held = c_t.setting.fuse(*held_top, k=10)
        means, c_per = evaluate_system(as_retrieval(retriever, held), data, held_qids, held_pos)
        print(f"criterion {criterion} at depth {DEMO_DEPTH}: {c_t.setting.describe()} (folds "
              f"chose {', '.join(f.describe() for f in c_t.fold_settings)}); held out recall@10 "
              f"{means['recall@10']:.3f}, MRR@10 {means['mrr@10']:.3f}")
        for metric in ("recall@10", "mrr@10"):
            for name, other in (("dense", single["dense"][1]), ("RRF r0 = 60", rrf_per)):
                c = compare(other[metric], c_per[metric])
                print(f"- {metric} against {name}: {len(c.gained)} gained, {len(c.lost)} lost, "
                      f"p = {c.p_value:.2g}")
    print()
    dense_rec, fused_rec = single["dense"][1]["recall@10"], per["recall@10"]
    print(f"per question at depth {DEMO_DEPTH} ({t.setting.describe()}), where recall@10 differs "
          "from dense: rank of the relevant document\n")
    print("| question | recall@10 dense -> tuned | dense rank | BM25 rank | fused rank |")
    print("|---|---|---:|---:|---:|")
    for j in np.flatnonzero(dense_rec != fused_rec):
        relevant = set(data.qrels[held_qids[j]])
        ranks = [doc_rank(retriever, h.ids[j, :DEMO_DEPTH], relevant) for h in held_first]
        ranks.append(doc_rank(retriever, fused.ids[j], relevant))
        shown = [str(r) if r is not None else f">{DEMO_DEPTH}" for r in ranks]
        shown[2] = shown[2].replace(f">{DEMO_DEPTH}", ">10")
        print(f"| {held_qids[j]} | {dense_rec[j]:g} -> {fused_rec[j]:g} | " + " | ".join(shown)
              + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--corpus", choices=("stdlib_docs", "debian_packages", "both"),
                        default="both")
    args = parser.parse_args()
    if args.corpus in ("stdlib_docs", "both"):
        analyse(stdlib_docs(max_docs=3000, seed=0), 300, 0, args.precision)
    if args.corpus in ("debian_packages", "both"):
        analyse(debian_packages(), 600, 0, args.precision)


if __name__ == "__main__":
    main()
