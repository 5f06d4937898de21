"""ONNX encoders against PyTorch / sentence-transformers, on the bundled model
(fp32 export and int8) and tiny randomly initialised BERTs exported in the test."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import ragcore  # noqa: E402
from ragcore.encoders import default_encoder, models  # noqa: E402
from ragcore.encoders.build import derived, export  # noqa: E402
from ragcore.encoders import BiEncoder, CrossEncoder, LateInteractionReranker  # noqa: E402
from ragcore.encoders.late_interaction import maxsim  # noqa: E402

TEXTS = [
    "How do I open a file for reading in Python?",
    "reciprocal rank fusion",
    "Ünïcödé, emoji 🚀, numbers 12345 and punctuation!?",
    "x",
    "The standard library's json module encodes and decodes JSON. " * 30,  # > 256 tokens
    "Dense retrieval maps queries and passages to vectors.",
]


@pytest.fixture(scope="session")
def export_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def fp32_model(export_cache):
    """The bundled model exported (and checked against PyTorch) into a fresh cache."""
    return export.export(cache=export_cache)


@pytest.fixture(scope="session")
def fp16_model(export_cache, fp32_model):
    """The fp32 export converted to fp16 (and checked) in the same cache."""
    pytest.importorskip("onnx")
    return export.export(cache=export_cache, precision="fp16")


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory):
    """A tiny random BERT over the bundled vocabulary, exported twice: token outputs
    and in-graph mean pooling; plus a cross-encoder head. Returns their paths."""
    out = tmp_path_factory.mktemp("tiny")
    tokenizer = models.minilm_dir() / "tokenizer.json"
    config = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=64)
    torch.manual_seed(0)
    bert = transformers.BertModel(config).eval()

    tokens = export.output_module(bert, "last_hidden_state")

    class Pooled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens = tokens

        def forward(self, input_ids, attention_mask, token_type_ids):
            hidden = self.tokens(input_ids, attention_mask, token_type_ids)
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * mask).sum(1) / mask.sum(1)

    config_ce = transformers.BertConfig(**config.to_dict(), num_labels=1)
    cross = transformers.BertForSequenceClassification(config_ce).eval()

    paths = {}
    for name, module, output in (("tokens", tokens, "last_hidden_state"),
                                 ("pooled", Pooled(), "sentence_embedding"),
                                 ("cross", export.output_module(cross, "logits"), "logits")):
        export.onnx_export(module, out / name / "model.onnx", output)  # makes out / name
        (out / name / "tokenizer.json").write_bytes(tokenizer.read_bytes())
        paths[name] = out / name / "model.onnx"
    paths["cross_module"] = cross
    return paths


def sentence_transformers_embeddings(texts):
    st = pytest.importorskip("sentence_transformers")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # import-time deprecation notes of its dependencies
        model = st.SentenceTransformer(str(models.minilm_dir()), device="cpu")
    return model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True)


# ---- the bundled model ----------------------------------------------------------


def test_fp32_export_equals_sentence_transformers(fp32_model):
    encoder = BiEncoder(fp32_model, providers="cpu")
    with pytest.warns(ragcore.TruncationWarning, match="1 of 6 texts"):
        mine = encoder.encode(TEXTS)
    theirs = sentence_transformers_embeddings(TEXTS)
    cosine = (mine * theirs).sum(axis=1)
    assert cosine.min() >= 0.9999, cosine
    assert mine.truncated == 1 and mine.shape == (6, 384) and mine.dtype == np.float32


def test_int8_agrees_with_fp32(fp32_model):
    fp32 = BiEncoder(fp32_model, providers="cpu").encode(TEXTS, warn=False)
    int8 = default_encoder(precision="int8-bundled", providers="cpu").encode(TEXTS, warn=False)
    assert (fp32 * int8).sum(axis=1).min() >= 0.995
    # Same nearest neighbours among the texts.
    np.testing.assert_array_equal((fp32 @ fp32.T).argsort(axis=1)[:, -2],
                                  (int8 @ int8.T).argsort(axis=1)[:, -2])


# Two topics, three texts each: every text's nearest neighbour is in its own topic.
NEIGHBOUR_TEXTS = list(derived.NEIGHBOUR_TEXTS)


def test_fp16_export_is_fp16_and_equals_sentence_transformers(fp16_model, fp32_model):
    import onnx
    import onnxruntime

    assert fp16_model.parent.name == models.FP16_NAME and fp16_model.parent.parent == fp32_model.parent.parent
    graph = onnx.load(str(fp16_model)).graph
    weights = [init.data_type for init in graph.initializer if init.dims and np.prod(init.dims) >= 1024]
    assert weights and all(t == onnx.TensorProto.FLOAT16 for t in weights)  # every large tensor
    session = onnxruntime.InferenceSession(str(fp16_model), providers=["CPUExecutionProvider"])
    assert {i.type for i in session.get_inputs()} == {"tensor(int64)"}
    assert session.get_outputs()[0].type == "tensor(float)"
    mine = BiEncoder(fp16_model, providers="cpu").encode(TEXTS, warn=False)
    theirs = sentence_transformers_embeddings(TEXTS)
    assert mine.dtype == np.float32 and mine.shape == (6, 384)
    assert (mine * theirs).sum(axis=1).min() >= export.FP16_MIN_COSINE


def test_fp16_agrees_with_fp32_and_io_binding_changes_nothing(fp16_model, fp32_model):
    texts = NEIGHBOUR_TEXTS + TEXTS
    fp32 = BiEncoder(fp32_model, providers="cpu").encode(texts, warn=False)
    fp16 = BiEncoder(fp16_model, providers="cpu").encode(texts, warn=False)
    assert (fp32 * fp16).sum(axis=1).min() >= export.FP16_MIN_COSINE
    topics = (fp32[:6] @ fp32[:6].T).argsort(axis=1)[:, -2] // 3
    np.testing.assert_array_equal(topics, np.arange(6) // 3)  # the set is fit for purpose
    np.testing.assert_array_equal((fp16 @ fp16.T).argsort(axis=1)[:, -2],
                                  (fp32 @ fp32.T).argsort(axis=1)[:, -2])
    bound = BiEncoder(fp16_model, providers="cpu", io_binding=True).encode(texts, warn=False)
    np.testing.assert_array_equal(bound, fp16)


def test_fp16_by_precision_and_name(fp16_model, monkeypatch):
    monkeypatch.setenv("RAGCORE_CACHE", str(fp16_model.parent.parent))
    encoder = default_encoder(precision="fp16", providers="cpu")
    assert encoder.model.path == fp16_model and encoder.max_length == 256
    assert BiEncoder(models.FP16_NAME, providers="cpu").model.path == fp16_model


def test_cli_exports_fp16(fp16_model, monkeypatch, capsys):
    from ragcore.cli.main import main

    monkeypatch.setenv("RAGCORE_CACHE", str(fp16_model.parent.parent))
    assert main(["models", "export", "--precision", "fp16"]) == 0  # cached: returns the path
    assert capsys.readouterr().out.strip().endswith(str(fp16_model))


def test_fp16_that_disagrees_is_not_kept(fp16_model, monkeypatch):
    before = fp16_model.read_bytes()
    monkeypatch.setattr(export, "FP16_MIN_COSINE", 1.5)  # no model reaches it
    with pytest.raises(RuntimeError, match="disagrees with PyTorch.*not kept"):
        export.export(cache=fp16_model.parent.parent, precision="fp16", force=True)
    assert fp16_model.read_bytes() == before
    assert sorted(p.name for p in fp16_model.parent.parent.iterdir()) == [models.FP32_NAME,
                                                                          models.FP16_NAME]


@pytest.mark.parametrize("call", [
    lambda: export.export(precision="bf16"),
    lambda: default_encoder(precision="fp8"),
    lambda: models.model_name(16),
])
def test_bad_precision(call):
    with pytest.raises(ValueError, match=r"precision must be one of '.*', got "):
        call()


def test_batch_composition_and_order_do_not_change_embeddings():
    # fp32: the int8 model's activation scale is set per call (test_fast_encoding bounds that)
    encoder = default_encoder(precision="fp32", providers="cpu", batch_size=2)
    together = encoder.encode(TEXTS, warn=False)
    for i, text in enumerate(TEXTS):
        alone = encoder.encode([text], warn=False)
        np.testing.assert_allclose(alone[0], together[i], atol=2e-5)
    reversed_ = encoder.encode(TEXTS[::-1], warn=False)
    np.testing.assert_allclose(reversed_[::-1], together, atol=2e-5)


def test_empty_list_and_truncation_count():
    encoder = ragcore.encoders.default_encoder(providers="cpu", max_length=8)
    empty = encoder.encode([])
    assert empty.shape == (0, 384) and empty.truncated == 0
    with pytest.warns(ragcore.TruncationWarning, match="2 of 3 texts were longer than max_length=8"):
        out = encoder.encode(["one two", "a b c d e f g h i j", "k l m n o p q r s t"])
    assert out.truncated == 2


def test_provider_is_visible_and_cuda_is_refused_without_it():
    encoder = ragcore.encoders.default_encoder(providers="cpu")
    assert encoder.provider == "CPUExecutionProvider"
    import onnxruntime

    if "CUDAExecutionProvider" not in onnxruntime.get_available_providers():
        assert ragcore.encoders.default_encoder().provider == "CPUExecutionProvider"  # auto
        with pytest.raises(RuntimeError, match="onnxruntime-gpu"):
            ragcore.encoders.default_encoder(providers="cuda")
    with pytest.raises(ValueError, match="unknown providers"):
        ragcore.encoders.default_encoder(providers="tpu")


# ---- pooling and the tiny models ----------------------------------------------


def test_mean_cls_and_graph_pooling(tiny_bert):
    texts = TEXTS[:4]
    tokens = BiEncoder(tiny_bert["tokens"], providers="cpu", normalize=False)
    graph = BiEncoder(tiny_bert["pooled"], providers="cpu", pooling="graph", normalize=False)
    np.testing.assert_allclose(graph.encode(texts), tokens.encode(texts), atol=1e-5)
    cls = BiEncoder(tiny_bert["tokens"], providers="cpu", pooling="cls", normalize=False)
    batch = tokens.tokenizer.encode(texts)
    hidden = tokens.model.run(batch)
    np.testing.assert_allclose(cls.encode(texts), hidden[:, 0, :], atol=1e-5)
    with pytest.raises(ValueError, match="rank 2"):
        BiEncoder(tiny_bert["tokens"], providers="cpu", pooling="graph")


def test_cross_encoder_equals_pytorch(tiny_bert):
    ce = CrossEncoder(tiny_bert["cross"], providers="cpu", max_length=64)
    passages = ["a short passage", "another one about files", "long passage " * 100]
    query = "how to read a file"
    got = ce.score(query, passages)
    batch = ce.tokenizer.encode_pairs([query] * 3, passages)
    with torch.no_grad():
        want = tiny_bert["cross_module"](
            input_ids=torch.from_numpy(batch.input_ids),
            attention_mask=torch.from_numpy(batch.attention_mask),
            token_type_ids=torch.from_numpy(batch.token_type_ids)).logits[:, 0].numpy()
    np.testing.assert_allclose(got, want, atol=1e-4)
    # The long passage was cut, the query kept whole: [CLS] query [SEP] at the start.
    query_ids = ce.tokenizer.encode([query]).input_ids[0]
    np.testing.assert_array_equal(batch.input_ids[2, : len(query_ids)], query_ids)
    assert batch.truncated[2] and not batch.truncated[0]
    sig = CrossEncoder(tiny_bert["cross"], providers="cpu", activation="sigmoid").score(query, passages[:2])
    np.testing.assert_allclose(sig, 1 / (1 + np.exp(-got[:2])), atol=1e-6)
    ranked = ce.rank(query, passages, top_k=2)
    assert [i for i, _ in ranked] == list(np.argsort(-got, kind="stable")[:2])


def test_cross_encoder_cuts_a_too_long_query_too(tiny_bert):
    ce = CrossEncoder(tiny_bert["cross"], providers="cpu", max_length=16)
    scores = ce.score("word " * 40, ["passage"])
    assert scores.shape == (1,) and np.isfinite(scores).all()


def test_late_interaction_maxsim():
    q = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    p = np.array([[0.6, 0.8], [1.0, 0.0]], np.float32)
    assert maxsim(q, p) == pytest.approx(1.0 + 0.8)
    reranker = LateInteractionReranker(ragcore.encoders.default_encoder(providers="cpu"))
    ranked = reranker.rank("open a file for reading",
                           ["bananas are yellow fruit", "open() opens a file for reading", "xyz"])
    assert ranked[0][0] == 1
    assert len(reranker.score("query", [])) == 0


# ---- bad input ---------------------------------------------------------------------


@pytest.mark.parametrize("texts, error, match", [
    ("one string", TypeError, "wrap it in a list"),
    (["ok", None], TypeError, r"texts\[1\] must be a str, got NoneType"),
    (["ok", 3], TypeError, r"texts\[1\] must be a str, got int"),
    (["ok", "  "], ValueError, r"texts\[1\] is empty"),
    (42, TypeError, "must be a list of strings"),
])
def test_bad_texts(texts, error, match):
    encoder = ragcore.encoders.default_encoder(providers="cpu")
    with pytest.raises(error, match=match):
        encoder.encode(texts)


def test_bad_model_files(tmp_path, tiny_bert):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        BiEncoder(tmp_path / "missing.onnx", tokenizer_path=models.minilm_dir() / "tokenizer.json")
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"not a model")
    with pytest.raises(ValueError, match="could not be loaded as an ONNX model"):
        BiEncoder(junk, tokenizer_path=models.minilm_dir() / "tokenizer.json")
    with pytest.raises(ValueError, match="not a HuggingFace tokenizer.json"):
        BiEncoder(tiny_bert["tokens"], tokenizer_path=junk)
    with pytest.raises(FileNotFoundError, match="neither a bundled model"):
        BiEncoder("no-such-model")


def test_tokenizer_that_does_not_fit_the_model(tmp_path):
    config = transformers.BertConfig(vocab_size=1000, hidden_size=16, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=32)

    small = export.output_module(transformers.BertModel(config), "last_hidden_state")
    export.onnx_export(small, tmp_path / "small.onnx", "last_hidden_state")
    with pytest.raises(ValueError, match="embedding table has 1000 rows"):
        BiEncoder(tmp_path / "small.onnx", tokenizer_path=models.minilm_dir() / "tokenizer.json")


def test_wrong_input_names(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["ids"], ["out"])], "g",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["b", "s"])],
        [helper.make_tensor_value_info("out", TensorProto.INT64, ["b", "s"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, tmp_path / "odd.onnx")
    with pytest.raises(ValueError, match=r"takes inputs \['ids'\]"):
        BiEncoder(tmp_path / "odd.onnx", tokenizer_path=models.minilm_dir() / "tokenizer.json")


def test_exported_names_explain_how_to_export(monkeypatch, tmp_path):
    monkeypatch.setenv("RAGCORE_CACHE", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="ragcore models export`"):
        BiEncoder("all-MiniLM-L6-v2")
    with pytest.raises(FileNotFoundError, match="ragcore models export --precision fp16`"):
        default_encoder(precision="fp16")
