"""ASGI middleware in front of the routes: the API key (every path but /health), the body
bound and UTF-8. Each refusal is a JSON body naming the field, sent before any route runs."""

from __future__ import annotations

import hashlib
import hmac
import json

from pydantic import ValidationError

from ..errors import ServiceError
from .replica_loss import mark_served
from .request_errors import body as error_body
from .schemas import SearchRequest
from .answer_json import dumps

OPEN_PATHS = ("/health",)


def key_digest(api_key: str) -> bytes:
    """What the guard keeps of a key (deployments carry this, not the key)."""
    return hashlib.sha256(api_key.encode("utf-8")).digest()


class Guard:
    """key_digest: None (no key), or key_digest(the key): requests must then carry the key
    as ``Authorization: Bearer KEY`` or ``X-API-Key: KEY``; compared in constant time."""

    def __init__(self, app, key_digest: bytes | None, max_body: int, search=None):
        self.app, self.key_digest, self.max_body = app, key_digest, max_body
        self.search = search  # see _answer_search

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        send = mark_served(send)
        headers = dict(scope.get("headers") or [])
        if self.key_digest is not None and scope["path"] not in OPEN_PATHS \
                and not self._authorized(headers):
            return await _refuse(send, 401, "api_key", "a valid API key is needed: "
                                 "Authorization: Bearer KEY or X-API-Key: KEY",
                                 [(b"www-authenticate", b"Bearer")])
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            return await _refuse(send, 413, "body", f"the body is larger than {self.max_body} "
                                 "bytes" if length.isdigit() else "a bad Content-Length")
        body, more = [], True
        size = 0
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return await _refuse(send, 413, "body", f"the body is larger than "
                                     f"{self.max_body} bytes")
            body.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(body)
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as err:
            return await _refuse(send, 400, "body", f"the body is not valid UTF-8 (byte "
                                 f"{err.start})")
        try:
            scope["path"].encode("utf-8")
        except UnicodeEncodeError:
            return await _refuse(send, 400, "path", "the path is not valid UTF-8")
        if self.search is not None and scope["path"] == "/search" and \
                scope.get("method") == "POST" and await self._answer_search(body, send):
            return None
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)

    async def _answer_search(self, body: bytes, send) -> bool:
        """POST /search with a valid body, answered here, without the framework's routing:
        the body parsed and checked by the model in one step (pydantic-core's JSON parser,
        which takes less per request than parsing with orjson and checking by hand). False
        for a body that does not validate: the route then refuses it as every other route
        does."""
        try:
            req = SearchRequest.model_validate_json(body)
        except ValidationError:
            return False
        fault = None
        try:
            status, data = 200, dumps(await self.search(req))
        except ServiceError as err:
            status, data = err.status, dumps(error_body(err))
        except Exception as err:  # noqa: BLE001 (answered 500, then raised for the log)
            status, data, fault = 500, dumps({"error": "internal error", "field": "service"}), err
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(data)).encode())]})
        await send({"type": "http.response.body", "body": data})
        if fault is not None:
            raise fault
        return True

    def _authorized(self, headers: dict) -> bool:
        given = headers.get(b"x-api-key")
        auth = headers.get(b"authorization")
        if given is None and auth is not None and auth[:7].lower() == b"bearer ":
            given = auth[7:].strip()
        if given is None:
            return False
        return hmac.compare_digest(hashlib.sha256(given).digest(), self.key_digest)


async def _refuse(send, status: int, field: str, message: str, extra_headers=()):
    body = json.dumps({"error": message, "field": field}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *extra_headers]})
    await send({"type": "http.response.body", "body": body})
