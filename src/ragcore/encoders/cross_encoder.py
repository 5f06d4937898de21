"""CrossEncoder: (query, passage) pairs to relevance scores with an ONNX model."""

from __future__ import annotations

import numpy as np

from .._util.arrays import check_choice, check_positive_int, check_threads
from .models import resolve
from ._onnx import OnnxModel
from ._text import TextTokenizer, check_texts, ranked

ACTIVATIONS = ("none", "sigmoid")


class CrossEncoder:
    """Scores pairs with any ONNX sequence-classification model over
    [CLS] query [SEP] passage [SEP] (token_type_ids given when the model takes them).

    No pre-trained cross-encoder ships in a package this project can install, so
    none is bundled: export one you can download (README, "Encoders (ONNX)") and pass
    its .onnx path. Passages are cut before queries when a pair is longer than
    max_length. The score is the model's relevance logit (the only output, or
    the last column of a two-class output), or its sigmoid. io_binding: as for
    BiEncoder (None: IOBinding on CUDA only).
    """

    def __init__(self, model_path, tokenizer_path=None, providers="auto", max_length: int = 512,
                 activation: str = "none", batch_size: int = 32, threads: int = 0,
                 io_binding: bool | None = None):
        spec = resolve(model_path)
        self.activation = check_choice(activation, "activation", ACTIVATIONS)
        self.batch_size = check_positive_int(batch_size, "batch_size")
        self.tokenizer = TextTokenizer(tokenizer_path or spec.tokenizer_path,
                                       check_positive_int(max_length, "max_length"))
        self.model = OnnxModel(spec.onnx_path, providers, check_threads(threads), io_binding)
        if self.model.output_rank != 2:
            raise ValueError(f"model_path: {spec.onnx_path} outputs rank {self.model.output_rank}; "
                             "a cross-encoder outputs logits of shape [batch, labels]")

    @property
    def provider(self) -> str:
        return self.model.provider

    def score(self, query: str, passages) -> np.ndarray:
        """float32 score of each passage for the query, in input order."""
        if not isinstance(query, str) or not query.strip():
            raise TypeError("query must be a non-empty str") if not isinstance(query, str) \
                else ValueError("query is empty or only whitespace")
        passages = check_texts(passages, "passages")
        scores = np.zeros(len(passages), dtype=np.float32)
        for start in range(0, len(passages), self.batch_size):
            chunk = passages[start:start + self.batch_size]
            batch = self.tokenizer.encode_pairs([query] * len(chunk), chunk)
            logits = self.model.run(batch)
            scores[start:start + len(chunk)] = logits[:, -1]
        if self.activation == "sigmoid":
            scores = 1.0 / (1.0 + np.exp(-scores))
        return scores.astype(np.float32, copy=False)

    def rank(self, query: str, passages, top_k: int | None = None) -> list[tuple[int, float]]:
        """(passage index, score) pairs, best first; equal scores by index ascending."""
        return ranked(self.score(query, passages), top_k)
