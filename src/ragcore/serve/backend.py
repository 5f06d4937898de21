"""What the routes call: a Searcher (reads, batched) and a writer (writes), local or
behind a Ray Serve handle."""

from __future__ import annotations

import asyncio

from ..distributed import is_sharded_collection
from .request_errors import from_reply, refusal
from .schemas import AddRequest, DeleteRequest, SearchRequest
from .searcher import Searcher


class Backend:
    """searcher: a Searcher. writer: anything with ``async add(...)`` and ``async
    delete(...)`` answering Writer's dicts (LocalWriter, or a handle's wrapper)."""

    def __init__(self, searcher: Searcher, writer):
        self.searcher = searcher
        self.writer = writer
        self.stats = searcher.stats

    async def search(self, req: SearchRequest) -> dict:
        results = await self.searcher.search(req)
        return {"results": results[0]} if req.query is not None else {"results": results}

    async def get(self, raw_id: str) -> dict:
        try:
            found = await self.searcher.get(raw_id)
            if found is None and _is_int(raw_id):  # a collection of int ids
                found = await self.searcher.get(int(raw_id))
        except (ValueError, TypeError) as err:
            raise refusal(422, "id", str(err)) from err
        if found is None:
            raise refusal(404, "id", f"no document with id {raw_id!r}")
        return found

    async def add(self, req: AddRequest) -> dict:
        if req.ids is not None and len(req.ids) != len(req.texts):
            raise refusal(422, "ids", f"{len(req.ids)} ids for {len(req.texts)} texts")
        if req.upsert and req.ids is None:
            raise refusal(422, "ids", "upsert needs ids (the documents to replace or add)")
        return from_reply(await self.writer.add(req.texts, req.ids, req.metadata,
                                                req.embeddings, req.upsert))

    async def delete(self, req: DeleteRequest) -> dict:
        return from_reply(await self.writer.delete(req.ids, req.missing_ok))

    async def summary(self) -> dict:
        return {"documents": await self.searcher.count(), **self.stats.snapshot()}


class LocalWriter:
    """A Writer in this process, its calls run in a worker thread."""

    def __init__(self, path, encoder=None):
        from .writer import Writer

        self._writer = Writer(path, encoder=encoder)

    async def add(self, *args) -> dict:
        return await asyncio.to_thread(self._writer.add, *args)

    async def delete(self, *args) -> dict:
        return await asyncio.to_thread(self._writer.delete, *args)

    def close(self) -> None:
        self._writer.close()


class LocalBackend(Backend):
    """Reader and writer in this process (no Ray cluster): ``build_app(LocalBackend(path))``
    serves a collection from any ASGI server, or tests the routes in-process. A
    ShardedCollection needs Ray: ``ragcore serve`` serves it."""

    def __init__(self, path, max_batch: int = 64, batch_wait_ms: float = 2.0, encoder=None):
        if is_sharded_collection(path):
            raise ValueError(f"path: {path} holds a ShardedCollection, whose shards live in "
                             "Ray actors; serve it with ragcore serve (Ray Serve)")
        writer = LocalWriter(path, encoder=encoder)
        try:
            searcher = Searcher(path, max_batch=max_batch, batch_wait_ms=batch_wait_ms,
                                encoder=encoder)
        except BaseException:
            writer.close()
            raise
        super().__init__(searcher, writer)

    def close(self) -> None:
        self.searcher.close()
        self.writer.close()


def _is_int(text: str) -> bool:
    body = text[1:] if text[:1] == "-" else text
    return body.isascii() and body.isdigit() and len(body) <= 19
