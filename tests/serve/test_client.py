"""ragcore.client.Client against the app on loopback (uvicorn in a thread, no Ray): the
Collection's signatures, and the server's refusals as ragcore errors."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from _serve_data import WordHashEncoder
from conftest import API_KEY
from ragcore import FilterError, ServiceError
from ragcore.client import Client
from ragcore.rag.collection import Collection


@pytest.fixture
def url(backend):
    import uvicorn

    from ragcore.serve import build_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(build_app(backend, api_key=API_KEY),
                                           host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started:
        assert time.time() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def test_client_has_the_collections_signatures(url, collection_path):
    with Collection.open(collection_path, readonly=True, encoder=WordHashEncoder()) as col:
        one = col.search("alpha beta", k=3)
        many = col.search(["alpha", "omega"], k=2, mode="dense", filter={"year": {"$lt": 2010}})
    with Client(url, api_key=API_KEY) as client:
        got = client.search("alpha beta", k=3)
        assert [(m.id, m.chunk_id, m.text, m.start, m.end) for m in got] == \
            [(m.id, m.chunk_id, m.text, m.start, m.end) for m in one]
        got = client.search(["alpha", "omega"], k=2, mode="dense",
                            filter={"year": {"$lt": 2010}})
        assert [[m.id for m in r] for r in got] == [[m.id for m in r] for r in many]
        vec = WordHashEncoder().encode(["alpha beta"])[0]
        assert [m.id for m in client.search("", k=3, mode="dense", query_vector=vec)] == \
            [m.id for m in client.search("alpha beta", k=3, mode="dense")]
        assert client.add(["psi psi chi"], ids=[1000]) == [1000]
        assert len(client) == 61
        assert client.upsert(["psi chi"], ids=[1000]) == [1000]
        assert [d.text for d in client.get([1000, 999999])] == ["psi chi"]
        assert client.delete([1000, 999999], missing_ok=True) == 1
        assert client.count() == 60 and client.health()


def test_client_raises_the_servers_refusals(url):
    with Client(url, api_key=API_KEY) as client:
        with pytest.raises(FilterError, match=r"\$regex"):
            client.search("alpha", filter={"year": {"$regex": "x"}})
        with pytest.raises(ServiceError) as err:
            client.search("alpha", k=0)
        assert err.value.status == 422 and err.value.field == "k"
        with pytest.raises(ServiceError) as err:
            client.delete([123456])
        assert err.value.field == "ids"
    with Client(url, api_key="wrong") as client:
        with pytest.raises(ServiceError) as err:
            client.search("alpha")
        assert err.value.status == 401 and client.health()
