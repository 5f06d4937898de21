"""Fixtures of the service tests: a collection served in-process (no Ray, no socket)."""

from __future__ import annotations

import pytest

from _serve_data import WordHashEncoder, make_collection

API_KEY = "test-key-0123"


@pytest.fixture
def collection_path(tmp_path):
    path = tmp_path / "col"
    make_collection(path)
    return path


@pytest.fixture
def backend(collection_path):
    from ragcore.serve import LocalBackend

    b = LocalBackend(collection_path, max_batch=16, batch_wait_ms=5.0, encoder=WordHashEncoder())
    yield b
    b.close()


@pytest.fixture
def client(backend):
    """A TestClient of the app with API_KEY required, sending the key."""
    from starlette.testclient import TestClient

    from ragcore.serve import build_app

    with TestClient(build_app(backend, api_key=API_KEY),
                    headers={"Authorization": f"Bearer {API_KEY}"}) as c:
        yield c
