"""The fused fp32 graph written from safetensors weights without torch: the file
reader, the graph against the numpy BERT reference on random small BERTs, the
bundled model against PyTorch's stored and recomputed vectors, deriving with
torch unavailable, ragcore's CPU sessions (no SkipLayerNormalization fusion), and
bad input."""

from __future__ import annotations

import json
import struct
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from ragcore.encoders import _onnx, models  # noqa: E402
from ragcore.encoders.build import bert_graph, derived  # noqa: E402
from ragcore.encoders.build.safetensors_file import read_safetensors  # noqa: E402
from ragcore.reference import bert_hidden_states  # noqa: E402

from _random_bert import random_bert  # noqa: E402

_CODES = {np.dtype("<f4"): "F32", np.dtype("<f2"): "F16", np.dtype("<i8"): "I64", np.dtype("u1"): "U8"}


def write_safetensors(path, tensors: dict, header_override=None) -> None:
    """A safetensors file written by hand from the format's definition."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, array in tensors.items():
        data = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": _CODES[array.dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header.update(header_override or {})
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


# ---- the safetensors reader ------------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(list(_CODES)),
                          st.lists(st.integers(0, 5), min_size=0, max_size=3)), min_size=1, max_size=5),
       st.integers(0, 2**31))
def test_safetensors_round_trip(tmp_path_factory, specs, seed):
    rng = np.random.default_rng(seed)
    tensors = {f"t{i}.weight": (rng.standard_normal(shape) * 100).astype(dtype)
               for i, (dtype, shape) in enumerate(specs)}
    path = tmp_path_factory.mktemp("st") / "model.safetensors"
    write_safetensors(path, tensors)
    got = read_safetensors(path)
    assert set(got) == set(tensors)
    for name, array in tensors.items():
        assert got[name].dtype == array.dtype and got[name].shape == array.shape
        np.testing.assert_array_equal(got[name], array)


@pytest.mark.parametrize("override, match", [
    ({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 64]}}, "spans bytes"),
    ({"x": {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}}, "needs 12"),
    ({"x": {"dtype": "Q4", "shape": [4], "data_offsets": [0, 16]}}, "dtype"),
    ({"x": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}}, "malformed"),
    ({"x": {"dtype": "F32", "shape": [4], "data_offsets": [16]}}, "malformed"),
])
def test_safetensors_bad_entries(tmp_path, override, match):
    path = tmp_path / "bad.safetensors"
    write_safetensors(path, {"x": np.zeros(4, np.float32)}, override)
    with pytest.raises(ValueError, match=match):
        read_safetensors(path)


def test_safetensors_bad_files(tmp_path):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(b"\x01\x02")
    with pytest.raises(ValueError, match="too short"):
        read_safetensors(path)
    path.write_bytes(struct.pack("<Q", 10**9) + b"{}")
    with pytest.raises(ValueError, match="header length"):
        read_safetensors(path)
    path.write_bytes(struct.pack("<Q", 3) + b"{no")
    with pytest.raises(ValueError, match="not JSON"):
        read_safetensors(path)
    path.write_bytes(struct.pack("<Q", 2) + b"[]")
    with pytest.raises(ValueError, match="not a JSON object"):
        read_safetensors(path)


# ---- the fused graph against the numpy reference on random small BERTs ---------------

@settings(max_examples=25, deadline=None)
@given(layers=st.integers(1, 2), heads=st.integers(1, 4), head_size=st.sampled_from([2, 4, 8]),
       lengths=st.lists(st.integers(1, 20), min_size=1, max_size=4), seed=st.integers(0, 2**31),
       attention=st.sampled_from(bert_graph.ATTENTION_KINDS))
def test_fused_graph_equals_the_numpy_reference(layers, heads, head_size, lengths, seed, attention):
    import onnxruntime as ort

    rng = np.random.default_rng(seed)
    weights, config = random_bert(rng, layers, heads, head_size)
    model = bert_graph.fused_bert(weights, config, attention=attention)
    ops = {node.op_type for node in model.graph.node}
    assert ("Attention" in ops) == (attention == "contrib") and ("Softmax" in ops) == (attention == "standard")
    width = max(lengths)
    ids = rng.integers(1, config["vocab_size"], (len(lengths), width))
    mask = (np.arange(width)[None] < np.array(lengths)[:, None]).astype(np.int64)  # right padding
    types = rng.integers(0, 2, ids.shape) * mask
    ids = ids * mask
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]
    want = bert_hidden_states(weights, config, ids, mask, types)
    real = mask.astype(bool)  # padded positions are not part of the contract
    np.testing.assert_allclose(got[real], want[real], rtol=0, atol=2e-4)


def test_bad_attention_kind_names_the_choices():
    weights, config = random_bert(np.random.default_rng(0), 1, 2, 4)
    with pytest.raises(ValueError, match="attention must be one of"):
        bert_graph.fused_bert(weights, config, attention="flash")


def test_bert_config_and_weights_checks(tmp_path):
    rng = np.random.default_rng(0)
    weights, config = random_bert(rng, 1, 2, 4)
    (tmp_path / "config.json").write_text(json.dumps({**config, "model_type": "bert",
                                                      "hidden_act": "relu"}))
    with pytest.raises(ValueError, match="hidden_act is 'relu'"):
        bert_graph.bert_config(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({**config, "num_attention_heads": 3}))
    with pytest.raises(ValueError, match="not a multiple of num_attention_heads"):
        bert_graph.bert_config(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert bert_graph.bert_config(tmp_path) == config
    del weights["encoder.layer.0.output.dense.bias"]
    write_safetensors(tmp_path / "model.safetensors", weights)
    with pytest.raises(ValueError, match="no tensor 'encoder.layer.0.output.dense.bias'"):
        bert_graph.load_weights(tmp_path, config)
    weights["encoder.layer.0.output.dense.bias"] = np.zeros(3, np.float32)
    write_safetensors(tmp_path / "model.safetensors", weights)
    with pytest.raises(ValueError, match=r"has shape \(3,\), expected \(8,\)"):
        bert_graph.load_weights(tmp_path, config)


def test_bert_prefixed_names_are_read(tmp_path):
    """Checkpoints saved from BertForX name their encoder tensors "bert.*"."""
    rng = np.random.default_rng(1)
    weights, config = random_bert(rng, 1, 2, 2)
    write_safetensors(tmp_path / "model.safetensors", {f"bert.{k}": v for k, v in weights.items()})
    loaded = bert_graph.load_weights(tmp_path, config)
    assert set(loaded) == set(weights)
    np.testing.assert_array_equal(loaded["embeddings.LayerNorm.bias"], weights["embeddings.LayerNorm.bias"])


# ---- the bundled model ------------------------------------------------------------------

@pytest.fixture
def no_torch(monkeypatch):
    """torch, transformers and sentence-transformers cannot be imported."""
    for name in ("torch", "transformers", "sentence_transformers"):
        monkeypatch.setitem(sys.modules, name, None)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGCORE_CACHE", str(tmp_path))
    return tmp_path


def test_derives_and_encodes_without_torch(cache, no_torch):
    from ragcore.encoders import default_encoder

    with pytest.raises(ImportError):
        import torch  # noqa: F401
    fused = derived.ensure(models.FUSED_NAME)
    manifest = json.loads((fused.parent / "derived.json").read_text())
    assert manifest["pytorch_reference"] == "stored (check_vectors.npz)"
    assert manifest["min_cosine_to_pytorch"] >= derived.FUSED_MIN_COSINE
    encoder = default_encoder("fp32", providers="cpu")  # "auto" may pick int8 on this CPU
    assert encoder.model.path == fused
    stored = np.load(derived.CHECK_VECTORS)["vectors"]
    got = encoder.encode(list(derived.CHECK_TEXTS), warn=False)
    assert (got * stored).sum(axis=1).min() >= 0.9999
    int8 = derived.ensure(models.FUSED_INT8_BLOCKS_NAME)  # quantisation needs no torch either
    assert json.loads((int8.parent / "derived.json").read_text())["same_nearest_neighbours"]


def test_fused_graph_equals_the_numpy_reference_on_the_bundled_model():
    import onnxruntime as ort

    from ragcore.encoders._text import TextTokenizer

    config = bert_graph.bert_config(models.minilm_dir())
    weights = bert_graph.load_weights(models.minilm_dir(), config)
    session = ort.InferenceSession(bert_graph.fused_bert(weights, config).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    tokenizer = TextTokenizer(models.minilm_dir() / "tokenizer.json", 64)
    batch = tokenizer.encode(["short", "How do I open a file for reading in Python?"])
    feeds = {n: getattr(batch, n) for n in bert_graph.INPUTS}
    got = session.run(None, feeds)[0]
    want = bert_hidden_states(weights, config, *(feeds[n] for n in bert_graph.INPUTS))
    real = batch.attention_mask.astype(bool)
    np.testing.assert_allclose(got[real], want[real], rtol=0, atol=1e-4)


def test_stored_vectors_are_pytorch_s():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from ragcore.encoders.build.export import pytorch_embeddings

    stored = np.load(derived.CHECK_VECTORS)
    assert str(stored["source_sha256"]) == models.source_digest()
    fresh = pytorch_embeddings(models.minilm_dir(), derived.CHECK_TEXTS)
    assert (fresh * stored["vectors"]).sum(axis=1).min() >= 0.999999


def test_other_model_files_need_pytorch_for_the_check(cache, no_torch, monkeypatch):
    """Stored vectors are only the reference for the files they were made from."""
    monkeypatch.setattr(models, "source_digest", lambda: "0" * 64)
    monkeypatch.setattr(derived, "source_digest", lambda: "0" * 64)
    with pytest.raises(ImportError):
        derived.ensure(models.FUSED_NAME)
    assert list((cache / "derived").iterdir()) == []  # nothing kept


def test_without_onnx_the_default_is_the_bundled_int8_file(cache, monkeypatch):
    from ragcore.encoders import default_encoder

    monkeypatch.setitem(sys.modules, "onnx", None)
    encoder = default_encoder(providers="cpu")
    assert encoder.model.path == models.resolve(models.INT8_NAME).onnx_path
    assert not models.derived_path(models.FUSED_NAME).exists()
    assert list((cache / "derived").iterdir()) == []  # no temporary folder left


# ---- ragcore's CPU sessions: the residual LayerNorms stay LayerNormalization --------
# onnxruntime's optimizer would fuse them into SkipLayerNormalization, a scalar
# kernel on CPU (_onnx.py).

def optimized_ops(model_path, tmp_path, disabled) -> set[str]:
    """Operator types of the graph onnxruntime runs, with ragcore's CPU options."""
    import onnx
    import onnxruntime as ort

    options = _onnx.session_options(1)
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(str(model_path), options, providers=[_onnx.CPU_PROVIDER],
                         disabled_optimizers=disabled)
    return {node.op_type for node in onnx.load(options.optimized_model_filepath).graph.node}


def test_cpu_sessions_do_not_fuse_skip_layernorm(tiny_bert, tmp_path):
    # Without the setting onnxruntime does fuse them: the check can fail.
    assert "SkipLayerNormalization" in optimized_ops(tiny_bert, tmp_path, [])
    ops = optimized_ops(tiny_bert, tmp_path, _onnx.disabled_fusions([_onnx.CPU_PROVIDER]))
    assert "SkipLayerNormalization" not in ops and "LayerNormalization" in ops
    assert {"Attention", "BiasGelu", "EmbedLayerNormalization"} <= ops  # the other fusions stay


def test_only_cpu_only_sessions_leave_the_fusion_out():
    assert _onnx.disabled_fusions([_onnx.CPU_PROVIDER]) == ["SkipLayerNormFusion"]
    assert _onnx.disabled_fusions(["CUDAExecutionProvider", _onnx.CPU_PROVIDER]) == []


def test_onnx_model_creates_its_cpu_session_with_the_fusion_left_out(tiny_bert, monkeypatch):
    import onnxruntime as ort

    seen = {}
    real = ort.InferenceSession

    def recording(*args, **kwargs):
        seen.update(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(ort, "InferenceSession", recording)
    model = _onnx.OnnxModel(tiny_bert, providers="cpu", threads=1)
    assert model.provider == _onnx.CPU_PROVIDER
    assert seen["disabled_optimizers"] == ["SkipLayerNormFusion"]


@settings(max_examples=20, deadline=None)
@given(heads=st.integers(1, 4), head_size=st.sampled_from([2, 4, 8]),
       lengths=st.lists(st.integers(1, 20), min_size=1, max_size=4), seed=st.integers(0, 2**31))
def test_ragcore_session_equals_the_numpy_reference(tmp_path_factory, heads, head_size, lengths, seed):
    import onnx

    from ragcore.encoders._text import TokenBatch

    rng = np.random.default_rng(seed)
    weights, config = random_bert(rng, 2, heads, head_size)
    path = tmp_path_factory.mktemp("bert") / "model.onnx"
    onnx.save(bert_graph.fused_bert(weights, config), str(path))
    width = max(lengths)
    mask = (np.arange(width)[None] < np.array(lengths)[:, None]).astype(np.int64)  # right padding
    ids = rng.integers(1, config["vocab_size"], mask.shape) * mask
    types = rng.integers(0, 2, mask.shape) * mask
    got = _onnx.OnnxModel(path, providers="cpu", threads=1).run(
        TokenBatch(ids, mask, types, np.zeros(len(lengths), bool)))
    want = bert_hidden_states(weights, config, ids, mask, types)
    real = mask.astype(bool)  # padded positions are not part of the contract
    np.testing.assert_allclose(got[real], want[real], rtol=0, atol=2e-4)
