"""Retrieval quality of fusion on held-out questions of the built-in corpora (no reranker):
BM25 alone, dense alone (the bundled all-MiniLM-L6-v2), the package's default fusion
(rag.defaults.DEFAULT_FUSION) and RRF (r0 = 60), over the same chunks (200 tokens, overlap
40), k0 = 50 from each retriever; the questions the demo does not tune on (its split)."""

from __future__ import annotations

import numpy as np

from results_file import table, write_section

K0 = 50


def corpora(grid):
    from ragcore.cli.datasets import debian_packages, man_pages, stdlib_docs

    makers = {"stdlib_docs": lambda n: stdlib_docs(max_docs=n, seed=0),
              "debian_packages": lambda n: debian_packages(max_docs=n, seed=0),
              "man_pages": lambda n: man_pages(max_docs=n, seed=0, exclude=("gcloud*",))}
    for name, (docs, questions) in grid["corpora"].items():
        yield name, makers[name](docs or None), questions


def run(grid, out_dir, command, limits):
    from ragcore.cli.demo_hybrid import evaluate_system, split_questions
    from ragcore.cli.embedding_cache import EmbeddingCache
    from ragcore.encoders import default_encoder
    from ragcore.rag import fusion
    from ragcore.rag.chunking import Chunker
    from ragcore.rag.defaults import DEFAULT_FUSION
    from ragcore.rag.pipeline import HybridRetriever

    encoder = default_encoder()
    systems = [("BM25", "sparse", None), ("dense", "dense", None),
               (f"default fusion ({DEFAULT_FUSION.describe()})", "hybrid", DEFAULT_FUSION),
               ("RRF r0 = 60", "hybrid", fusion.FusionSetting("rrf", r0=60))]
    rows = []
    for name, data, n_questions in corpora(grid):
        rng = np.random.default_rng(0)
        positions = sorted(rng.choice(len(data.questions), min(n_questions, len(data.questions)),
                                      replace=False).tolist())
        _, held_at = split_questions(len(positions), 0)
        held = [positions[i] for i in held_at]
        retriever = HybridRetriever.from_texts(
            data.texts(), doc_ids=[d.doc_id for d in data.documents],
            metadata=[d.metadata for d in data.documents], encoder=encoder,
            chunker=Chunker(encoder, chunk_size=200, overlap=40),
            embed=EmbeddingCache(encoder, show_progress=False).encode, k0=K0, k=10)
        questions, qids = [data.questions[i] for i in held], [data.qids[i] for i in held]
        for label, mode, setting in systems:
            if setting is not None:
                retriever.fusion = setting
            means, _ = evaluate_system(retriever.retrieve_batch(questions, mode), data, qids,
                                       held)
            ndcg = means.get("ndcg@10", means.get("doc ndcg@10"))
            rows.append({"corpus": name, "docs": len(data.documents),
                         "questions": len(questions), "system": label,
                         "recall": means["recall@10"], "mrr": means["mrr@10"], "ndcg": ndcg})
    columns = [{"key": "corpus", "label": "corpus"}, {"key": "docs", "label": "documents"},
               {"key": "questions", "label": "held-out questions"},
               {"key": "system", "label": "system"},
               {"key": "recall", "label": "recall@10", "format": ".3f"},
               {"key": "mrr", "label": "MRR@10", "format": ".3f"},
               {"key": "ndcg", "label": "nDCG@10", "format": ".3f"}]
    notes = ["stdlib_docs scores evidence spans (recall and MRR of the span that answers); "
             "nDCG@10 there is over documents."]
    return write_section(
        "fusion", "Fusion quality", command, threads=1, order=60,
        intro=" ".join(__doc__.split()), tables=[table("", columns, rows, notes)],
        peers=("onnxruntime",), limits=limits, out_dir=out_dir)
