"""Bad requests: a 4xx with a JSON body naming the field, never a 500, and never a
change to what other requests get."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragcore.serve import limits

BAD_SEARCHES = [
    ({"query": "a", "k": 0}, "k"),
    ({"query": "a", "k": limits.MAX_K + 1}, "k"),
    ({"query": "a", "k": "5"}, "k"),
    ({"query": "a", "k": 2.5}, "k"),
    ({"query": "a", "k0": 0}, "k0"),
    ({"query": "a", "mode": "fuzzy"}, "mode"),
    ({"query": "a", "by": "page"}, "by"),
    ({"query": "a", "fusion": "max"}, "fusion"),
    ({"query": "a", "fusion": {"method": "wsum", "weights": [1]}}, "fusion"),
    ({"query": "a", "unknown": 1}, "unknown"),
    ({"query": 5}, "query"),
    ({"query": "x" * (limits.MAX_QUERY_CHARS + 1)}, "query"),
    ({"queries": []}, "queries"),
    ({"queries": ["a"] * (limits.MAX_QUERIES + 1)}, "queries"),
    ({"queries": ["a", 3]}, "queries.1"),
    ({}, "query"),
    ({"query": "a", "queries": ["b"]}, "query"),
    ({"query": "a", "filter": {"year": {"$near": 3}}}, "filter"),
    ({"query": "a", "filter": {"year": {"$gt": "x"}}}, "filter"),
    ({"query": "a", "filter": "year > 3"}, "filter"),
    ({"query": "a", "vector": [0.1] * 3}, "vectors"),
    ({"query": "a", "vector": [0.1] * 16, "vectors": [[0.1] * 16]}, "vectors"),
    ({"queries": ["a", "b"], "vectors": [[0.1] * 16]}, "vectors"),
    ({"query": "a", "vector": ["x"]}, "vector.0"),
    ({"query": "a", "vector": [1e39] * 16}, "vector"),
    ({"query": "a", "include_text": "yes"}, "include_text"),
    ([1, 2], "body"),
]


@pytest.mark.parametrize("body,field", BAD_SEARCHES)
def test_bad_search_is_a_4xx_naming_the_field(client, body, field):
    r = client.post("/search", json=body)
    assert 400 <= r.status_code < 500, r.text
    got = r.json()
    assert got["field"].startswith(field.split(".")[0]), got
    assert got["field"] == field or "." in field or field in ("vectors", "query"), got
    assert got["error"]


BAD_WRITES = [
    ("POST", {"texts": []}, "texts"),
    ("POST", {"texts": "one text"}, "texts"),
    ("POST", {"texts": ["a"], "ids": [1, 2]}, "ids"),
    ("POST", {"texts": ["a"], "ids": [0]}, "ids"),           # exists already
    ("POST", {"texts": ["a"], "ids": [[1]]}, "ids.0"),
    ("POST", {"texts": ["a"], "metadata": ["x"]}, "metadata.0"),
    ("POST", {"texts": ["a"], "upsert": True}, "ids"),
    ("POST", {"texts": ["a"] * (limits.MAX_DOCUMENTS + 1)}, "texts"),
    ("DELETE", {"ids": [99999]}, "ids"),
    ("DELETE", {"ids": []}, "ids"),
    ("DELETE", {"ids": [1], "cascade": True}, "cascade"),
]


@pytest.mark.parametrize("method,body,field", BAD_WRITES)
def test_bad_write_is_a_4xx_naming_the_field_and_changes_nothing(client, method, body, field):
    before = client.get("/stats").json()["documents"]
    r = client.request(method, "/documents", json=body)
    assert 400 <= r.status_code < 500, r.text
    assert r.json()["field"].split(".")[0] == field.split(".")[0], r.json()
    assert client.get("/stats").json()["documents"] == before


def test_invalid_utf8_and_broken_json_are_400s(client):
    for raw in (b'{"query": "\xff\xfe"}', b'{"query": "a\xc3"}'):
        r = client.post("/search", content=raw, headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["field"] == "body"
    r = client.post("/search", content=b'{"query": ', headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["field"] == "body"


def test_bodies_beyond_the_bound_are_413_before_they_are_read(client):
    r = client.post("/search", content=b" " * (limits.MAX_BODY_BYTES + 1),
                    headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["field"] == "body"

    def chunks():  # no Content-Length: counted as it arrives
        for _ in range(limits.MAX_BODY_BYTES // 2**20 + 2):
            yield b" " * 2**20

    r = client.post("/search", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413


def test_unknown_routes_and_ids(client):
    assert client.get("/nothing").status_code == 404
    assert client.get("/nothing").json()["field"] == "path"
    assert client.put("/search", json={}).status_code == 405
    r = client.get("/documents/" + "x" * 600)
    assert r.status_code == 422 and r.json()["field"] == "id"
    r = client.get("/documents/%FF%FE")
    assert r.status_code in (400, 404)
    assert client.get("/documents/99999999999999999999").status_code == 404


def test_a_malformed_request_does_not_affect_concurrent_ones(backend):
    """Good and bad searches gathered into the same batches: each good one gets what it
    gets alone, each bad one its own 4xx."""
    from ragcore.serve import build_app

    app = build_app(backend)
    good = [{"query": q, "k": 3} for q in ("alpha", "beta gamma", "omega", "pi rho")]
    bad = [{"query": "a", "filter": {"year": {"$bad": 1}}}, {"query": "a", "k": -1}]

    async def run():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            alone = [(await c.post("/search", json=b)).json() for b in good]
            mixed = await asyncio.gather(*(c.post("/search", json=b)
                                           for b in (good + bad) * 4))
            return alone, mixed

    alone, mixed = asyncio.run(run())
    for i, r in enumerate(mixed):
        j = i % (len(good) + len(bad))
        if j < len(good):
            assert r.status_code == 200 and r.json() == alone[j]
        else:
            assert r.status_code == 422
    assert max(int(s) for s in backend.stats.snapshot()["batch_sizes"]) > 1


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12)
search_like = st.fixed_dictionaries({}, optional={
    "query": json_values | st.text(max_size=20), "queries": json_values, "k": json_values,
    "mode": json_values | st.sampled_from(["hybrid", "dense", "sparse"]),
    "filter": json_values, "fusion": json_values, "by": json_values, "vector": json_values,
    "k0": json_values, "extra": json_values})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=search_like | json_values)
def test_any_json_body_gets_a_json_answer_never_a_500(client, body):
    r = client.post("/search", content=json.dumps(body).encode(),
                    headers={"content-type": "application/json"})
    assert r.status_code in (200, 400, 404, 413, 422), (body, r.status_code, r.text)
    got = r.json()
    if r.status_code != 200:
        assert got["error"] and got["field"]
