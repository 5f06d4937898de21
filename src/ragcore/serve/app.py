"""The routes of ``ragcore serve`` as a FastAPI app over a Backend: POST /search, POST
/documents, DELETE /documents, GET /documents/{id}, GET /health, GET /stats and the
OpenAPI schema at /openapi.json. Every refusal is a 4xx (or 503) JSON body
``{"error": message, "field": name}``."""

from __future__ import annotations

import time

from . import limits
from .guards import Guard
from ..errors import ServiceError
from .request_errors import body, refusal
from .schemas import AddRequest, DeleteRequest, SearchRequest
from .answer_json import dumps


def build_app(backend, api_key: str | None = None, key_digest: bytes | None = None,
              max_body: int = limits.MAX_BODY_BYTES):
    """An ASGI app serving backend: the guard (API key, body bound, UTF-8; it answers
    well-formed searches itself) in front of the FastAPI app of the routes (its ``.app``).
    api_key (or key_digest, its guards.key_digest): required on every route but /health."""
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException
    from starlette.responses import JSONResponse, Response

    from importlib.metadata import PackageNotFoundError, version

    from .guards import key_digest as digest_of

    if api_key is not None:
        if not api_key:
            raise ValueError("api_key: an empty key; pass None for no key")
        key_digest = digest_of(api_key)
    try:
        release = version("ragcore-engine")
    except PackageNotFoundError:  # run from a checkout without installing
        release = "unknown"
    app = FastAPI(title="ragcore", version=release, docs_url=None, redoc_url=None,
                  description="A ragcore Collection: hybrid, dense and BM25 search over JSON.")
    stats = backend.stats

    async def timed(route: str, call):
        t = time.perf_counter()
        status = 200
        try:
            return await call
        except ServiceError as err:
            status = err.status
            raise
        finally:
            stats.request(route, time.perf_counter() - t, status)

    async def run_search(req: SearchRequest) -> dict:
        return await timed("search", backend.search(req))

    @app.post("/search")
    async def search(req: SearchRequest):
        """Searches one query (``query``: ``results`` is a list of matches) or several
        (``queries``: a list of such lists)."""
        return Response(dumps(await run_search(req)), media_type="application/json")

    @app.post("/documents")
    async def add_documents(req: AddRequest):
        """Adds documents (``upsert``: replaces those whose id exists); answers their ids
        once they are searchable."""
        return JSONResponse(await timed("add", backend.add(req)))

    @app.delete("/documents")
    async def delete_documents(req: DeleteRequest):
        """Deletes documents by id (``missing_ok``: skip unknown ids)."""
        return JSONResponse(await timed("delete", backend.delete(req)))

    @app.get("/documents/{doc_id}")
    async def get_document(doc_id: str):
        """A document's text and metadata (404 if there is none with this id)."""
        if len(doc_id) > limits.MAX_ID_CHARS:
            raise refusal(422, "id", f"an id longer than {limits.MAX_ID_CHARS} characters")
        return JSONResponse(await timed("get", backend.get(doc_id)))

    @app.get("/health")
    async def health():
        """Answers while the service runs (no API key needed)."""
        return {"status": "ok"}

    @app.get("/stats")
    async def service_stats():
        """This replica's counts: documents, requests, errors, the batch sizes it ran and
        its search latency percentiles (milliseconds) over recent requests."""
        return JSONResponse(await backend.summary())

    @app.exception_handler(ServiceError)
    async def refused(request: Request, err: ServiceError):
        return JSONResponse(body(err), status_code=err.status)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, err: RequestValidationError):
        problems = [{"field": "body" if e.get("type") == "json_invalid"
                     else _field(e.get("loc", ())), "message": e.get("msg", "")}
                    for e in err.errors()]
        first = problems[0] if problems else {"field": "body", "message": "invalid"}
        stats.request("invalid", 0.0, 422)
        return JSONResponse({"error": first["message"], "field": first["field"],
                             "problems": problems}, status_code=422)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, err: HTTPException):
        field = "path" if err.status_code in (404, 405) else "body"
        return JSONResponse({"error": str(err.detail), "field": field},
                            status_code=err.status_code, headers=err.headers)

    # The guard goes in front of the framework (not inside its middleware stack): a search
    # it answers passes through nothing else.
    return Guard(app, key_digest=key_digest, max_body=max_body, search=run_search)


_TYPE_TAGS = {"str", "int", "float", "bool", "list", "dict", "none", "json-or-python"}


def _field(loc) -> str:
    """The request field a pydantic error location names, without the union members'
    type tags pydantic puts in it (``fusion.literal[...]`` -> ``fusion``)."""
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "path", "query"):
        parts = parts[1:]
    named = [p for p in parts if p not in _TYPE_TAGS and "[" not in p and "-" not in p
             and not p[:1].isupper()]
    return ".".join(named) or "body"
