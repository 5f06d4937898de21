"""A BERT encoder forward pass in plain numpy (float64), from Hugging Face weight
names, for checking the fused ONNX graph of ragcore.encoders.build.bert_graph.

Written from the BERT paper's definition (Devlin et al., 2019) as transformers'
BertModel computes it: embeddings (word + position + token type) and LayerNorm;
per layer, multi-head self-attention with the padded keys masked out, a residual
and LayerNorm, an erf-GELU feed-forward, a residual and LayerNorm.
"""

from __future__ import annotations

import math

import numpy as np

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _layer_norm(x, weight, bias, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def _linear(x, weights, name):
    """torch.nn.Linear: x W^T + b, with W [out, in]."""
    return x @ weights[f"{name}.weight"].astype(np.float64).T + weights[f"{name}.bias"]


def bert_hidden_states(weights: dict, config: dict, input_ids, attention_mask,
                       token_type_ids=None) -> np.ndarray:
    """last_hidden_state [batch, tokens, hidden] (float64). weights: name -> array
    as in the model's safetensors file (no "bert." prefix); config: hidden_size,
    num_attention_heads, num_hidden_layers, layer_norm_eps."""
    ids = np.asarray(input_ids)
    mask = np.asarray(attention_mask).astype(bool)
    types = np.zeros_like(ids) if token_type_ids is None else np.asarray(token_type_ids)
    w = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
    eps, heads = config["layer_norm_eps"], config["num_attention_heads"]
    batch, tokens = ids.shape
    x = (w["embeddings.word_embeddings.weight"][ids]
         + w["embeddings.position_embeddings.weight"][np.arange(tokens)][None]
         + w["embeddings.token_type_embeddings.weight"][types])
    x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    hidden = x.shape[-1]
    size = hidden // heads
    masked = np.where(mask, 0.0, -np.inf)[:, None, None, :]  # [batch, 1, 1, keys]
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."

        def split(t):
            return t.reshape(batch, tokens, heads, size).transpose(0, 2, 1, 3)

        q, k, v = (split(_linear(x, w, f"{p}attention.self.{part}")) for part in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size) + masked
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, tokens, hidden)
        x = _layer_norm(_linear(context, w, f"{p}attention.output.dense") + x,
                        w[f"{p}attention.output.LayerNorm.weight"],
                        w[f"{p}attention.output.LayerNorm.bias"], eps)
        inner = _linear(x, w, f"{p}intermediate.dense")
        inner = 0.5 * inner * (1.0 + _erf(inner / math.sqrt(2.0)))
        x = _layer_norm(_linear(inner, w, f"{p}output.dense") + x,
                        w[f"{p}output.LayerNorm.weight"], w[f"{p}output.LayerNorm.bias"], eps)
    return x
