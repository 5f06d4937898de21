"""Sparse (lexical) search: the native tokenizer, BM25Index with its scoring variants and query
algorithms, and GpuBM25Index (the same hits, scored on a CUDA device)."""

from .bm25 import ALGORITHMS, BM25Index
from .gpu import GpuBM25Index
from .statistics import BM25Statistics, combine_statistics
from .tokenizer import tokenize
from .variants import VARIANTS

__all__ = ["ALGORITHMS", "BM25Index", "BM25Statistics", "GpuBM25Index", "VARIANTS",
           "combine_statistics", "tokenize"]
