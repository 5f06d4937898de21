"""Embeddings kept on disk, keyed by the model and the text, so that encoding
the same corpus again (a second demo run) costs a lookup."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def model_key(encoder) -> str:
    """Everything that changes an embedding: model and tokenizer files, max_length,
    pooling and normalisation."""
    parts = {"model": _file_digest(Path(encoder.model.path)),
             "tokenizer": _file_digest(Path(encoder.tokenizer.path)),
             "max_length": encoder.max_length, "pooling": encoder.pooling,
             "normalize": encoder.normalize}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


def text_keys(texts) -> np.ndarray:
    return np.array([hashlib.sha1(t.encode("utf-8")).digest() for t in texts], dtype="S20")


class EmbeddingCache:
    """``encode(texts)`` through a BiEncoder, reusing vectors stored for the same
    model and text under directory (default: the ragcore cache)."""

    def __init__(self, encoder, directory=None, show_progress: bool | None = None):
        from ..encoders.models import cache_dir

        self.encoder = encoder
        self.show_progress = show_progress  # None: when stderr is a terminal
        self.directory = Path(directory or cache_dir() / "embeddings") / model_key(encoder)
        self.hits = self.misses = 0

    def _load(self):
        keys, vectors = self.directory / "keys.npy", self.directory / "vectors.npy"
        if keys.exists() and vectors.exists():
            k, v = np.load(keys), np.load(vectors)
            if len(k) == len(v):
                return k, v
        return np.empty(0, dtype="S20"), np.empty((0, self.encoder.dim), dtype=np.float32)

    def _save(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        for name, arr in (("vectors", vectors), ("keys", keys)):  # keys last: they validate
            tmp = self.directory / f"{name}.tmp.npy"
            np.save(tmp, arr)
            os.replace(tmp, self.directory / f"{name}.npy")

    def _encode_with_progress(self, texts: list, quiet_below: int = 256) -> np.ndarray:
        """One encode call over all the texts (one length order, one set of threads:
        the demo build ran 256 texts per call before, each call waiting for its last
        model run), the bar fed as model calls finish."""
        from .._util.progress import Progress

        bar = Progress(len(texts), "encoding", self.show_progress if len(texts) > quiet_below else False)
        try:
            return self.encoder.encode(texts, warn=False, progress=bar.update)
        finally:
            bar.close()

    def encode(self, texts) -> np.ndarray:
        texts = list(texts)
        wanted = text_keys(texts).tolist()
        keys, vectors = self._load()
        position = {k: i for i, k in enumerate(keys.tolist())}
        new_keys = [k for k in dict.fromkeys(wanted) if k not in position]
        self.misses += len(new_keys)
        self.hits += len(set(wanted)) - len(new_keys)
        if new_keys:
            text_of = dict(zip(wanted, texts))
            new = self._encode_with_progress([text_of[k] for k in new_keys])
            keys = np.concatenate([keys, np.array(new_keys, dtype="S20")])
            vectors = np.concatenate([vectors, np.asarray(new, dtype=np.float32)])
            self._save(keys, vectors)
            position = {k: i for i, k in enumerate(keys.tolist())}
        return vectors[[position[k] for k in wanted]]
