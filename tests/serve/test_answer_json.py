"""answer_json: answers are the same JSON with or without orjson, and a fault in a search
is a JSON 500 of the service."""

from __future__ import annotations

import json

import pytest

from ragcore.rag.collection.collection import Match
from ragcore.serve import answer_json


def test_answers_are_the_same_json_with_or_without_orjson(monkeypatch):
    match = Match(id="doc-1", chunk_id=7, position=0, start=0, end=5, text="h\u00e9llo",
                  score=0.25, metadata={"year": 2001, "tags": ["a"]})
    answer = {"results": [[match, {"id": 3, "score": 1.5, "metadata": {}}]]}
    written = answer_json.dumps(answer)
    monkeypatch.setattr(answer_json, "orjson", None)
    plain = answer_json.dumps(answer)
    assert json.loads(written) == json.loads(plain)
    assert json.loads(plain)["results"][0][0] == {
        "id": "doc-1", "chunk_id": 7, "position": 0, "start": 0, "end": 5, "text": "h\u00e9llo",
        "score": 0.25, "metadata": {"year": 2001, "tags": ["a"]}}
    with pytest.raises(ValueError):
        answer_json.dumps({"score": float("nan")})


def test_a_fault_in_a_search_is_a_json_500_of_the_service(backend, monkeypatch):
    """Not a replica lost (the proxy's 503): the response says the app made it."""
    import asyncio

    import httpx

    from ragcore.serve import build_app
    from ragcore.serve.replica_loss import SERVED_HEADER

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(backend.searcher.collection, "search", broken)

    async def run():
        transport = httpx.ASGITransport(app=build_app(backend), raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            return await c.post("/search", json={"query": "alpha"})

    r = asyncio.run(run())
    assert r.status_code == 500
    assert r.json() == {"error": "internal error", "field": "service"}
    assert r.headers[SERVED_HEADER.decode()] == "1"
