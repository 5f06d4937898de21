"""Real text for the ShardedCollection tests (the standard library's docstrings, no
download), a small deterministic encoder, and the comparison of two sets of matches."""

from __future__ import annotations

import hashlib

import numpy as np

from ragcore.cli.datasets import stdlib_docs


class WordHashEncoder:
    """Bag of hashed words, L2-normalised: deterministic and fast (the tests compare a
    sharded collection with one Collection, not models)."""

    def __init__(self, dim: int = 32):
        self.dim = dim

    def encode(self, texts):
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
                out[i, h % self.dim] += 1.0 + (h >> 40) % 7 / 10.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)

    def __repr__(self) -> str:
        return f"WordHashEncoder(dim={self.dim})"


def real_text(n_docs: int, n_queries: int, seed: int = 0):
    """(texts, ids, metadata, queries) from the stdlib_docs corpus: documents with a
    module and a length class as metadata, and held questions as queries."""
    data = stdlib_docs(max_docs=n_docs, seed=seed)
    texts = [d.text for d in data.documents]
    ids = [d.doc_id for d in data.documents]
    metadata = [{"module": d.doc_id.split(".")[0], "size": len(d.text) % 5}
                for d in data.documents]
    return texts, ids, metadata, list(data.questions[:n_queries])


def match_key(m):
    """What identifies a match in any collection: chunk ids differ between one Collection
    and shards, a document id and its chunk's place do not."""
    return (m.id, m.position, m.start, m.end)


def assert_same_matches(got: list, want: list, tol: float = 0.0) -> None:
    """got equals want: the same scores (within tol) in order, and the same chunks, where
    chunks of tied scores may come in any order; a tie across the last place may
    put any of the tied chunks there, so got's last group need only be among want's."""
    assert len(got) == len(want), (len(got), len(want))
    g_scores = np.array([m.score for m in got])
    w_scores = np.array([m.score for m in want])
    np.testing.assert_allclose(g_scores, w_scores, rtol=tol, atol=tol)
    if not got:
        return
    last = w_scores[-1]
    inside = lambda ms: sorted(match_key(m) for m in ms if m.score > last + tol)
    assert inside(got) == inside(want)
    tied_got = {match_key(m) for m in got if abs(m.score - last) <= tol}
    assert len(tied_got) == sum(abs(s - last) <= tol for s in w_scores)
