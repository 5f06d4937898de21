"""sentence-transformers (torch, CPU): the same all-MiniLM-L6-v2 weights (encode, and the
encoder of the pipeline in chroma.py's Ingest)."""

from __future__ import annotations

import warnings

import numpy as np

LIBRARY, DISTRIBUTION = "sentence_transformers", "sentence-transformers"


def torch_threads(threads: int) -> None:
    """torch's intra-op threads for the calls that follow; its inter-op pool to one thread
    once (torch allows that only before its first parallel work), so that a one-thread
    figure runs on one core."""
    import torch

    torch.set_num_threads(threads)
    if torch.get_num_interop_threads() != 1:
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:  # already started; eager inference does not use it
            pass


def load_minilm():
    """SentenceTransformer of the bundled all-MiniLM-L6-v2 files, max_seq_length 256 (the
    model's and ragcore's; each batch padded to its longest text, as the library does)."""
    from ragcore.encoders import models
    from sentence_transformers import SentenceTransformer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SentenceTransformer(str(models.minilm_dir()), device="cpu")
    model.max_seq_length = 256
    return model


class Encode:
    name = "sentence-transformers fp32"

    def __init__(self, threads):
        self.threads = threads
        torch_threads(threads)
        self.model = load_minilm()

    def encode(self, texts, batch):
        torch_threads(self.threads)  # another adapter in this process may have set others
        return np.asarray(self.model.encode(texts, batch_size=batch, normalize_embeddings=True,
                                            show_progress_bar=False, convert_to_numpy=True))


TASKS = {"encode": [Encode]}
