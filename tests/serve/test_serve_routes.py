"""The routes against the Collection they serve: the same matches, writes seen by the
next read, documents by id, stats and the OpenAPI schema."""

from __future__ import annotations

import pytest

from _serve_data import WordHashEncoder
from ragcore.rag.collection import Collection


def _embedded(path, query, **kw):
    with Collection.open(path, readonly=True, encoder=WordHashEncoder()) as col:
        results = col.search(query, **kw)
    rows = [results] if isinstance(query, str) else results
    return [[(m.id, m.chunk_id, m.text, pytest.approx(m.score, rel=1e-6)) for m in r]
            for r in rows]


def _served(rows):
    return [[(m["id"], m["chunk_id"], m["text"], m["score"]) for m in r] for r in rows]


@pytest.mark.parametrize("mode", ["hybrid", "dense", "sparse"])
def test_search_answers_what_the_collection_answers(client, collection_path, mode):
    r = client.post("/search", json={"query": "alpha beta gamma", "k": 5, "mode": mode})
    assert r.status_code == 200
    assert _served([r.json()["results"]]) == _embedded(collection_path, "alpha beta gamma",
                                                       k=5, mode=mode)
    queries = ["alpha", "omega psi", "kappa lambda mu"]
    r = client.post("/search", json={"queries": queries, "k": 3, "mode": mode,
                                     "filter": {"year": {"$gte": 2000}}, "by": "document"})
    assert r.status_code == 200
    assert _served(r.json()["results"]) == _embedded(
        collection_path, queries, k=3, mode=mode, filter={"year": {"$gte": 2000}},
        by="document")


def test_search_by_vector_encodes_nothing(client, collection_path):
    vec = WordHashEncoder().encode(["alpha beta"])[0]
    r = client.post("/search", json={"query": "", "vector": vec.tolist(), "mode": "dense",
                                     "k": 4})
    assert r.status_code == 200
    with Collection.open(collection_path, readonly=True, encoder=WordHashEncoder()) as col:
        expected = [m.chunk_id for m in col.search_by_vector(vec, k=4)]
    assert [m["chunk_id"] for m in r.json()["results"]] == expected


def test_fusion_options_and_include_text(client, collection_path):
    body = {"query": "alpha beta", "k": 4, "fusion": {"method": "wsum", "norm": "minmax",
                                                     "weights": [0.5, 0.5]},
            "include_text": False}
    r = client.post("/search", json=body)
    assert r.status_code == 200
    assert all("text" not in m for m in r.json()["results"])
    expected = _embedded(collection_path, "alpha beta", k=4,
                         fusion={"method": "wsum", "norm": "minmax", "weights": [0.5, 0.5]})
    assert [m["chunk_id"] for m in r.json()["results"]] == [e[1] for e in expected[0]]
    r = client.post("/search", json={"query": "alpha beta", "fusion": "rrf", "k": 4})
    assert [m["chunk_id"] for m in r.json()["results"]] == \
        [e[1] for e in _embedded(collection_path, "alpha beta", k=4, fusion="rrf")[0]]


def test_writes_are_seen_by_the_next_read(client):
    r = client.post("/documents", json={"texts": ["zeta zeta unique words"], "ids": [1000],
                                        "metadata": [{"year": 2030}]})
    assert r.status_code == 200 and r.json() == {"ids": [1000]}
    found = client.post("/search", json={"query": "unique words", "mode": "sparse", "k": 1})
    assert found.json()["results"][0]["id"] == 1000
    doc = client.get("/documents/1000").json()
    assert doc == {"id": 1000, "text": "zeta zeta unique words", "metadata": {"year": 2030}}
    r = client.post("/documents", json={"texts": ["replaced text"], "ids": [1000],
                                        "upsert": True})
    assert r.status_code == 200
    assert client.get("/documents/1000").json()["text"] == "replaced text"
    r = client.request("DELETE", "/documents", json={"ids": [1000]})
    assert r.json() == {"deleted": 1}
    assert client.get("/documents/1000").status_code == 404
    gone = client.post("/search", json={"query": "replaced text", "mode": "sparse", "k": 60})
    assert 1000 not in [m["id"] for m in gone.json()["results"]]


def test_stats_count_requests_and_batches(client):
    for q in ("alpha", "beta"):
        client.post("/search", json={"query": q})
    client.post("/search", json={"query": "a", "k": 0})
    stats = client.get("/stats").json()
    assert stats["documents"] == 60
    assert stats["requests"]["search"] == 2
    assert stats["errors"] == {"422": 1}
    assert sum(int(s) * n for s, n in stats["batch_sizes"].items()) == 2
    assert stats["search_latency_ms"]["n"] == 2
    assert stats["search_latency_ms"]["p50"] > 0


def test_openapi_schema_lists_every_route(client):
    schema = client.get("/openapi.json").json()
    assert set(schema["paths"]) == {"/search", "/documents", "/documents/{doc_id}", "/health",
                                    "/stats"}
    assert set(schema["paths"]["/documents"]) == {"post", "delete"}
    props = schema["components"]["schemas"]["SearchRequest"]["properties"]
    assert props["k"]["maximum"] == 1000
