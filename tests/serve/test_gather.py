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
