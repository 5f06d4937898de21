"""The defaults the RAG layer shares: the Collection, HybridRetriever, the LangChain and
LlamaIndex adapters and the CLI take them from here, so each choice has one value.

They were chosen on held-out questions of three corpora (stdlib_docs, debian_packages,
man_pages): convex fusion of z-scores with 0.7 on dense was the setting that never lost to the
better single retriever on any of them, and English stemming raised BM25 on all three.
bench/tasks/fusion.py (BENCHMARKS.md, "Fusion quality") measures the default against BM25,
dense and RRF.
"""

from __future__ import annotations

from .fusion import FusionSetting

DEFAULT_FUSION = FusionSetting("convex", alpha=0.7, norm="zscore")
DEFAULT_K0 = 50  # candidates taken from each first-stage retriever before fusion
# The analyzer of the BM25 index a Collection or HybridRetriever builds (English stopwords,
# Snowball English stemming); BM25Index itself defaults to no stemming.
DEFAULT_BM25 = {"stopwords": "en", "stemmer": "english"}


def bm25_options(options: dict | None) -> dict:
    """DEFAULT_BM25 with the caller's options on top."""
    return {**DEFAULT_BM25, **(options or {})}
