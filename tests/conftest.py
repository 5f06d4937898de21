"""Shared fixtures, and the slow tier."""

import pytest

import ragcore

# The slow tier: `make test` leaves it out (a developer's fast loop), `make test-slow` runs
# only it, CI runs both. Folders whose fixtures derive models or start Ray, the CUDA
# emulator, the kill tests, the comparisons with ranx, and the longest property runs.
SLOW_PATHS = ("tests/encoders/", "tests/distributed/", "tests/gpu/test_gpu_bm25_emulated.py",
              "tests/gpu/test_gpu_flat_emulated.py",
              "tests/rag/test_collection_kill.py", "tests/evaluate/test_evaluate_ranx.py",
              "tests/rag/test_fusion_ranx.py", "tests/bench/test_bench_smoke.py",
              "tests/serve/test_serve_ray.py")
SLOW_TESTS = {"test_batched_maxscore_equals_the_top_k_of_all_scores",
              "test_batched_maxscore_with_an_allow_filter",
              "test_memory_stays_flat_over_a_million_distinct_query_words",
              "test_frequent_terms_equal_the_top_k_of_all_scores"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.startswith(SLOW_PATHS) or item.originalname in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


class _QueryRecorder:
    """Stands in for ragcore._core and records the address of the queries it receives,
    so tests can tell whether an input reached the native code without a copy."""

    def __init__(self, real):
        self.real = real
        self.addresses = []

    def flat_search(self, corpus, n, queries, *args, **kw):
        self.addresses.append(queries.__array_interface__["data"][0])
        return self.real.flat_search(corpus, n, queries, *args, **kw)


@pytest.fixture
def recorder(monkeypatch):
    rec = _QueryRecorder(ragcore.dense.flat._core)
    monkeypatch.setattr(ragcore.dense.flat, "_core", rec)
    return rec
