"""ragcore.evaluate against ranx's evaluate, mostly for mrr@k, which trec_eval lacks.

On runs without tied scores and queries with at least one relevant document, ranx agrees with
trec_eval's definitions for every metric both offer; with ties ranx's order is unspecified.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcore.evaluate import evaluate

# numba warns about a cast while compiling ranx's kernels the first time.
pytestmark = pytest.mark.filterwarnings("ignore:.*unsafe cast from uint64 to int64")
ranx = pytest.importorskip("ranx")

NAMES = {"mrr@3": "mrr@3", "mrr": "mrr", "precision@3": "precision@3", "recall@3": "recall@3",
         "hit@3": "hit_rate@3", "ndcg@3": "ndcg@3", "ndcg": "ndcg", "map@3": "map@3", "map": "map",
         "rprec": "r-precision"}
DOCS = [f"d{i}" for i in range(12)]


@st.composite
def query(draw):
    docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=8, unique=True))
    scores = draw(st.lists(st.integers(0, 99), min_size=len(docs), max_size=len(docs), unique=True))
    judged = draw(st.dictionaries(st.sampled_from(DOCS), st.integers(0, 3), min_size=1, max_size=6))
    judged[draw(st.sampled_from(sorted(judged)))] = draw(st.integers(1, 3))  # one relevant at least
    return dict(zip(docs, map(float, scores))), judged


@settings(max_examples=40, deadline=None)
@given(st.lists(query(), min_size=1, max_size=3))
def test_metrics_equal_ranx_without_ties(queries):
    run = {f"q{i}": r for i, (r, _) in enumerate(queries)}
    qrels = {f"q{i}": j for i, (_, j) in enumerate(queries)}
    ours = evaluate(run, qrels, list(NAMES))
    theirs = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), list(NAMES.values()), return_mean=False)
    for name, theirs_name in NAMES.items():
        np.testing.assert_allclose(ours.per_query[name], np.atleast_1d(theirs[theirs_name]),
                                   rtol=0, atol=1e-9, err_msg=name)
