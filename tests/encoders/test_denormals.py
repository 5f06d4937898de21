"""The calling thread's subnormal flush (_core's FTZ/DAZ scope): numpy float32
products inside and outside the scope against the numpy reference of "flush", the
state restored after an exception and kept apart between threads, and ragcore's
CPU sessions running under it (masked softmax weights exactly 0)."""

from __future__ import annotations

import platform
import threading

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ragcore import _core
from ragcore.encoders import _denormals
from ragcore.encoders._denormals import denormals_flushed, flushed_denormals
from ragcore.reference.denormals import FLOAT32_SMALLEST_NORMAL, flush_subnormals, flushed_product

needs_flush = pytest.mark.skipif(not _core.denormal_flush_supported(),
                                 reason="no denormal flush on this processor")


@pytest.fixture(autouse=True)
def ieee_thread():
    """Each test starts with IEEE subnormals on this thread and leaves it so."""
    previous = _core.set_denormal_flush(False)
    yield
    assert not denormals_flushed(), "a test left the thread flushing"
    _core.restore_denormal_state(previous)


def bits(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def ieee_product(a, b) -> np.ndarray:
    """float32 a * b with IEEE subnormals (float64 holds the product exactly)."""
    return (a.astype(np.float64) * b.astype(np.float64)).astype(np.float32)


# Operand pairs whose products land around float32's smallest normal (2^-126):
# subnormal products, normal ones, and subnormal operands.
_pair = st.tuples(st.floats(1, 2, exclude_max=True), st.integers(-149, 40),
                  st.floats(1, 2, exclude_max=True), st.integers(-175, -95), st.booleans(), st.booleans())
pairs = st.lists(_pair, min_size=1, max_size=64)


def operands(drawn) -> tuple[np.ndarray, np.ndarray]:
    a = np.array([np.ldexp(ma, ea) * (-1 if sa else 1) for ma, ea, _, _, sa, _ in drawn]).astype(np.float32)
    b = np.array([np.ldexp(mb, s - ea) * (-1 if sb else 1) for _, ea, mb, s, _, sb in drawn])
    return a, np.clip(b, -3e38, 3e38).astype(np.float32)


def on_the_rounding_edge(a, b) -> bool:
    """Products within one subnormal step below 2^-126: x86 decides flushing after
    rounding, aarch64 before, so the reference leaves them out."""
    exact = np.abs(flush_subnormals(a).astype(np.float64) * flush_subnormals(b).astype(np.float64))
    tiny = float(FLOAT32_SMALLEST_NORMAL)
    return bool(((exact < tiny) & (exact >= tiny - 2.0 ** -149)).any())


# ---- the reference -----------------------------------------------------------------------

def test_flush_reference_on_worked_values():
    x = np.array([1e-45, -1e-45, 1e-39, -1.1e-38, FLOAT32_SMALLEST_NORMAL, -0.0, 0.0, 1.5,
                  np.inf, -np.inf, np.nan], dtype=np.float32)
    got = flush_subnormals(x)
    want = np.array([0.0, -0.0, 0.0, -0.0, FLOAT32_SMALLEST_NORMAL, -0.0, 0.0, 1.5, np.inf, -np.inf,
                     np.nan], dtype=np.float32)
    np.testing.assert_array_equal(bits(got), bits(want))  # signs of the zeros included
    # 2^-70 * 2^-70 is subnormal (2^-140): flushed; a subnormal operand reads as zero.
    assert bits(flushed_product(np.float32(2.0 ** -70), np.float32(-(2.0 ** -70)))) == bits(-0.0)
    assert flushed_product(np.float32(1e-40), np.float32(1e30)) == 0.0
    assert ieee_product(np.float32(1e-40), np.float32(1e30)) > 1e-11  # IEEE: a normal result


# ---- numpy float32 arithmetic in and out of the scope ------------------------------------

@needs_flush
def test_flush_is_supported_on_x86_64_and_aarch64():
    if platform.machine().lower() not in ("x86_64", "amd64", "aarch64", "arm64"):
        pytest.skip("another processor: the scope is a documented no-op")
    assert _core.denormal_flush_supported()


@needs_flush
@settings(max_examples=200, deadline=None)
@given(pairs)
def test_products_in_the_scope_are_flushed_and_ieee_outside(drawn):
    a, b = operands(drawn)
    assume(not on_the_rounding_edge(a, b))
    ieee = ieee_product(a, b)
    assume(((ieee != 0) & (np.abs(ieee) < FLOAT32_SMALLEST_NORMAL)).any() or
           ((a != 0) & (np.abs(a) < FLOAT32_SMALLEST_NORMAL)).any())
    with flushed_denormals():
        assert denormals_flushed()
        inside = a * b
        operand_back = a * np.float32(1.0)  # DAZ: a subnormal operand reads as zero
    outside = a * b
    np.testing.assert_array_equal(bits(inside), bits(flushed_product(a, b)))
    np.testing.assert_array_equal(bits(operand_back), bits(flush_subnormals(a)))
    np.testing.assert_array_equal(bits(outside), bits(ieee))
    np.testing.assert_array_equal(bits(a * np.float32(1.0)), bits(a))


@needs_flush
def test_state_is_restored_after_an_exception():
    tiny = np.float32(2.0 ** -70)
    with pytest.raises(RuntimeError, match="inside"):
        with flushed_denormals():
            assert tiny * tiny == 0.0
            raise RuntimeError("inside")
    assert not denormals_flushed()
    assert tiny * tiny == np.float32(2.0 ** -140)


@needs_flush
def test_scopes_nest_and_a_flushing_thread_stays_flushing():
    with flushed_denormals():
        with flushed_denormals():
            assert denormals_flushed()
        assert denormals_flushed()  # the inner exit put back the outer scope's state
    assert not denormals_flushed()
    previous = _core.set_denormal_flush(True)
    try:
        with flushed_denormals():
            pass
        assert denormals_flushed()  # it was flushing before the scope: still is
    finally:
        _core.restore_denormal_state(previous)


@needs_flush
def test_the_scope_is_the_calling_thread_s_only():
    tiny = np.float32(2.0 ** -70)
    entered, checked, seen = threading.Event(), threading.Event(), {}

    def other():
        entered.wait(10)
        seen["other_while_main_flushes"] = (denormals_flushed(), tiny * tiny)
        with flushed_denormals():
            seen["other_in_its_scope"] = tiny * tiny
            checked.set()
            # main leaves its scope meanwhile; this thread's stays
            seen["other_after_main_left"] = (denormals_flushed(), tiny * tiny)
        seen["other_after"] = denormals_flushed()

    thread = threading.Thread(target=other)
    thread.start()
    with flushed_denormals():
        entered.set()
        checked.wait(10)
        seen["main_in_scope"] = tiny * tiny
    seen["main_after"] = (denormals_flushed(), tiny * tiny)
    thread.join(10)
    subnormal = np.float32(2.0 ** -140)
    assert seen["other_while_main_flushes"] == (False, subnormal)
    assert seen["other_in_its_scope"] == 0.0 and seen["main_in_scope"] == 0.0
    assert seen["other_after_main_left"][0] and seen["other_after_main_left"][1] == 0.0
    assert seen["main_after"] == (False, subnormal) and seen["other_after"] is False


@needs_flush
def test_restore_takes_only_the_flush_bits_of_any_value():
    """A crafted value cannot change rounding or unmask exceptions: all bits set flushes,
    and arithmetic otherwise stays IEEE round-to-nearest with exceptions masked."""
    third = np.float32(1) / np.float32(3)
    previous = _core.set_denormal_flush(False)
    try:
        _core.restore_denormal_state(2**64 - 1)
        assert denormals_flushed()
        assert np.float32(1) / np.float32(3) == third  # rounding mode unchanged
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            assert np.float32(1) / np.float32(0) == np.inf  # no trap: masks unchanged
            assert np.float32(3e38) * np.float32(10) == np.inf
        _core.restore_denormal_state(0)
        assert not denormals_flushed()
    finally:
        _core.restore_denormal_state(previous)
    for bad in (-1, 2**64, "1", None):
        with pytest.raises(TypeError):
            _core.restore_denormal_state(bad)
    with pytest.raises(TypeError):
        _core.set_denormal_flush("yes")


def test_keep_denormals_reads_the_environment(monkeypatch):
    monkeypatch.delenv(_denormals.KEEP_DENORMALS_ENV, raising=False)
    assert not _denormals.keep_denormals()
    for value, keep in (("1", True), ("yes", True), ("0", False), ("", False), (" 0 ", False)):
        monkeypatch.setenv(_denormals.KEEP_DENORMALS_ENV, value)
        assert _denormals.keep_denormals() is keep


# ---- ragcore's CPU sessions ----------------------------------------------------------------

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from ragcore.encoders import _onnx  # noqa: E402
from ragcore.encoders.build import bert_graph  # noqa: E402
from ragcore.encoders._text import TokenBatch  # noqa: E402

from _random_bert import random_bert  # noqa: E402


def padded_batch(rng, lengths, vocab=50):
    width = max(lengths)
    mask = (np.arange(width)[None] < np.array(lengths)[:, None]).astype(np.int64)
    ids = rng.integers(1, vocab, mask.shape) * mask
    return TokenBatch(ids, mask, np.zeros_like(mask), np.zeros(len(lengths), bool))


class RecordingSession:
    """A session whose runs note whether the thread flushes, then run or raise."""

    def __init__(self, real, fail=False):
        self.real, self.fail, self.flushed = real, fail, []

    def _note(self):
        self.flushed.append(denormals_flushed())
        if self.fail:
            raise RuntimeError("run failed")

    def run(self, *args):
        self._note()
        return self.real.run(*args)

    def io_binding(self):
        return self.real.io_binding()

    def run_with_iobinding(self, binding):
        self._note()
        return self.real.run_with_iobinding(binding)


@needs_flush
@pytest.mark.parametrize("io_binding", [False, True])
def test_cpu_runs_flush_on_the_calling_thread_and_restore_it(tiny_bert, monkeypatch, io_binding):
    monkeypatch.delenv(_denormals.KEEP_DENORMALS_ENV, raising=False)
    model = _onnx.OnnxModel(tiny_bert, providers="cpu", threads=1, io_binding=io_binding)
    assert model.flush_denormals
    batch = padded_batch(np.random.default_rng(1), [3, 7])
    model.session = RecordingSession(model.session)
    model.run(batch)
    assert model.session.flushed == [True] and not denormals_flushed()
    model.session.fail = True
    with pytest.raises(RuntimeError, match="run failed"):
        model.run(batch)
    assert model.session.flushed == [True, True] and not denormals_flushed()


@needs_flush
def test_keep_denormals_turns_the_flush_off(tiny_bert, monkeypatch):
    monkeypatch.setenv(_denormals.KEEP_DENORMALS_ENV, "1")
    model = _onnx.OnnxModel(tiny_bert, providers="cpu", threads=1)
    assert not model.flush_denormals
    model.session = RecordingSession(model.session)
    model.run(padded_batch(np.random.default_rng(1), [3, 7]))
    assert model.session.flushed == [False]


@pytest.mark.parametrize("keep, expected", [(None, "1"), ("1", "")])
def test_cpu_sessions_ask_for_denormals_as_zero_on_their_pool_threads(tiny_bert, monkeypatch,
                                                                      keep, expected):
    if keep is None:
        monkeypatch.delenv(_denormals.KEEP_DENORMALS_ENV, raising=False)
    else:
        monkeypatch.setenv(_denormals.KEEP_DENORMALS_ENV, keep)
    seen = []
    real = ort.InferenceSession

    def recording(path, options, **kwargs):
        try:
            seen.append(options.get_session_config_entry("session.set_denormal_as_zero"))
        except Exception:  # onnxruntime raises when the entry was never set
            seen.append("")
        return real(path, options, **kwargs)

    monkeypatch.setattr(ort, "InferenceSession", recording)
    _onnx.OnnxModel(tiny_bert, providers="cpu", threads=2)
    assert seen == [expected]


def test_only_cpu_only_sessions_flush(monkeypatch):
    monkeypatch.delenv(_denormals.KEEP_DENORMALS_ENV, raising=False)
    assert _onnx.flushes_denormals([_onnx.CPU_PROVIDER])
    assert not _onnx.flushes_denormals(["CUDAExecutionProvider", _onnx.CPU_PROVIDER])


def softmax_session(flush: bool):
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("Softmax", ["scores"], ["weights"], axis=-1)], "softmax",
        [onnx.helper.make_tensor_value_info("scores", onnx.TensorProto.FLOAT, None)],
        [onnx.helper.make_tensor_value_info("weights", onnx.TensorProto.FLOAT, None)])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 13)])
    return ort.InferenceSession(model.SerializeToString(), _onnx.session_options(1, flush),
                                providers=[_onnx.CPU_PROVIDER])


@needs_flush
@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 6), width=st.integers(2, 300), masked=st.floats(0, 0.9),
       spread=st.floats(1, 120), seed=st.integers(0, 2**31))
def test_softmax_under_the_flush_is_the_ieee_softmax_flushed(rows, width, masked, spread, seed):
    """onnxruntime's Softmax with the thread flushing gives its IEEE weights with the
    subnormal ones flushed (scores spread up to 120 below the row's maximum reach
    float32's subnormal range), and weights of keys masked with -10000 exactly 0."""
    rng = np.random.default_rng(seed)
    scores = (-rng.random((rows, width)) * spread).astype(np.float32)
    padded = np.arange(width) >= max(1, int(width * (1 - masked)))
    scores[:, padded] -= 10000
    kept = softmax_session(False).run(None, {"scores": scores})[0]
    flushing = softmax_session(True)
    with flushed_denormals():
        flushed = flushing.run(None, {"scores": scores})[0]
    np.testing.assert_array_equal(bits(flushed), bits(flush_subnormals(kept)))
    assert (flushed[:, padded] == 0).all()


@needs_flush
def test_softmax_gives_subnormal_weights_without_the_flush():
    """The premise of the test above: IEEE weights 88-103 below the maximum are
    subnormal (so that test compares something)."""
    scores = np.array([[0.0, -90.0, -95.0, -100.0, -10000.0]], np.float32)
    kept = softmax_session(False).run(None, {"scores": scores})[0]
    if (kept[0, 1:4] == 0).all():
        # onnxruntime's Softmax kernel on some CPUs (AVX2 without AVX-512: an AMD Zen 3)
        # underflows these weights to 0 instead of rounding them to subnormals.
        pytest.skip("this CPU's onnxruntime Softmax gives no subnormal weights: the flush "
                    "tests compare no subnormal value here")
    assert ((kept[0, 1:4] > 0) & (kept[0, 1:4] < FLOAT32_SMALLEST_NORMAL)).all()
    with flushed_denormals():
        assert (softmax_session(True).run(None, {"scores": scores})[0][0, 1:] == 0).all()


def softmax_outputs_graph(seed):
    """A small BERT in standard operators with every attention Softmax an output."""
    weights, config = random_bert(np.random.default_rng(seed), layers=2, heads=2, head_size=8)
    model = bert_graph.fused_bert(weights, config, attention="standard")
    names = [node.output[0] for node in model.graph.node if node.op_type == "Softmax"]
    for name in names:
        model.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    assert len(names) == 2
    return model.SerializeToString()


@needs_flush
@settings(max_examples=15, deadline=None)
@given(lengths=st.lists(st.integers(1, 20), min_size=2, max_size=4), seed=st.integers(0, 2**31))
def test_masked_attention_weights_are_exactly_zero_when_flushed(lengths, seed):
    """In a BERT's attention, under the flush, the padded keys' weights are exactly 0
    (they are without it too: this guards the flush against breaking the mask), no
    weight is subnormal (what the flush adds), and the others move by rounding at most."""
    assume(min(lengths) < max(lengths))  # some padded keys
    graph = softmax_outputs_graph(seed)
    batch = padded_batch(np.random.default_rng(seed), lengths)
    feeds = {n: getattr(batch, n) for n in bert_graph.INPUTS}
    plain = ort.InferenceSession(graph, _onnx.session_options(1), providers=[_onnx.CPU_PROVIDER])
    flushing = ort.InferenceSession(graph, _onnx.session_options(1, denormals_as_zero=True),
                                    providers=[_onnx.CPU_PROVIDER])
    kept = plain.run(None, feeds)[1:]
    with flushed_denormals():
        flushed = flushing.run(None, feeds)[1:]
    padded_keys = batch.attention_mask[:, None, None, :] == 0  # [texts, 1, 1, keys]
    for weights_kept, weights_flushed in zip(kept, flushed):
        assert (weights_flushed[np.broadcast_to(padded_keys, weights_flushed.shape)] == 0).all()
        assert not ((weights_flushed != 0) & (np.abs(weights_flushed) < FLOAT32_SMALLEST_NORMAL)).any()
        np.testing.assert_allclose(weights_flushed, weights_kept, rtol=0, atol=1e-6)


@needs_flush
def test_flushed_session_equals_the_unflushed_one_on_the_contrib_graph(tiny_bert, monkeypatch):
    batch = padded_batch(np.random.default_rng(3), [2, 9, 17, 5])
    monkeypatch.setenv(_denormals.KEEP_DENORMALS_ENV, "1")
    kept = _onnx.OnnxModel(tiny_bert, providers="cpu", threads=1).run(batch)
    monkeypatch.delenv(_denormals.KEEP_DENORMALS_ENV)
    flushed = _onnx.OnnxModel(tiny_bert, providers="cpu", threads=1).run(batch)
    real = batch.attention_mask.astype(bool)
    np.testing.assert_allclose(flushed[real], kept[real], rtol=0, atol=1e-6)


FIRST_SESSION = """
import sys
import onnxruntime as ort
from ragcore.encoders import _onnx
from ragcore.encoders._denormals import denormals_flushed
assert not denormals_flushed()
if sys.argv[2] == "ragcore":
    _onnx.OnnxModel(sys.argv[1], providers="cpu", threads=1)
else:
    ort.InferenceSession(sys.argv[1], _onnx.session_options(1, denormals_as_zero=True),
                         providers=[_onnx.CPU_PROVIDER])
print(denormals_flushed())
"""


@needs_flush
def test_loading_a_model_leaves_the_caller_s_thread_as_it_was(tiny_bert, monkeypatch):
    """onnxruntime sets the flush state of the thread that creates a process's first
    session from its option, for good; ragcore's sessions put it back. Each case in a
    fresh process, where the session is the first."""
    import subprocess
    import sys

    monkeypatch.delenv(_denormals.KEEP_DENORMALS_ENV, raising=False)

    def flushed_after(how):
        done = subprocess.run([sys.executable, "-c", FIRST_SESSION, str(tiny_bert), how],
                              capture_output=True, text=True, timeout=120, check=True)
        return done.stdout.strip()

    assert flushed_after("onnxruntime") == "True"  # the premise: the check can fail
    assert flushed_after("ragcore") == "False"
