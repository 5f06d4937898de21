"""The values a FlatIndex stores in float16 / bfloat16 are, bit for bit, the reference's own
rounding (numpy's astype for float16, neighbour comparison for bfloat16): the reference does
not call the production conversion, so a mistake in it fails here."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcore import FlatIndex
from ragcore import reference as ref


def _halfway_bfloat16(rng, n: int) -> np.ndarray:
    """float32 values exactly halfway between two bfloat16 neighbours (the ties), both
    parities of the last kept bit."""
    upper = rng.integers(0x3000, 0x4F00, n).astype(np.uint32) << 16
    return (upper | np.uint32(0x8000)).view(np.float32)


@settings(deadline=None, max_examples=60)
@given(seed=st.integers(0, 2**32 - 1), dim=st.sampled_from([1, 3, 16, 33]),
       dtype=st.sampled_from(["float16", "bfloat16"]), scale=st.sampled_from([1e-3, 1.0, 300.0]))
def test_stored_values_are_the_reference_rounding(seed, dim, dtype, scale):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((8, dim)) * scale).astype(np.float32)
    if dtype == "bfloat16":
        x[::2] = _halfway_bfloat16(rng, x[::2].size).reshape(x[::2].shape)
        x[1::4] *= -1
    index = FlatIndex(dim, metric="ip", dtype=dtype)
    index.add(x)
    np.testing.assert_array_equal(index.stored_vectors(), ref.round_to_storage(x, dtype))


@pytest.mark.parametrize("value, rounded", [
    (1 + 2**-8, 1.0),                 # a tie: the even neighbour, 1.0
    (1 + 3 * 2**-8, 1 + 2**-6),       # a tie: the even neighbour is the upper one
    (1 + 2**-8 + 2**-20, 1 + 2**-7),  # just past the tie: up
    (-(1 + 3 * 2**-8), -(1 + 2**-6)), # negative: the same, mirrored
    (2.0**-130, 2.0**-130),           # subnormal with a zero low half: exact
])
def test_reference_bfloat16_worked_examples(value, rounded):
    out = ref.round_to_storage(np.array([value], dtype=np.float32), "bfloat16")
    assert out[0] == np.float32(rounded)
