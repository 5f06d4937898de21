"""The API key: every route but /health needs it, as a Bearer token or X-API-Key."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from conftest import API_KEY
from ragcore.serve import build_app
from ragcore.serve.guards import Guard

ROUTES = [("POST", "/search", {"query": "alpha"}), ("GET", "/stats", None),
          ("GET", "/openapi.json", None), ("GET", "/documents/1", None),
          ("POST", "/documents", {"texts": ["x"]}), ("DELETE", "/documents", {"ids": [1]}),
          ("GET", "/no-such-route", None)]


@pytest.fixture
def bare(backend):
    with TestClient(build_app(backend, api_key=API_KEY)) as c:
        yield c


@pytest.mark.parametrize("method,path,body", ROUTES)
@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"},
                                     {"X-API-Key": API_KEY[:-1]}, {"Authorization": API_KEY},
                                     {"X-API-Key": ""}])
def test_routes_refuse_a_missing_or_wrong_key(bare, method, path, body, headers):
    r = bare.request(method, path, json=body, headers=headers)
    assert r.status_code == 401
    assert r.json()["field"] == "api_key"
    assert r.headers["www-authenticate"] == "Bearer"


def test_health_needs_no_key_and_both_headers_work(bare):
    assert bare.get("/health").json() == {"status": "ok"}
    for headers in ({"Authorization": f"Bearer {API_KEY}"}, {"X-API-Key": API_KEY},
                    {"authorization": f"bearer {API_KEY}"}):
        assert bare.post("/search", json={"query": "alpha"}, headers=headers).status_code == 200
    assert bare.get("/stats", headers={"X-API-Key": API_KEY}).json()["requests"]["search"] == 3


def test_without_a_key_every_route_is_open(backend):
    with TestClient(build_app(backend)) as c:
        assert c.post("/search", json={"query": "alpha"}).status_code == 200
    with pytest.raises(ValueError, match="api_key"):
        build_app(backend, api_key="")


def test_the_key_is_compared_in_constant_time(monkeypatch):
    """The guard compares digests with hmac.compare_digest (not ==)."""
    import hmac

    from ragcore.serve import guards

    calls = []
    real = hmac.compare_digest
    monkeypatch.setattr(guards.hmac, "compare_digest",
                        lambda a, b: calls.append((a, b)) or real(a, b))
    g = Guard(None, guards.key_digest("k"), 100)
    assert g._authorized({b"x-api-key": b"k"}) and not g._authorized({b"x-api-key": b"j"})
    assert len(calls) == 2 and all(len(a) == len(b) == 32 for a, b in calls)
