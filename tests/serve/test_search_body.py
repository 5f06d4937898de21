"""search_body: POST /search bodies read without the model take the model's values or are
left to it, and answers are written the same with or without orjson."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ragcore.rag.collection.collection import Match
from ragcore.serve import limits, search_body
from ragcore.serve.schemas import SearchRequest

_TEXT = st.text(max_size=12) | st.just("q" * (limits.MAX_QUERY_CHARS + 1))
_NUMBER = st.floats(allow_nan=False, allow_infinity=False, width=32) | \
    st.integers(-(2**70), 2**70)
_ODD = st.none() | st.booleans() | st.integers(-5, 2000) | st.text(max_size=4) | \
    st.lists(st.integers(0, 3), max_size=2) | st.dictionaries(st.text(max_size=3), st.integers())
_VECTOR = st.lists(_NUMBER | _ODD, min_size=0, max_size=6) | \
    st.lists(st.floats(-1, 1, width=32), min_size=1, max_size=6)
_FIELDS = {
    "query": _TEXT | _ODD,
    "queries": st.lists(_TEXT | _ODD, max_size=4) | _ODD,
    "vector": _VECTOR | _ODD,
    "vectors": st.lists(_VECTOR, max_size=3) | _ODD,
    "k": st.integers(-2, limits.MAX_K + 2) | _ODD,
    "k0": st.integers(-2, limits.MAX_K + 2) | _ODD,
    "mode": st.sampled_from(["hybrid", "dense", "sparse", "Dense"]) | _ODD,
    "filter": st.dictionaries(st.text(max_size=3), st.integers() | st.text(max_size=3)) | _ODD,
    "fusion": st.sampled_from(["rrf", "wsum", "combsum", "combmnz", "nope"]) | _ODD |
    st.fixed_dictionaries({"method": st.sampled_from(["wsum", "rrf"])}),
    "by": st.sampled_from(["chunk", "document", "doc"]) | _ODD,
    "include_text": st.booleans() | _ODD,
    "unknown": _ODD,
}


@st.composite
def bodies(draw):
    names = draw(st.lists(st.sampled_from(sorted(_FIELDS)), unique=True, max_size=5))
    body = {name: draw(_FIELDS[name]) for name in names}
    if draw(st.booleans()):
        body.pop("unknown", None)
    return json.dumps(body).encode()


@pytest.mark.skipif(search_body.orjson is None, reason="orjson is not installed")
@settings(max_examples=400, deadline=None)
@given(bodies())
def test_a_body_read_without_the_model_has_the_models_values(body):
    fast = search_body.parse(body)
    try:
        model = SearchRequest.model_validate_json(body)
    except ValidationError:
        assert fast is None, body
        return
    if fast is not None:
        got, want = fast.model_dump(), model.model_dump()
        for name in ("vector", "vectors"):  # numbers end up float32, as they are searched
            if want[name] is not None:
                np.testing.assert_array_equal(np.array(got.pop(name), dtype=np.float32),
                                              np.array(want.pop(name), dtype=np.float32))
        assert got == want, body


def test_plain_bodies_are_read_without_the_model():
    for body in ({"query": "a", "k": 5, "mode": "dense", "vector": [0.5, -1, 2.0e3]},
                 {"queries": ["a", "b"], "filter": {"year": {"$gte": 2000}}, "by": "document",
                  "fusion": "rrf", "include_text": False, "k0": 40}):
        if search_body.orjson is None:
            assert search_body.parse(json.dumps(body).encode()) is None
        else:
            assert search_body.parse(json.dumps(body).encode()) == SearchRequest(**body)
    for odd in (b'{"query": "a", "vector": [NaN]}', b'{"query": "a", "k": true}',
                b'{"query": "a", "fusion": {"method": "wsum"}}', b'[1]', b'{"query": "\xff"}',
                b'{"query": "a", "extra": 1}'):
        assert search_body.parse(odd) is None, odd


def test_answers_are_the_same_json_with_or_without_orjson(monkeypatch):
    match = Match(id="doc-1", chunk_id=7, position=0, start=0, end=5, text="h\u00e9llo",
                  score=0.25, metadata={"year": 2001, "tags": ["a"]})
    answer = {"results": [[match, {"id": 3, "score": 1.5, "metadata": {}}]]}
    written = search_body.dumps(answer)
    monkeypatch.setattr(search_body, "orjson", None)
    plain = search_body.dumps(answer)
    assert json.loads(written) == json.loads(plain)
    assert json.loads(plain)["results"][0][0] == {
        "id": "doc-1", "chunk_id": 7, "position": 0, "start": 0, "end": 5, "text": "h\u00e9llo",
        "score": 0.25, "metadata": {"year": 2001, "tags": ["a"]}}
    with pytest.raises(ValueError):
        search_body.dumps({"score": float("nan")})


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
