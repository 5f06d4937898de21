"""LateInteractionReranker: MaxSim over all passages at once equals the per-passage
formula, and the passage cache (bounded, least recently used out first) means a
call encodes only the query and the passages it has not seen."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcore.encoders import LateInteractionReranker
from ragcore.encoders.late_interaction import maxsim, maxsim_many


class CountingEncoder:
    """Token vectors from a hash of each word; records every text it encodes."""

    def __init__(self):
        self.encoded = []

    def encode_tokens(self, texts):
        self.encoded.append(list(texts))
        out = []
        for text in texts:
            rows = [np.random.default_rng(abs(hash(w)) % 2**32).normal(size=8) for w in text.split()]
            rows = np.array(rows, dtype=np.float32)
            out.append(rows / np.linalg.norm(rows, axis=1, keepdims=True))
        return out


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.lists(st.integers(1, 9), max_size=8), st.integers(0, 2**31))
def test_maxsim_many_equals_maxsim_per_passage(query_len, sizes, seed):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(query_len, 5)).astype(np.float32)
    passages = [rng.normal(size=(n, 5)).astype(np.float16) for n in sizes]
    got = maxsim_many(q, passages)
    want = [maxsim(q, p.astype(np.float32)) for p in passages]
    assert got.dtype == np.float32 and got.shape == (len(sizes),)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_second_query_encodes_only_itself():
    encoder = CountingEncoder()
    reranker = LateInteractionReranker(encoder)
    passages = ["red apples grow", "green pears", "red apples grow", "blue sky"]
    first = reranker.score("red fruit", passages)
    assert encoder.encoded == [["red fruit"], ["red apples grow", "green pears", "blue sky"]]
    second = reranker.score("red fruit", passages[::-1])
    assert encoder.encoded[2:] == [["red fruit"]]  # the passages came from the cache
    np.testing.assert_array_equal(second, first[::-1])
    assert (reranker.hits, reranker.misses) == (1 + 4, 3)
    assert first[0] == first[2]


def test_cache_is_bounded_least_recently_used_out_first():
    encoder = CountingEncoder()
    reranker = LateInteractionReranker(encoder, cache_size=2)
    reranker.score("q", ["a b", "c d"])
    reranker.score("q", ["a b"])          # a b used again: c d is the oldest
    reranker.score("q", ["e f"])          # c d dropped
    assert list(reranker._cache) == ["a b", "e f"]
    encoder.encoded.clear()
    reranker.score("q", ["a b", "c d"])
    assert encoder.encoded == [["q"], ["c d"]]
    assert len(reranker._cache) == 2
    nothing_kept = LateInteractionReranker(CountingEncoder(), cache_size=0)
    nothing_kept.score("q", ["a b"])
    assert len(nothing_kept._cache) == 0


def test_threads_share_the_cache_safely():
    reranker = LateInteractionReranker(CountingEncoder(), cache_size=3)
    passages = [f"w{i} x{i % 3}" for i in range(12)]
    want = LateInteractionReranker(CountingEncoder(), cache_size=0).score("x1 w4", passages)
    errors = []

    def work(offset):
        try:
            for r in range(20):
                order = np.roll(np.arange(12), offset + r)
                got = reranker.score("x1 w4", [passages[i] for i in order])
                np.testing.assert_array_equal(got, want[order])
        except Exception as err:  # noqa: BLE001  (reported below)
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(reranker._cache) <= 3


@pytest.mark.parametrize("value, error", [(-1, ValueError), (1.5, TypeError), ("10", TypeError),
                                          (True, TypeError)])
def test_bad_cache_size(value, error):
    with pytest.raises(error, match="cache_size"):
        LateInteractionReranker(CountingEncoder(), cache_size=value)


def test_bad_query_and_passages():
    reranker = LateInteractionReranker(CountingEncoder())
    with pytest.raises(TypeError, match=r"query\[0\] must be a str"):
        reranker.score(None, ["a"])
    with pytest.raises(ValueError, match=r"passages\[1\] is empty"):
        reranker.score("q", ["a", " "])
    assert reranker.score("q", []).shape == (0,)
