"""sentence-transformers (torch, CPU): the same all-MiniLM-L6-v2 weights (encode)."""

from __future__ import annotations

import warnings

import numpy as np

LIBRARY, DISTRIBUTION = "sentence_transformers", "sentence-transformers"


class Encode:
    name = "sentence-transformers fp32"

    def __init__(self, threads):
        import torch
        from ragcore.encoders import models
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(threads)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.model = SentenceTransformer(str(models.minilm_dir()), device="cpu")
        self.model.max_seq_length = 256

    def encode(self, texts, batch):
        return np.asarray(self.model.encode(texts, batch_size=batch, normalize_embeddings=True,
                                            show_progress_bar=False, convert_to_numpy=True))


TASKS = {"encode": [Encode]}
