"""A middleware for Ray Serve's HTTP proxy: a request whose replica died under it (the
proxy answers 500 with Ray's error text) is answered 503 with a JSON body instead, so a
client can tell "retry" from a fault of the service. Responses the app itself made carry
SERVED_HEADER and pass unchanged. Installed through Ray Serve's
RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH (``proxy_middlewares``)."""

from __future__ import annotations

import json

SERVED_HEADER = b"x-ragcore"
_BODY = json.dumps({"error": "the replica serving this request stopped; retry (the service "
                             "starts another)", "field": "service"}).encode()


def proxy_middlewares() -> list:
    from starlette.middleware import Middleware

    return [Middleware(ReplicaLossAs503)]


class ReplicaLossAs503:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        replaced = False

        async def relay(message):
            nonlocal replaced
            if message["type"] == "http.response.start" and message["status"] == 500 and \
                    not any(k.lower() == SERVED_HEADER for k, _ in message.get("headers", [])):
                replaced = True
                await send({"type": "http.response.start", "status": 503,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(_BODY)).encode()),
                                        (b"retry-after", b"1")]})
                await send({"type": "http.response.body", "body": _BODY})
                return
            if replaced:
                return
            await send(message)

        return await self.app(scope, receive, relay)


def mark_served(send):
    """send, adding SERVED_HEADER to the response start."""

    async def marked(message):
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), (SERVED_HEADER, b"1")]}
        await send(message)

    return marked
