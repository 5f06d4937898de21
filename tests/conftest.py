"""Shared fixtures."""

import pytest

import ragcore


class _QueryRecorder:
    """Stands in for ragcore._core and records the address of the queries it receives,
    so tests can tell whether an input reached the native code without a copy."""

    def __init__(self, real):
        self.real = real
        self.addresses = []

    def flat_search(self, corpus, queries, k, **kw):
        self.addresses.append(queries.__array_interface__["data"][0])
        return self.real.flat_search(corpus, queries, k, **kw)

    def flat_search_row(self, corpus, n, query, *args):  # the one-query path
        found = self.real.flat_search_row(corpus, n, query, *args)
        if found is not None:
            self.addresses.append(query.__array_interface__["data"][0])
        return found


@pytest.fixture
def recorder(monkeypatch):
    rec = _QueryRecorder(ragcore.dense.flat._core)
    monkeypatch.setattr(ragcore.dense.flat, "_core", rec)
    return rec
