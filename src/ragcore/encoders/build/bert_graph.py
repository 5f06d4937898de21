"""A BERT encoder written straight into onnxruntime's fused operators, from the
model's safetensors weights: no torch, no exporter and no optimizer pass.

The graph is the one onnxruntime's BERT optimizer makes of a TorchScript export
(EmbedLayerNormalization; per layer Attention, MatMul, BiasGelu, MatMul), except
that each residual LayerNorm is Add, Add, LayerNormalization rather than the
fused SkipLayerNormalization: onnxruntime 1.32's CPU SkipLayerNormalization is a
scalar loop (Welford, one division per element), its LayerNormalization is
vectorised, and the split graph runs faster than the fused one in fp32 and int8
(one thread, CPU). onnxruntime's optimizer would fuse
the three back into SkipLayerNormalization; ragcore's CPU sessions turn that
fusion off (_onnx.py). Output: last_hidden_state [batch, tokens, hidden]. The mask
goes in as attention_mask and becomes per-text key lengths
(EmbedLayerNormalization's mask_index), so padding must be on the right, as
ragcore's tokenizer pads.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .safetensors_file import read_safetensors

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# The operators this graph is made of: each computes a text from that text's rows
# only (Attention masks each text's keys by its own length), so a text's output
# does not depend on the other texts of its batch, bit for bit (tested).
ROW_WISE_OPERATORS = frozenset({"Cast", "EmbedLayerNormalization", "Attention", "MatMul", "Add",
                                "LayerNormalization", "BiasGelu"})
OUTPUT = "last_hidden_state"
ATTENTION_KINDS = ("contrib", "standard")
ADDITIVE_MASK = "additive_mask"
# onnxruntime's Attention fills masked scores with -10000; the standard graph does
# the same, so both give exactly zero weight to padding.
MASK_VALUE = -10000.0
_MS = "com.microsoft"


def bert_config(model_dir: Path) -> dict:
    """The fields of config.json the graph needs, checked to be a BERT this file can write."""
    config = json.loads((Path(model_dir) / "config.json").read_text())
    wanted = {"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "absolute"}
    for key, value in wanted.items():
        if config.get(key, value) != value:
            raise ValueError(f"{model_dir}/config.json: {key} is {config.get(key)!r}; the fused "
                             f"graph is written for {key}={value!r}")
    if config["hidden_size"] % config["num_attention_heads"]:
        raise ValueError(f"{model_dir}/config.json: hidden_size {config['hidden_size']} is not a "
                         f"multiple of num_attention_heads {config['num_attention_heads']}")
    return {k: config[k] for k in ("hidden_size", "num_attention_heads", "num_hidden_layers",
                                   "intermediate_size", "layer_norm_eps", "vocab_size",
                                   "max_position_embeddings", "type_vocab_size")}


def load_weights(model_dir: Path, config: dict) -> dict[str, np.ndarray]:
    """The safetensors weights as float32, with the names' "bert." prefix (if any)
    dropped and every tensor the graph uses present with the shape config implies."""
    raw = read_safetensors(Path(model_dir) / "model.safetensors")
    weights = {k.removeprefix("bert."): v for k, v in raw.items()}
    h, f = config["hidden_size"], config["intermediate_size"]
    shapes = {"embeddings.word_embeddings.weight": (config["vocab_size"], h),
              "embeddings.position_embeddings.weight": (config["max_position_embeddings"], h),
              "embeddings.token_type_embeddings.weight": (config["type_vocab_size"], h),
              "embeddings.LayerNorm.weight": (h,), "embeddings.LayerNorm.bias": (h,)}
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        for part in ("attention.self.query", "attention.self.key", "attention.self.value",
                     "attention.output.dense"):
            shapes[f"{p}{part}.weight"], shapes[f"{p}{part}.bias"] = (h, h), (h,)
        shapes[f"{p}intermediate.dense.weight"], shapes[f"{p}intermediate.dense.bias"] = (f, h), (f,)
        shapes[f"{p}output.dense.weight"], shapes[f"{p}output.dense.bias"] = (h, f), (h,)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes[f"{p}{norm}.weight"], shapes[f"{p}{norm}.bias"] = (h,), (h,)
    out = {}
    for name, shape in shapes.items():
        if name not in weights:
            raise ValueError(f"{model_dir}/model.safetensors has no tensor {name!r}")
        if tuple(weights[name].shape) != shape:
            raise ValueError(f"{model_dir}/model.safetensors: {name!r} has shape "
                             f"{tuple(weights[name].shape)}, expected {shape}")
        out[name] = np.asarray(weights[name], dtype=np.float32)
    return out


def fused_bert(weights: dict, config: dict, attention: str = "contrib"):
    """The fused ONNX model (an onnx.ModelProto) of a BERT's weights. attention:
    "contrib" (onnxruntime's Attention operator) or "standard" (MatMul, Softmax,
    Reshape and Transpose; see _standard_attention)."""
    if attention not in ATTENTION_KINDS:
        raise ValueError(f"attention must be one of {ATTENTION_KINDS}, got {attention!r}")
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits, nodes = [], []

    def const(name, array):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array, dtype=np.float32), name))
        return name

    for name in INPUTS:
        nodes.append(helper.make_node("Cast", [name], [f"{name}_int32"], to=TensorProto.INT32))
    emb = "embeddings."
    eps = float(config["layer_norm_eps"])
    nodes.append(helper.make_node(
        "EmbedLayerNormalization",
        ["input_ids_int32", "token_type_ids_int32",
         const("word_embeddings", weights[emb + "word_embeddings.weight"]),
         const("position_embeddings", weights[emb + "position_embeddings.weight"]),
         const("token_type_embeddings", weights[emb + "token_type_embeddings.weight"]),
         const("embeddings_ln_weight", weights[emb + "LayerNorm.weight"]),
         const("embeddings_ln_bias", weights[emb + "LayerNorm.bias"]),
         "attention_mask_int32"],
        ["embedded", "mask_index"], domain=_MS, epsilon=eps, name="EmbedLayerNormalization"))
    x = "embedded"
    if attention == "standard":
        _additive_mask(nodes, const)
    for i in range(config["num_hidden_layers"]):
        x = _layer(nodes, const, weights, f"encoder.layer.{i}.", f"layer{i}", x,
                   config["num_attention_heads"], eps, attention)
    nodes[-1].output[0] = OUTPUT
    graph = helper.make_graph(
        nodes, "bert_fused",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"]) for n in INPUTS],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT,
                                       ["batch", "sequence", config["hidden_size"]])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid(_MS, 1)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _additive_mask(nodes, const) -> None:
    """attention_mask [B, L] as the scores' additive mask [B, 1, 1, L]: 0 for a
    real key, -10000 for padding (as onnxruntime's Attention masks)."""
    from onnx import TensorProto, helper, numpy_helper

    nodes.append(helper.make_node("Cast", ["attention_mask"], ["mask_float"], to=TensorProto.FLOAT))
    nodes.append(helper.make_node("Sub", [const("one", np.float32(1.0)), "mask_float"],
                                  ["mask_padding"]))
    nodes.append(helper.make_node("Mul", ["mask_padding", const("mask_value", np.float32(MASK_VALUE))],
                                  ["mask_flat"]))
    axes = numpy_helper.from_array(np.array([1, 2], dtype=np.int64), "mask_axes")
    nodes.append(helper.make_node("Constant", [], ["mask_axes"], value=axes))
    nodes.append(helper.make_node("Unsqueeze", ["mask_flat", "mask_axes"], [ADDITIVE_MASK]))


def _standard_attention(nodes, const, x: str, weight, bias, heads: int, tag: str) -> str:
    """Self-attention in standard operators: one packed QKV MatMul (1/sqrt(head
    size) folded into Q's weights and bias), Reshape/Transpose to [B, H, L, d]
    (K to [B, H, d, L]), MatMul, Add of the additive mask, Softmax, MatMul with
    V, Transpose/Reshape back to [B, L, hidden]."""
    from onnx import TensorProto, helper, numpy_helper

    hidden = weight.shape[0]
    size = hidden // heads
    scale = np.ones(3 * hidden, dtype=np.float32)
    scale[:hidden] = 1.0 / np.sqrt(size)
    nodes.append(helper.make_node("MatMul", [x, const(f"{tag}_qkv_weight", weight * scale)],
                                  [f"{tag}_qkv_product"], name=f"{tag}_qkv_MatMul"))
    nodes.append(helper.make_node("Add", [f"{tag}_qkv_product", const(f"{tag}_qkv_bias", bias * scale)],
                                  [f"{tag}_qkv"], name=f"{tag}_qkv_bias"))

    def int64(name, values):
        nodes.append(helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
            np.array(values, dtype=np.int64), name)))
        return name

    shape5 = int64(f"{tag}_shape5", [0, 0, 3, heads, size])
    nodes.append(helper.make_node("Reshape", [f"{tag}_qkv", shape5], [f"{tag}_qkv5"]))
    nodes.append(helper.make_node("Split", [f"{tag}_qkv5", int64(f"{tag}_split", [1, 1, 1])],
                                  [f"{tag}_q5", f"{tag}_k5", f"{tag}_v5"], axis=2))
    squeeze = int64(f"{tag}_squeeze", [2])
    perms = {"q": [0, 2, 1, 3], "k": [0, 2, 3, 1], "v": [0, 2, 1, 3]}
    for part, perm in perms.items():
        nodes.append(helper.make_node("Squeeze", [f"{tag}_{part}5", squeeze], [f"{tag}_{part}4"]))
        nodes.append(helper.make_node("Transpose", [f"{tag}_{part}4"], [f"{tag}_{part}"], perm=perm))
    nodes.append(helper.make_node("MatMul", [f"{tag}_q", f"{tag}_k"], [f"{tag}_raw_scores"],
                                  name=f"{tag}_scores_MatMul"))
    nodes.append(helper.make_node("Add", [f"{tag}_raw_scores", ADDITIVE_MASK], [f"{tag}_scores"],
                                  name=f"{tag}_mask"))
    nodes.append(helper.make_node("Softmax", [f"{tag}_scores"], [f"{tag}_probs"], axis=-1,
                                  name=f"{tag}_Softmax"))
    nodes.append(helper.make_node("MatMul", [f"{tag}_probs", f"{tag}_v"], [f"{tag}_heads"],
                                  name=f"{tag}_context_MatMul"))
    nodes.append(helper.make_node("Transpose", [f"{tag}_heads"], [f"{tag}_context4"],
                                  perm=[0, 2, 1, 3]))
    nodes.append(helper.make_node("Reshape", [f"{tag}_context4", int64(f"{tag}_shape3", [0, 0, hidden])],
                                  [f"{tag}_context"]))
    return f"{tag}_context"


def _layer(nodes, const, w, p: str, tag: str, x: str, heads: int, eps: float,
           attention: str = "contrib") -> str:
    """One encoder layer (torch Linear weights are [out, in]; MatMul takes [in, out])."""
    from onnx import helper

    qkv = [w[f"{p}attention.self.{part}.weight"].T for part in ("query", "key", "value")]
    qkv_bias = [w[f"{p}attention.self.{part}.bias"] for part in ("query", "key", "value")]
    weight, bias = np.concatenate(qkv, axis=1), np.concatenate(qkv_bias)
    if attention == "standard":
        _standard_attention(nodes, const, x, weight, bias, heads, tag)
    else:
        nodes.append(helper.make_node(
            "Attention", [x, const(f"{tag}_qkv_weight", weight), const(f"{tag}_qkv_bias", bias),
                          "mask_index"],
            [f"{tag}_context"], domain=_MS, num_heads=heads, mask_filter_value=MASK_VALUE,
            name=f"{tag}_Attention"))
    nodes.append(helper.make_node(
        "MatMul", [f"{tag}_context", const(f"{tag}_attention_out_weight",
                                           w[f"{p}attention.output.dense.weight"].T)],
        [f"{tag}_attention_out"], name=f"{tag}/attention/output/dense/MatMul"))

    def skip_norm(product: str, residual: str, block: str, out: str) -> None:
        """LayerNorm((product + bias) + residual), block's dense bias and LayerNorm,
        in PyTorch's order of additions."""
        nodes.append(helper.make_node(
            "Add", [product, const(f"{out}_dense_bias", w[f"{p}{block}.dense.bias"])],
            [f"{out}_biased"], name=f"{out}_bias"))
        nodes.append(helper.make_node(
            "Add", [f"{out}_biased", residual], [f"{out}_summed"], name=f"{out}_residual"))
        nodes.append(helper.make_node(
            "LayerNormalization",
            [f"{out}_summed", const(f"{out}_ln_weight", w[f"{p}{block}.LayerNorm.weight"]),
             const(f"{out}_ln_bias", w[f"{p}{block}.LayerNorm.bias"])],
            [out], axis=-1, epsilon=eps, name=f"{out}_LayerNorm"))

    skip_norm(f"{tag}_attention_out", x, "attention.output", f"{tag}_attention_normed")
    nodes.append(helper.make_node(
        "MatMul", [f"{tag}_attention_normed", const(f"{tag}_ffn_in_weight",
                                                    w[f"{p}intermediate.dense.weight"].T)],
        [f"{tag}_ffn_in"], name=f"{tag}/intermediate/dense/MatMul"))
    nodes.append(helper.make_node(
        "BiasGelu", [f"{tag}_ffn_in", const(f"{tag}_ffn_in_bias", w[f"{p}intermediate.dense.bias"])],
        [f"{tag}_gelu"], domain=_MS, name=f"{tag}_BiasGelu"))
    nodes.append(helper.make_node(
        "MatMul", [f"{tag}_gelu", const(f"{tag}_ffn_out_weight", w[f"{p}output.dense.weight"].T)],
        [f"{tag}_ffn_out"], name=f"{tag}/output/dense/MatMul"))
    skip_norm(f"{tag}_ffn_out", f"{tag}_attention_normed", "output", f"{tag}_output")
    return f"{tag}_output"


def write_fused_bert(model_dir: Path, out: Path) -> dict:
    """Writes the fused graph of the BERT in model_dir (config.json, model.safetensors)
    to out; returns its operator counts for the manifest."""
    import onnx

    config = bert_config(model_dir)
    model = fused_bert(load_weights(model_dir, config), config)
    onnx.save(model, str(out))
    ops = [n.op_type for n in model.graph.node]
    return {"precision": "fp32", "fused_operators": {op: ops.count(op) for op in sorted(set(ops))
                                                     if op not in ("Cast", "MatMul")}}
