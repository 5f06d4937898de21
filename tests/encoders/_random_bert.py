"""Random small BERT weights and configs, in the names of a Hugging Face checkpoint."""

from __future__ import annotations

import numpy as np


def random_bert(rng, layers, heads, head_size, vocab=50, positions=24):
    hidden, inner = heads * head_size, 4 * heads * head_size
    config = {"hidden_size": hidden, "num_attention_heads": heads, "num_hidden_layers": layers,
              "intermediate_size": inner, "layer_norm_eps": 1e-12, "vocab_size": vocab,
              "max_position_embeddings": positions, "type_vocab_size": 2}

    def m(*shape):
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    w = {"embeddings.word_embeddings.weight": m(vocab, hidden),
         "embeddings.position_embeddings.weight": m(positions, hidden),
         "embeddings.token_type_embeddings.weight": m(2, hidden),
         "embeddings.LayerNorm.weight": 1 + m(hidden), "embeddings.LayerNorm.bias": m(hidden)}
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for part in ("attention.self.query", "attention.self.key", "attention.self.value",
                     "attention.output.dense"):
            w[f"{p}{part}.weight"], w[f"{p}{part}.bias"] = m(hidden, hidden), m(hidden)
        w[f"{p}intermediate.dense.weight"], w[f"{p}intermediate.dense.bias"] = m(inner, hidden), m(inner)
        w[f"{p}output.dense.weight"], w[f"{p}output.dense.bias"] = m(hidden, inner), m(hidden)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[f"{p}{norm}.weight"], w[f"{p}{norm}.bias"] = 1 + m(hidden), m(hidden)
    return w, config
