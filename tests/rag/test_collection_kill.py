"""SIGKILL durability, briefly (tests/rag/run_kills.py runs hundreds of kills): a
writer killed at random points of add / upsert / delete / compact loses no acknowledged
document, never leaves one in part, and the reopened collection searches as a fresh one."""

from __future__ import annotations

import sys

import pytest

import _kill_harness

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs fork and SIGKILL")


def test_kills_at_random_points_lose_nothing_acknowledged(tmp_path):
    counts = _kill_harness.run(str(tmp_path), kills=30, seed=1)
    assert counts["kills"] == 30
    assert counts["acknowledged operations"] > 30  # the writer got work done between kills
    killed_inside = sum(counts[f"killed during {op}"] for op in _kill_harness.OPERATIONS)
    assert killed_inside > 10  # most kills land inside an operation


def test_kills_lose_nothing_with_an_hnsw_graph(tmp_path):
    # k covers every document, so the walk keeps them all: the recovered graph (loaded, or
    # rebuilt from the database) must reach every live document with its exact score.
    counts = _kill_harness.run(str(tmp_path), kills=15, seed=2, dense="hnsw")
    assert counts["kills"] == 15 and counts["acknowledged operations"] > 15
