"""ragcore.client.Client when the service closes a connection without an answer (what
HAProxy does, by design, with the requests a replica held when it died):
a read is sent once more, a write is not (it may have been applied); what is not answered
is a ServiceError with status 503. The transport is httpx's MockTransport."""

from __future__ import annotations

import httpx
import pytest

from ragcore import ServiceError
from ragcore.client import Client

MATCH = {"id": 1, "chunk_id": 1, "position": 0, "start": 0, "end": 4, "text": "json",
         "score": 1.0, "metadata": {}}


def client_closing_first(closed: int) -> tuple[Client, list]:
    """A Client whose first `closed` requests are closed without an answer; the rest are
    answered. Also the list of requests the service received."""
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.url.path))
        if len(seen) <= closed:
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.",
                                            request=request)
        if request.url.path == "/search":
            return httpx.Response(200, json={"results": [MATCH]})
        if request.url.path == "/documents" and request.method == "POST":
            return httpx.Response(200, json={"ids": [7]})
        return httpx.Response(200, json={"id": 1, "text": "json", "metadata": {}})

    client = Client("http://service")
    client._http = httpx.Client(base_url="http://service", transport=httpx.MockTransport(handler))
    return client, seen


def test_a_search_closed_once_is_sent_again_and_answered():
    client, seen = client_closing_first(1)
    assert [m.id for m in client.search("json")] == [1]
    assert seen == [("POST", "/search"), ("POST", "/search")]


def test_a_get_closed_once_is_sent_again_and_answered():
    client, seen = client_closing_first(1)
    assert [d.id for d in client.get([1])] == [1]
    assert len(seen) == 2


def test_a_search_closed_twice_is_a_503():
    client, seen = client_closing_first(2)
    with pytest.raises(ServiceError) as err:
        client.search("json")
    assert (err.value.status, err.value.field) == (503, "service")
    assert "sent twice" in str(err.value)
    assert len(seen) == 2


def test_a_write_closed_is_a_503_and_not_sent_again():
    client, seen = client_closing_first(1)
    with pytest.raises(ServiceError) as err:
        client.add(["a new text"], ids=[7])
    assert (err.value.status, err.value.field) == (503, "service")
    assert "may have been applied" in str(err.value)
    assert seen == [("POST", "/documents")]
    assert client.add(["a new text"], ids=[7]) == [7]  # the next call is sent as usual
