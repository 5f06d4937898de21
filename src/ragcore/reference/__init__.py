"""Plain numpy reference implementations, written for clarity, not speed, and independent
of the code they check: tests compare every native function with these, and these are checked
against worked examples and established tools (trec_eval, ranx, bm25s, faiss). No production
module imports this package.

Scores: higher is better; ordering: score descending, then id ascending.
"""

from __future__ import annotations

from .selection import topk, merge_topk
from .dense import (METRICS, round_to_storage, normalize_rows, dense_scores, flat_search,
                    filtered_flat_search, kmeans_objective, scalar_quantize, scalar_dequantize)
from .kmeans import kmeans_lloyd, nearest_l2, pq_codebooks
from .sparse import (BM25_VARIANTS, bm25_absent_part, lucene_norm_length, bm25_scores,
                     bm25_scores_with_statistics,
                     bm25_matches, bm25_top_matches, bm25_impact_search, bm25_dense_bound,
                     bm25_candidate_search)
from .metrics import trec_eval_order, ranking_metric, evidence_question
from .fusion import convex_query, fuse_query
from .mmr import mmr
from .bert import bert_hidden_states
from .bf16_dot import bf16_dot_products

__all__ = [
    "BM25_VARIANTS", "METRICS", "bert_hidden_states", "bf16_dot_products", "bm25_absent_part", "bm25_candidate_search",
    "bm25_dense_bound", "bm25_impact_search", "bm25_matches", "bm25_scores",
    "bm25_scores_with_statistics", "bm25_top_matches",
    "dense_scores", "convex_query", "evidence_question", "filtered_flat_search", "flat_search",
    "fuse_query", "kmeans_lloyd", "kmeans_objective", "lucene_norm_length", "merge_topk", "mmr",
    "nearest_l2", "normalize_rows", "pq_codebooks", "ranking_metric", "round_to_storage",
    "scalar_dequantize", "scalar_quantize", "topk", "trec_eval_order",
]
