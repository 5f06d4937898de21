"""The read side of the service: a read-only Collection whose searches are gathered
(gather.local_batch) into one batched Collection.search per group of requests that share
their options; documents looked up by id."""

from __future__ import annotations

import asyncio
import inspect
import json
from dataclasses import dataclass

import numpy as np

from ..errors import ServiceError
from .request_errors import refusal, search_refusal
from .schemas import SearchRequest
from .stats import ServiceStats


@dataclass(frozen=True)
class SearchJob:
    """One request's queries (and vectors, if the client sent them) and the options
    that decide which batched call it may join (``key``)."""

    key: tuple
    queries: list
    vectors: object  # float32 [nq, dim] or None
    request: SearchRequest


def make_job(req: SearchRequest) -> SearchJob:
    """The request's job, or a ServiceError naming the field that is missing or at odds."""
    if (req.query is None) == (req.queries is None):
        raise refusal(422, "query", "give exactly one of query (a string) and queries "
                                         "(a list of strings)")
    queries = [req.query] if req.query is not None else list(req.queries)
    if req.vector is not None and req.vectors is not None:
        raise refusal(422, "vectors", "give at most one of vector and vectors")
    if req.vector is not None and req.query is None:
        raise refusal(422, "vector", "vector goes with query; use vectors with queries")
    if req.vectors is not None and req.queries is None:
        raise refusal(422, "vectors", "vectors goes with queries; use vector with query")
    vectors = None
    rows = [req.vector] if req.vector is not None else req.vectors
    if rows is not None:
        field = "vector" if req.vector is not None else "vectors"
        if len(rows) != len(queries):
            raise refusal(422, field, f"{len(rows)} vectors for {len(queries)} queries")
        if len({len(r) for r in rows}) != 1:
            raise refusal(422, field, "the vectors differ in length")
        with np.errstate(over="ignore", invalid="ignore"):  # beyond float32: inf, refused
            vectors = np.array(rows, dtype=np.float32)
        if not np.isfinite(vectors).all():
            raise refusal(422, field, "a vector has a NaN or infinite entry (or one "
                                           "beyond float32's range)")
    fusion = req.fusion if req.fusion is None or isinstance(req.fusion, str) \
        else req.fusion.model_dump(exclude_none=True)
    key = (req.k, req.k0, req.mode, req.by, vectors is not None, vectors.shape[1] if
           vectors is not None else 0, _canonical(req.filter), _canonical(fusion))
    return SearchJob(key, queries, vectors, req)


def _canonical(value):
    """value (None, a str, or JSON data) as a hashable key that equal values share."""
    return value if value is None or isinstance(value, str) else json.dumps(value, sort_keys=True)


def job_size(jobs) -> int:
    return sum(len(j.queries) for j in jobs)


class Searcher:
    """A read-only Collection searched in batches.

    max_batch: the most queries in one batched call; batch_wait_ms: at most how long the
    first request of a batch waits for others while none runs (gather.local_batch waits
    only after a batch of more than one request). max_batch 1 is one-request-at-a-time
    serving. batch: the gathering decorator (by default gather.local_batch; Ray Serve's
    ``serve.batch`` has the same contract but waits for every first request). collection: what is searched instead
    of path's Collection opened readonly (anything with Collection's search, get and
    count, called in a worker thread, or their coroutine versions, awaited: a
    ShardedCollection, or one held by another process); it is not closed here.
    """

    def __init__(self, path, max_batch: int = 64, batch_wait_ms: float = 2.0, encoder=None,
                 batch=None, collection=None):
        if batch is None:
            from .gather import local_batch as batch
        self._owned = collection is None
        if collection is None:
            from ..rag.collection import Collection

            collection = Collection.open(path, readonly=True, encoder=encoder)
        self.collection = collection
        # its search, get and count are coroutines (a collection held by another process)
        self._awaitable = inspect.iscoroutinefunction(collection.search)
        self.stats = ServiceStats()
        self.max_batch = max_batch
        self._batched = batch(max_batch_size=max_batch, batch_wait_timeout_s=batch_wait_ms / 1e3,
                              batch_size_fn=job_size)(self._run_batch)

    async def search(self, req: SearchRequest) -> list:
        """A list (one per query) of lists of matches (Match objects, or dicts without the
        text; answer_json.dumps writes either)."""
        job = make_job(req)
        if len(job.queries) > self.max_batch:  # larger than any batch: alone, at once
            outcome = (await self._run_batch([job]))[0]
        else:
            outcome = await self._batched(job)
        if isinstance(outcome, ServiceError):
            raise outcome
        return outcome

    async def _run_batch(self, jobs: list) -> list:
        self.stats.batch(job_size(jobs))
        if not self._awaitable:
            return await asyncio.to_thread(self._search_groups, jobs)
        out = [None] * len(jobs)  # a collection held elsewhere: its calls are awaited here
        for members, queries, vectors, req in _groups(jobs):
            try:
                results = await self.collection.search(queries, **_options(vectors, req))
            except Exception as err:
                _hand_out(out, jobs, members, req, _refused(err, vectors))
                continue
            _hand_out(out, jobs, members, req, results)
        return out

    def _search_groups(self, jobs: list) -> list:
        out = [None] * len(jobs)
        for members, queries, vectors, req in _groups(jobs):
            try:
                results = self.collection.search(queries, **_options(vectors, req))
            except Exception as err:
                _hand_out(out, jobs, members, req, _refused(err, vectors))
                continue
            _hand_out(out, jobs, members, req, results)
        return out

    async def get(self, doc_id) -> dict | None:
        found = await self._call(self.collection.get, [doc_id])
        if not found:
            return None
        doc = found[0]
        return {"id": doc.id, "text": doc.text, "metadata": doc.metadata}

    async def count(self) -> int:
        return await self._call(self.collection.count)

    async def _call(self, method, *args):
        if self._awaitable:
            return await method(*args)
        return await asyncio.to_thread(method, *args)

    def close(self) -> None:
        if self._owned:
            self.collection.close()


def _groups(jobs: list):
    """(positions in jobs, their queries, their vectors or None, the request whose options
    they share) for each group of jobs that one batched search answers."""
    groups = {}
    for i, job in enumerate(jobs):
        groups.setdefault(job.key, []).append(i)
    for members in groups.values():
        vectors = None if jobs[members[0]].vectors is None else \
            np.concatenate([jobs[i].vectors for i in members])
        yield (members, [q for i in members for q in jobs[i].queries], vectors,
               jobs[members[0]].request)


def _options(vectors, req: SearchRequest) -> dict:
    """Collection.search's options for the request's group."""
    fusion = req.fusion if req.fusion is None or isinstance(req.fusion, str) \
        else req.fusion.model_dump(exclude_none=True)
    options = {"k": req.k, "mode": req.mode, "filter": req.filter, "fusion": fusion,
               "by": req.by, "query_vector": vectors}
    if req.k0 is not None:
        options["k0"] = req.k0
    return options


def _refused(err: Exception, vectors) -> ServiceError:
    """The refusal a failed search answers; a fault of the service is raised again."""
    refused = search_refusal(err, vectors is not None)
    if refused is None:
        raise err
    return refused


def _hand_out(out: list, jobs: list, members: list, req, results) -> None:
    """Each member's share of its group's results (or the group's refusal) into out."""
    if isinstance(results, ServiceError):
        for i in members:
            out[i] = results
        return
    start = 0
    for i in members:
        n = len(jobs[i].queries)
        out[i] = [_matches(r, req.include_text) for r in results[start:start + n]]
        start += n


def _matches(results, include_text: bool) -> list:
    """The matches as the answer holds them: the Match objects themselves (answer_json.dumps
    writes their fields), or without their text."""
    if include_text:
        return list(results)
    return [{"id": m.id, "chunk_id": m.chunk_id, "position": m.position, "start": m.start,
             "end": m.end, "score": m.score, "metadata": m.metadata} for m in results]

