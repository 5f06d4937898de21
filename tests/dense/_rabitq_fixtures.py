"""Module-scoped data and a trained 3-bit IVFIndex(dtype="rabitq") per metric, shared by
the RaBitQ file tests (import both names into a test module to use them)."""

import pytest

import ragcore
from _ivf_data import clustered


@pytest.fixture(scope="module")
def data():
    return clustered(400, 12, 8, seed=0)


@pytest.fixture(scope="module", params=["ip", "l2"])
def index(request, data):
    index = ragcore.IVFIndex(12, 8, request.param, "rabitq", bits=3)
    index.train(data)
    index.add(data)
    return index
