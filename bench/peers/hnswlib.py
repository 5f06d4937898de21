"""hnswlib: its HNSW index, inner product (ann: the adapter of ragcore bench ann,
ragcore.cli.bench.peers)."""

from __future__ import annotations

from ragcore.cli.bench.peers import Hnswlib

LIBRARY, DISTRIBUTION = "hnswlib", "hnswlib"

TASKS = {"ann": [Hnswlib]}
