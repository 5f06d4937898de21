"""Query inputs for the one-query paths' tests: every dtype, shape, layout and special
value that the single-row fast checks must either accept unchanged or hand to the full
checks."""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

DIM = 8
SPECIAL = [np.nan, np.inf, -np.inf, 4e17, 1e18, 3.6e17, -3.6e17, 1e-42, 0.0]


@st.composite
def query_inputs(draw):
    dtype = draw(st.sampled_from([np.float32, np.float64, np.float16, np.int32]))
    shape = draw(st.sampled_from([(DIM,), (1, DIM), (2, DIM), (DIM + 1,), (1, DIM - 1), (DIM, 1)]))
    values = draw(hnp.arrays(np.float64, shape, elements=st.one_of(
        st.floats(-10, 10), st.sampled_from(SPECIAL))))
    with np.errstate(all="ignore"):
        x = values.astype(dtype)
    if draw(st.booleans()) and x.ndim == 2 and x.shape[0] > 1:
        x = np.asfortranarray(x)
    if draw(st.booleans()):
        x = np.repeat(x, 2, axis=-1)[..., ::2]  # a strided view
    return x


def search_outcome(index, x, n_threads, **kwargs):
    """(ids, scores) of index.search(x, 3, ...), or (error type, message): what the one-query
    path (n_threads a plain int) and the full path (a numpy integer) must agree on."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            hits = index.search(x, 3, n_threads=n_threads, **kwargs)
        except (TypeError, ValueError) as err:
            return type(err), str(err)
    return hits.ids.tolist(), hits.scores.tolist()


class BatchRefused:
    """A stand-in for ragcore._core with one batch search function refused: a search that
    still answers went through the one-query function."""

    def __init__(self, real, refused: str):
        self._real, self._refused = real, refused

    def __getattr__(self, name):
        if name == self._refused:
            raise AssertionError(f"{name} called: the one-query path was not taken")
        return getattr(self._real, name)
