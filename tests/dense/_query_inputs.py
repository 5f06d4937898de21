"""Query inputs for the search entries' checks: every dtype, shape, layout and special value
that a search must either answer as for the converted, checked rows or refuse as the
reference checks (as_float_matrix, in Python) refuse them."""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ragcore._util.arrays import as_float_matrix

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


def search_outcome(index, x, **kwargs):
    """(ids, scores) of index.search(x, 3, ...), or (error type, message)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            hits = index.search(x, 3, **kwargs)
        except (TypeError, ValueError) as err:
            return type(err), str(err)
    return hits.ids.tolist(), hits.scores.tolist()


def reference_outcome(index, x, **kwargs):
    """What search_outcome must give: the error of the Python checks of every value
    (as_float_matrix), or the hits of the rows they return."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            rows = as_float_matrix(x, "queries", DIM)
        except (TypeError, ValueError) as err:
            return type(err), str(err)
    return search_outcome(index, np.ascontiguousarray(rows), **kwargs)
