"""gather.local_batch: each caller gets its own item's result, batches stay within the
bound (a single larger item runs alone), one batch at a time, and a failing batch fails
only its own callers."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcore.serve.gather import local_batch


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 9), min_size=1, max_size=40),
       max_size=st.integers(1, 12), wait_ms=st.sampled_from([0.0, 1.0, 5.0]))
def test_every_caller_gets_its_result_and_batches_stay_bounded(sizes, max_size, wait_ms):
    batches, running = [], [0]

    async def work(items):
        running[0] += 1
        assert running[0] == 1  # one batch at a time
        batches.append([len(i) for i in items])
        await asyncio.sleep(0)
        running[0] -= 1
        return [("done", i) for i in items]

    call = local_batch(max_size, wait_ms / 1e3, lambda items: sum(map(len, items)))(work)

    async def main():
        items = [tuple(range(n)) + (k,) for k, n in enumerate(sizes)]
        return items, await asyncio.gather(*(call(i) for i in items))

    items, results = asyncio.run(main())
    assert results == [("done", i) for i in items]
    assert sorted(n for b in batches for n in b) == sorted(n + 1 for n in sizes)
    for b in batches:
        assert sum(b) <= max_size or len(b) == 1


def test_concurrent_calls_are_gathered():
    seen = []

    async def work(items):
        seen.append(len(items))
        return [i * 2 for i in items]

    call = local_batch(64, 0.05, len)(work)

    async def main():
        return await asyncio.gather(*(call(i) for i in range(20)))

    assert asyncio.run(main()) == [i * 2 for i in range(20)]
    assert max(seen) > 1


def test_a_failing_batch_fails_its_callers_and_the_next_batch_runs():
    async def work(items):
        if "bad" in items:
            raise ValueError("bad batch")
        return items

    call = local_batch(1, 0.0, len)(work)

    async def main():
        return await asyncio.gather(call("bad"), call("good"), return_exceptions=True)

    bad, good = asyncio.run(main())
    assert isinstance(bad, ValueError) and good == "good"
    with pytest.raises(ValueError):
        asyncio.run(call("bad"))


def test_calls_that_arrive_during_a_batch_run_next_without_waiting_again():
    """The wait is for an idle gatherer: here it is far longer than the test may take, yet
    the calls queued behind a running batch run as soon as it ends (and a full batch does
    not wait at all)."""
    batches = []

    async def main():
        release = asyncio.Event()

        async def work(items):
            batches.append(list(items))
            if items == ["a", "b"]:
                await release.wait()
            return items

        call = local_batch(2, 3600.0, len)(work)
        first = [asyncio.ensure_future(call(x)) for x in "ab"]
        while not batches:
            await asyncio.sleep(0)
        later = [asyncio.ensure_future(call(x)) for x in "cde"]
        await asyncio.sleep(0)
        release.set()
        return await asyncio.wait_for(asyncio.gather(*first, *later), 60)

    assert asyncio.run(main()) == list("abcde")
    assert batches == [["a", "b"], ["c", "d"], ["e"]]


def test_a_batch_without_a_result_for_each_call_fails_its_callers():
    async def work(items):
        return items[:1]

    call = local_batch(4, 0.01, len)(work)

    async def main():
        return await asyncio.gather(call(1), call(2), return_exceptions=True)

    assert all(isinstance(r, RuntimeError) for r in asyncio.run(main()))


def test_a_lone_callers_calls_do_not_wait_and_a_batch_waits_only_to_refill():
    """The wait (an hour here) is kept only after a batch of more than one call, and only
    until as many calls as that batch held are queued: calls made one after another run at
    once; calls made in the same turn of the event loop share a batch; after that batch of
    two, a lone call waits, and a second one starts them although the batch (of at most 8)
    is not full."""
    batches = []

    async def work(items):
        batches.append(list(items))
        return items

    async def main():
        call = local_batch(8, 3600.0, len)(work)
        alone = [await asyncio.wait_for(call(x), 60) for x in "ab"]
        together = await asyncio.wait_for(asyncio.gather(call("c"), call("d")), 60)
        waiting = asyncio.ensure_future(call("e"))
        for _ in range(20):
            await asyncio.sleep(0)
        pending = not waiting.done()
        refilled = await asyncio.wait_for(asyncio.gather(waiting, call("f")), 60)
        return alone, together, pending, refilled

    alone, together, pending, refilled = asyncio.run(main())
    assert (alone, together, refilled) == (["a", "b"], ["c", "d"], ["e", "f"])
    assert pending  # it waited for a second call
    assert batches == [["a"], ["b"], ["c", "d"], ["e", "f"]]
