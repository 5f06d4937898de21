"""Sub-batches of one encode call on several threads: the vectors equal the
one-thread path's bit for bit, the calls really run side by side, and one-call
encodes (queries) and batching by count keep the main session."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from ragcore.encoders import BiEncoder, derived, models  # noqa: E402
from ragcore.encoders._parallel import map_in_order, usable_cores  # noqa: E402

POOL = [
    "How do I open a file for reading?",
    "q",
    "Sub-batches run on one core each, side by side.",
    "Çà et là: naïve café, 東京 and ½ of 3.14159",
    "The tokenizer splits words into word pieces before the model sees them. " * 30,  # > 256 tokens
    "def f(x):\n    return x * 2  # doubles",
    "one two three four five six seven eight nine ten " * 4,
    "Dense retrieval maps queries and passages to vectors; BM25 counts their words.",
    "token budget",
    "A hash table maps keys to values with expected constant-time lookups. " * 5,
]


@pytest.fixture(scope="module")
def derived_models(tmp_path_factory):
    """The fused fp32 graph and its int8 quantisation, derived into a fresh cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAGCORE_CACHE", str(tmp_path_factory.mktemp("parallel_cache")))
        yield {"fp32": derived.ensure(models.FUSED_NAME),
               "int8": derived.ensure(models.FUSED_INT8_NAME)}


@pytest.fixture(scope="module")
def fp32_pair(derived_models):
    """(one-thread encoder, two-thread encoder) of the fused fp32 graph."""
    path = derived_models["fp32"]
    return (BiEncoder(path, providers="cpu", threads=1),
            BiEncoder(path, providers="cpu", threads=2))


@settings(max_examples=12, deadline=None)
@given(picks=st.lists(st.integers(0, len(POOL) - 1), min_size=1, max_size=24),
       batch_size=st.integers(1, 8), budget=st.one_of(st.none(), st.integers(8, 600)))
def test_two_threads_give_the_one_thread_bits(fp32_pair, picks, batch_size, budget):
    texts = [POOL[i] for i in picks]
    one, two = fp32_pair
    for encoder in fp32_pair:
        encoder.batch_size, encoder.token_budget = batch_size, budget
    want, got = one.encode(texts, warn=False), two.encode(texts, warn=False)
    np.testing.assert_array_equal(got, want)
    assert got.truncated == want.truncated == sum(i == 4 for i in picks)
    for a, b in zip(one.encode_tokens(texts), two.encode_tokens(texts)):
        np.testing.assert_array_equal(b, a)


def test_int8_one_text_per_call_gives_the_one_thread_bits(derived_models):
    """int8 sets its activation scales per call: the same sub-batches on other
    threads must still give the same bits."""
    one = BiEncoder(derived_models["int8"], providers="cpu", threads=1, batch_size=1)
    two = BiEncoder(derived_models["int8"], providers="cpu", threads=2, batch_size=1)
    np.testing.assert_array_equal(two.encode(POOL, warn=False), one.encode(POOL, warn=False))
    assert two._one_core_model is not None and one._one_core_model is None


def test_sub_batches_really_run_side_by_side(derived_models):
    """Every thread's first model call waits for another thread's: with one thread
    only, the barrier breaks and the encode fails."""
    encoder = BiEncoder(derived_models["fp32"], providers="cpu", threads=2, batch_size=1)
    encoder.encode(POOL[:2], warn=False)  # loads the one-core session
    session = encoder._one_core_model
    barrier, seen, run = threading.Barrier(2, timeout=30), set(), session.run

    def run_after_meeting(batch):
        if threading.get_ident() not in seen:
            seen.add(threading.get_ident())
            barrier.wait()
        return run(batch)

    session.run = run_after_meeting
    encoder.encode(POOL, warn=False)
    assert len(seen) == 2 and threading.get_ident() not in seen


def test_one_model_call_stays_on_the_main_session(derived_models):
    encoder = BiEncoder(derived_models["fp32"], providers="cpu", threads=2)
    encoder.encode(["a query"], warn=False)
    encoder.encode_tokens(POOL[:3])  # short texts: one sub-batch
    assert encoder._one_core_model is None
    sequential = BiEncoder(derived_models["fp32"], providers="cpu", threads=2, parallel_batches=False)
    sequential.encode(POOL, warn=False)
    assert sequential._one_core_model is None
    by_count = BiEncoder(derived_models["fp32"], providers="cpu", threads=2, token_budget=None,
                         batch_size=2)  # large padded calls: slower side by side
    by_count.encode(POOL, warn=False)
    assert by_count._one_core_model is None
    budgeted = BiEncoder(derived_models["fp32"], providers="cpu", threads=2, batch_size=2)
    budgeted.encode(POOL, warn=False)
    assert budgeted._one_core_model is not None


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_bad_parallel_batches(derived_models, value):
    with pytest.raises(TypeError, match="parallel_batches must be True or False"):
        BiEncoder(derived_models["fp32"], providers="cpu", parallel_batches=value)


@settings(max_examples=50, deadline=None)
@given(items=st.lists(st.integers(-50, 50), max_size=40), workers=st.integers(1, 4))
def test_map_in_order_keeps_the_order(items, workers):
    assert map_in_order(lambda x: (x, x * x), items, workers) == [(x, x * x) for x in items]


def test_map_in_order_raises_what_a_call_raised():
    def fail_on_three(x):
        if x == 3:
            raise ValueError("three")
        return x

    with pytest.raises(ValueError, match="three"):
        map_in_order(fail_on_three, list(range(6)), 2)


def test_usable_cores():
    assert 1 <= usable_cores()
