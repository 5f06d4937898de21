"""Gathering single calls into batches, one batch at a time: the contract of Ray Serve's
``@serve.batch`` with ``max_concurrent_batches=1``, at a smaller cost per call (no timer
task and no metric per arrival). A batch holds at most ``max_batch_size`` (as counted by
``batch_size_fn``) unless one call alone is larger. When no batch is running, the first
call waits at most ``batch_wait_timeout_s`` for others, but only if the last batch held
more than one call, and only until as many calls as it held are queued (or the batch
fills): closed-loop clients come back as many as they were, and a lone client's calls
would wait for nobody (each runs once the calls made in the same turn of the event loop
have joined it). Calls that arrive while a batch runs go in the next one,
which starts as soon as it ends (they have waited already).
"""

from __future__ import annotations

import asyncio
import collections


def local_batch(max_batch_size: int, batch_wait_timeout_s: float, batch_size_fn=len):
    """A decorator: ``async fn(list of items) -> list of results`` becomes ``async
    call(item) -> result``."""

    def decorate(fn):
        return _Gatherer(fn, max_batch_size, batch_wait_timeout_s, batch_size_fn)

    return decorate


class _Gatherer:
    def __init__(self, fn, max_size: int, wait_s: float, size_fn):
        self._fn, self._max, self._wait, self._size = fn, max_size, wait_s, size_fn
        self._loop = None
        self._reset()

    def _reset(self) -> None:
        self._queue = collections.deque()  # (item, its size, its future)
        self._queued = 0                   # the sum of their sizes
        self._running = False
        self._timer = None
        self._last_calls = 0               # how many calls the last batch held

    async def __call__(self, item):
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # (a new event loop: nothing of the old one carries over)
            self._loop = loop
            self._reset()
        future = loop.create_future()
        size = self._size([item])
        self._queue.append((item, size, future))
        self._queued += size
        if not self._running:
            if self._queued >= self._max or self._wait <= 0 or \
                    1 < self._last_calls <= len(self._queue):
                self._start()
            elif self._timer is None and self._last_calls > 1:
                self._timer = loop.call_later(self._wait, self._start)
            elif self._timer is None:  # no sign of concurrent callers: do not wait for them
                self._timer = loop.call_soon(self._start)
        return await future

    def _start(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._running:
            return
        batch, size = [], 0
        while self._queue:
            item, n, future = self._queue[0]
            if batch and size + n > self._max:
                break
            self._queue.popleft()
            self._queued -= n
            if not future.done():  # (a caller that went away)
                batch.append((item, future))
                size += n
        if batch:
            self._running = True
            self._last_calls = len(batch)
            self._loop.create_task(self._run(batch))

    async def _run(self, batch: list) -> None:
        try:
            results = await self._fn([item for item, _ in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"a batch of {len(batch)} calls gave {len(results)} results")
        except Exception as err:  # noqa: BLE001 (handed to every caller of the batch)
            for _, future in batch:
                if not future.done():
                    future.set_exception(err)
        else:
            for (_, future), result in zip(batch, results):
                if not future.done():
                    future.set_result(result)
        finally:
            self._running = False
            if self._queue:
                self._start()
