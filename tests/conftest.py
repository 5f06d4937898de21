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


@pytest.fixture
def recorder(monkeypatch):
    rec = _QueryRecorder(ragcore.dense.flat._core)
    monkeypatch.setattr(ragcore.dense.flat, "_core", rec)
    return rec
