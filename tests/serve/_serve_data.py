"""A small collection for the service tests, made with a deterministic encoder (the
bundled model is slow to load on a shared machine; the Ray test uses it)."""

from __future__ import annotations

import hashlib

import numpy as np

WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron "
         "pi rho sigma tau upsilon phi chi psi omega").split()


class WordHashEncoder:
    """Bag of hashed words in `dim` dimensions, L2-normalised."""

    def __init__(self, dim: int = 16):
        self.dim = dim

    def encode(self, texts, warn: bool = True):
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                h = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
                out[i, h % self.dim] += 1.0 + (h >> 40) % 5 / 10.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)

    def __repr__(self) -> str:
        return f"WordHashEncoder(dim={self.dim})"


def documents(n: int, seed: int = 0):
    """(texts, ids, metadata): n short texts of WORDS, int ids, a "year" field."""
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 10)))) for _ in range(n)]
    metadata = [{"year": int(rng.integers(1990, 2025))} for _ in range(n)]
    return texts, list(range(n)), metadata


def make_collection(path, n: int = 60) -> None:
    from ragcore.rag.collection import Collection

    texts, ids, metadata = documents(n)
    with Collection.create(path, encoder=WordHashEncoder(), chunker="none",
                           metadata_schema={"year": "int"}) as col:
        col.add(texts, ids=ids, metadata=metadata)


def make_sharded(path, texts, ids, metadata=None, n_shards: int = 2, encoder=None) -> None:
    """A ShardedCollection directory (replicas=1) as ShardedCollection.create lays it out: the
    manifest, and each shard's Collection holding the documents routed to it. Written
    without Ray, so that the server under test starts the only Ray."""
    import os

    from ragcore.distributed import document_shards
    from ragcore.distributed._manifest import replica_dir, write
    from ragcore.rag.collection import Collection

    os.makedirs(path)
    write(os.fspath(path), n_shards, 1, {})
    shard_of = document_shards(ids, n_shards).tolist()
    for s in range(n_shards):
        at = [i for i, t in enumerate(shard_of) if t == s]
        replica = os.path.join(path, replica_dir(s, 0))
        os.makedirs(replica)
        with Collection.create(replica, encoder=encoder, chunker="none") as col:
            col.add([texts[i] for i in at], ids=[ids[i] for i in at],
                    metadata=None if metadata is None else [metadata[i] for i in at])
