"""A middleware for Ray Serve's HTTP proxy: a request whose replica died under it (the
proxy then sends no response, and its HTTP server would answer a bare 500, or it answers
500 itself) is answered 503 with a JSON body instead, so a client can tell "retry" from a
fault of the service. Responses the app itself made carry SERVED_HEADER and pass unchanged. Installed through Ray Serve's
RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH (``proxy_middlewares``)."""

from __future__ import annotations

import json

SERVED_HEADER = b"x-ragcore"
REPLICA_LOSS_BODY = json.dumps({
    "error": "the replica serving this request stopped; retry (the service starts another)",
    "field": "service"}).encode()


def proxy_middlewares() -> list:
    from starlette.middleware import Middleware

    return [Middleware(ReplicaLossAs503)]


class ReplicaLossAs503:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = replaced = False

        async def relay(message):
            nonlocal started, replaced
            if message["type"] == "http.response.start":
                started = True
                if message["status"] == 500 and not any(
                        k.lower() == SERVED_HEADER for k, _ in message.get("headers", [])):
                    replaced = True
                    await _send_503(send)
                    return
            if not replaced:
                await send(message)

        try:
            await self.app(scope, receive, relay)
        except Exception:
            if started:
                raise
        if not started:
            await _send_503(send)


async def _send_503(send) -> None:
    await send({"type": "http.response.start", "status": 503,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(REPLICA_LOSS_BODY)).encode()),
                            (b"retry-after", b"1")]})
    await send({"type": "http.response.body", "body": REPLICA_LOSS_BODY})


def mark_served(send):
    """send, adding SERVED_HEADER to the response start."""

    async def marked(message):
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), (SERVED_HEADER, b"1")]}
        await send(message)

    return marked
