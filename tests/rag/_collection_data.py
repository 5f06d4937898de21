"""A small deterministic encoder and corpus for the Collection tests (the bundled model is
exercised by one test of its own: encoding with it is slow on a shared machine)."""

from __future__ import annotations

import hashlib

import numpy as np

WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron "
         "pi rho sigma tau upsilon phi chi psi omega").split()


class HashEncoder:
    """Bag of hashed words in `dim` dimensions, L2-normalised; records what it encodes."""

    def __init__(self, dim: int = 24):
        self.dim = dim
        self.encoded: list[str] = []

    def encode(self, texts, warn: bool = True):
        texts = list(texts)
        self.encoded += texts
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                h = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
                out[i, h % self.dim] += 1.0 + (h >> 40) % 7 / 10.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)

    def __repr__(self) -> str:
        return f"HashEncoder(dim={self.dim})"


class ForbiddenEncoder(HashEncoder):
    """Encodes queries (short texts) but refuses anything longer: opening a collection must
    not re-encode its documents. It makes HashEncoder's vectors, and says so (its
    fingerprint), so a collection made with HashEncoder accepts it."""

    fingerprint = "HashEncoder"

    def encode(self, texts, warn: bool = True):
        texts = list(texts)
        long = [t for t in texts if len(t.split()) > 3]
        if long:
            raise AssertionError(f"re-encoded {len(long)} document texts, e.g. {long[0]!r}")
        return super().encode(texts)


def corpus(n: int, seed: int = 0, words: int = 12):
    """(texts, metadata) with a mix of int, float, str and bool fields (some missing)."""
    rng = np.random.default_rng(seed)
    texts, metadata = [], []
    for i in range(n):
        texts.append(" ".join(rng.choice(WORDS, size=int(rng.integers(4, words)))))
        meta = {"year": int(rng.integers(1990, 2025)), "lang": str(rng.choice(["en", "fr", "de"])),
                "score": float(np.round(rng.random(), 3)), "public": bool(rng.random() < 0.5)}
        if rng.random() < 0.2:
            del meta["lang"]
        metadata.append(meta)
    return texts, metadata


def queries(n: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 4)))) for _ in range(n)]


def brute_force_dense(enc, texts, allowed, query, k):
    """(scores, ids) of the exact top-k by inner product over the allowed documents."""
    vectors = enc.encode([texts[i] for i in allowed])
    q = enc.encode([query])[0]
    scores = (vectors.astype(np.float64) @ q.astype(np.float64))
    order = np.lexsort((np.array(allowed), -scores))[:k]
    return scores[order], np.array(allowed)[order]


def assert_same_ranking(got_scores, got_ids, want_scores, want_ids, atol=1e-5):
    """Scores equal position by position; ids equal except among tied scores."""
    np.testing.assert_allclose(got_scores, want_scores, atol=atol)
    assert len(got_ids) == len(want_ids)
    for s, i in zip(got_scores, got_ids):
        tied = want_ids[np.abs(want_scores - s) <= atol]
        assert i in tied or np.abs(want_scores.min() - s) <= atol
