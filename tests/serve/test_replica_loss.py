"""The proxy middleware: a request whose replica died gets a JSON 503, whatever the proxy
did (no response, or a bare 500); the app's own responses pass unchanged."""

from __future__ import annotations

import asyncio
import json

from ragcore.serve.replica_loss import SERVED_HEADER, ReplicaLossAs503, mark_served


def _run(app) -> list:
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(ReplicaLossAs503(app)({"type": "http", "path": "/search"}, receive, send))
    return sent


async def _silent(scope, receive, send):  # the proxy after a replica died
    return None


async def _bare_500(scope, receive, send):
    await send({"type": "http.response.start", "status": 500, "headers": []})
    await send({"type": "http.response.body", "body": b"Internal Server Error"})


def _from_app(status):
    async def app(scope, receive, send):
        send = mark_served(send)
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})
    return app


def test_a_lost_replica_is_a_json_503():
    for app in (_silent, _bare_500):
        sent = _run(app)
        assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
        assert sent[0]["status"] == 503
        assert (b"retry-after", b"1") in sent[0]["headers"]
        assert json.loads(sent[1]["body"])["field"] == "service"


def test_the_apps_own_responses_pass_unchanged():
    for status in (200, 422, 500):
        sent = _run(_from_app(status))
        assert sent[0]["status"] == status
        assert (SERVED_HEADER, b"1") in sent[0]["headers"]
        assert sent[1]["body"] == b"{}"
