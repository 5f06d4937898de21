"""usearch: its HNSW index, inner product, float32 (ann: the adapter of ragcore bench ann,
ragcore.cli.bench.peers)."""

from __future__ import annotations

from ragcore.cli.bench.peers import Usearch

LIBRARY, DISTRIBUTION = "usearch", "usearch"

TASKS = {"ann": [Usearch]}
