"""Gathering single calls into batches, outside a Ray Serve replica (where ``@serve.batch``
cannot run): the same contract as ``serve.batch`` with one batch at a time. The first
call of a batch waits at most ``batch_wait_timeout_s`` for others; a batch holds at most
``max_batch_size`` (as counted by ``batch_size_fn``) unless one call alone is larger."""

from __future__ import annotations

import asyncio


def local_batch(max_batch_size: int, batch_wait_timeout_s: float, batch_size_fn=len):
    """A decorator: ``async fn(list of items) -> list of results`` becomes ``async
    call(item) -> result``."""

    def decorate(fn):
        return _Gatherer(fn, max_batch_size, batch_wait_timeout_s, batch_size_fn)

    return decorate


class _Gatherer:
    def __init__(self, fn, max_size: int, wait_s: float, size_fn):
        self._fn, self._max, self._wait, self._size = fn, max_size, wait_s, size_fn
        self._queue: asyncio.Queue | None = None
        self._worker: asyncio.Task | None = None

    async def __call__(self, item):
        if self._queue is None or self._worker is None or self._worker.done():
            self._queue = asyncio.Queue()
            self._worker = asyncio.get_running_loop().create_task(self._run())
        future = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((item, future))
        return await future

    async def _run(self):
        queue = self._queue
        loop = asyncio.get_running_loop()
        held = None  # an item that did not fit the previous batch
        while True:
            batch = [held] if held is not None else [await queue.get()]
            held = None
            deadline = loop.time() + self._wait
            while self._size([i for i, _ in batch]) < self._max:
                try:
                    if queue.empty():
                        left = deadline - loop.time()
                        if left <= 0:
                            break
                        nxt = await asyncio.wait_for(queue.get(), left)
                    else:
                        nxt = queue.get_nowait()
                except asyncio.TimeoutError:
                    break
                if self._size([i for i, _ in batch] + [nxt[0]]) > self._max:
                    held = nxt
                    break
                batch.append(nxt)
            live = [(i, f) for i, f in batch if not f.done()]
            if not live:
                continue
            try:
                results = await self._fn([i for i, _ in live])
            except Exception as err:  # noqa: BLE001 (handed to every caller of the batch)
                for _, f in live:
                    if not f.done():
                        f.set_exception(err)
                continue
            for (_, f), r in zip(live, results):
                if not f.done():
                    f.set_result(r)
