"""Sub-batches of one encode call on several threads: the vectors equal the
one-thread path's bit for bit, the calls really run side by side, and one-call
encodes (queries) and whole calls by count keep the main session; calls by count
cut into pieces of their rows give the whole calls' bits (fp32) or each piece's
own call (int8, whose activation scales are set per call), within the int8
accuracy bound of the whole calls."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from ragcore.encoders import BiEncoder, models  # noqa: E402
from ragcore.encoders.build import derived  # noqa: E402
from ragcore.encoders._batching import split_padded  # noqa: E402
from ragcore.encoders.bi_encoder import BY_COUNT_PIECE_TOKENS  # noqa: E402
from ragcore.encoders._parallel import map_in_order, usable_cores  # noqa: E402
from ragcore.encoders._text import TokenBatch  # noqa: E402

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
               "int8": derived.ensure(models.FUSED_INT8_BLOCKS_NAME)}


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
    whole_calls = BiEncoder(derived_models["fp32"], providers="cpu", threads=2, token_budget=None,
                            batch_size=2)  # whole padded calls: slower side by side
    whole_calls._rows_independent = False  # as for a graph whose texts may interact
    whole_calls.encode(POOL, warn=False)
    assert not whole_calls._cut_by_count() and whole_calls._one_core_model is None
    cut = BiEncoder(derived_models["fp32"], providers="cpu", threads=2, token_budget=None, batch_size=2)
    cut.encode(POOL, warn=False)  # pieces of the padded calls, side by side
    assert cut._cut_by_count() and cut._one_core_model is not None
    budgeted = BiEncoder(derived_models["fp32"], providers="cpu", threads=2, batch_size=2)
    budgeted.encode(POOL, warn=False)
    assert budgeted._one_core_model is not None


# ---- calls by count cut into pieces of their rows ------------------------------------


def whole_and_cut_encoders(path, lets_it_cut: str) -> tuple:
    """(whole padded calls, one thread; cut, one thread; cut, two threads) of path,
    calls by count; lets_it_cut: the attribute that allows the cut, off in the first."""
    whole, *cut = (BiEncoder(path, providers="cpu", threads=t, token_budget=None) for t in (1, 1, 2))
    setattr(whole, lets_it_cut, False)
    return whole, *cut


def at_batch_size(encoders: tuple, batch_size: int) -> tuple:
    """encoders at batch_size, checked to be (whole, cut, cut)."""
    for encoder in encoders:
        encoder.batch_size = batch_size
    whole, *cut = encoders
    assert not whole._cut_by_count() and all(c._cut_by_count() for c in cut)
    return whole, cut


@pytest.fixture(scope="module")
def whole_and_cut(derived_models):
    """{precision: (whole, cut, cut)}; fp32's whole one as for a graph whose texts may interact."""
    return {"fp32": whole_and_cut_encoders(derived_models["fp32"], "_rows_independent"),
            "int8": whole_and_cut_encoders(derived_models["int8"], "_rows_scaled_per_call")}


TEXTS_AND_BATCH_SIZE = given(picks=st.lists(st.integers(0, len(POOL) - 1), min_size=1, max_size=40),
                             batch_size=st.integers(1, 40))


@settings(max_examples=12, deadline=None)
@TEXTS_AND_BATCH_SIZE
def test_cut_calls_by_count_give_the_whole_calls_bits(whole_and_cut, picks, batch_size):
    texts = [POOL[i] for i in picks]
    whole, cut = at_batch_size(whole_and_cut["fp32"], batch_size)
    want = whole.encode(texts, warn=False)
    for encoder in cut:
        got = encoder.encode(texts, warn=False)
        np.testing.assert_array_equal(got, want)
        assert got.truncated == want.truncated
        for a, b in zip(whole.encode_tokens(texts), encoder.encode_tokens(texts)):
            np.testing.assert_array_equal(b, a)


def test_only_row_wise_graphs_and_their_int8_are_cut(derived_models):
    assert BiEncoder(derived_models["fp32"], providers="cpu")._rows_independent
    # int8 quantises each call's activations with one scale: its texts interact
    # through that scale only, so its calls are cut too (at other bits)
    int8 = BiEncoder(derived_models["int8"], providers="cpu", token_budget=None)
    assert not int8._rows_independent and int8._rows_scaled_per_call and int8._cut_by_count()
    bundled = BiEncoder(models.INT8_NAME, providers="cpu", token_budget=None)  # Reshape, Softmax ...
    assert not bundled._rows_independent and not bundled._rows_scaled_per_call
    assert not bundled._cut_by_count()
    # with a token budget nothing is cut: the budget already bounds the calls
    assert not BiEncoder(derived_models["fp32"], providers="cpu")._cut_by_count()


@settings(max_examples=10, deadline=None)
@TEXTS_AND_BATCH_SIZE
def test_int8_cut_calls_are_their_pieces_own_calls(whole_and_cut, picks, batch_size):
    texts = [POOL[i] for i in picks]
    whole, cut = at_batch_size(whole_and_cut["int8"], batch_size)
    # reference: each padded call by count cut by split_padded, each piece one model call
    want = np.empty((len(texts), whole.dim), np.float32)
    for rows, batch in whole._batches(texts):
        for piece_rows, piece in split_padded(rows, batch, BY_COUNT_PIECE_TOKENS):
            want[piece_rows] = whole._embed(whole.model, piece)
    whole_calls = whole.encode(texts, warn=False)
    for encoder in cut:
        got = encoder.encode(texts, warn=False)
        np.testing.assert_array_equal(got, want)
        assert got.truncated == whole_calls.truncated
        # other bits than whole calls. The recipe keeps int8 within INT8_MIN_COSINE of fp32
        # (on its check texts); two vectors each that close to fp32 are within the angle's
        # double of each other, cos(2 acos b) = 2 b^2 - 1. Comparing them to b itself was
        # wrong: picks [0, 0, 0, 1, 4, 7] at batch 6 gave 0.99496 while each was >= 0.9952
        # to fp32; batches of mixed texts measured down to 0.991.
        assert (got * whole_calls).sum(axis=1).min() >= 2 * derived.INT8_MIN_COSINE ** 2 - 1


def test_int8_check_covers_the_pieces(derived_models):
    """The kept int8 file passed its check on the check texts in pieces of one call
    by count (other bits than the whole call), whole and one text per call."""
    n = len(derived.CHECK_TEXTS)
    assert BiEncoder(derived_models["int8"], providers="cpu", token_budget=None,
                     batch_size=n)._cut_by_count()
    want, got = derived._encode(derived_models["fp32"]), derived._encode(derived_models["int8"])
    assert got.shape == (3 * n, want.shape[1])
    np.testing.assert_array_equal(want[:n], want[n:2 * n])  # fp32: pieces give the whole call's bits
    assert not np.array_equal(got[:n], got[n:2 * n])  # int8: the pieces were really run
    assert (want * got).sum(axis=1).min() >= derived.INT8_MIN_COSINE
    assert derived._check_int8(derived_models["fp32"], derived_models["int8"])["passed"]


@settings(max_examples=60, deadline=None)
@given(lengths=st.lists(st.integers(1, 300), min_size=1, max_size=40), max_tokens=st.integers(1, 2000))
def test_split_padded_keeps_every_row_at_the_batch_width(lengths, max_tokens):
    width, n = max(lengths), len(lengths)
    ids = np.arange(n * width, dtype=np.int64).reshape(n, width)
    batch = TokenBatch(ids, ids % 2, ids % 3, np.arange(n) % 2 == 0)
    rows = np.arange(100, 100 + n)
    pieces = split_padded(rows, batch, max_tokens)
    np.testing.assert_array_equal(np.concatenate([r for r, _ in pieces]), rows)
    for name in ("input_ids", "attention_mask", "token_type_ids", "truncated"):
        np.testing.assert_array_equal(np.concatenate([getattr(p, name) for _, p in pieces]),
                                      getattr(batch, name))
    for r, piece in pieces:
        assert piece.input_ids.shape == (len(r), width)
        assert len(r) == 1 or len(r) * width <= max_tokens
    assert all(len(r) == max(1, max_tokens // width) for r, _ in pieces[:-1])


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
