"""ragcore.rag.fusion against ranx's fuse, for every method both offer.

ranx names: norm "min-max" / "zmuv" / "max" / "rank" / None; method "rrf", "wsum", "sum"
(CombSUM), "mnz" (CombMNZ). The inputs avoid the cases where the two differ by design (see the
README): tied scores (ranx ranks them in an unspecified order), score spreads or standard
deviations below 1e-9 (ranx floors them at 1e-9) and norm "max" with a top score <= 0 (ranx
divides by 1e-9, ragcore refuses).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _fusion_data import hits_batch, hits_lists
from ragcore.rag import fusion

# numba warns about a cast while compiling ranx's kernels the first time.
pytestmark = pytest.mark.filterwarnings("ignore:.*unsafe cast from uint64 to int64")
ranx = pytest.importorskip("ranx")

NORMS = {"minmax": "min-max", "zscore": "zmuv", "max": "max", "rank": "rank", None: None}
METHODS = {"wsum": "wsum", "combsum": "sum", "combmnz": "mnz"}
POSITIVE = st.integers(1, 80).map(lambda x: x / 8)


def to_ranx(hits):
    """A ranx Run; queries named by row, documents by id (ranx needs a result in every query)."""
    return ranx.Run({f"q{row}": {str(i): float(s) for i, s in zip(ids, scores) if i != -1}
                     for row, (ids, scores) in enumerate(zip(hits.ids, hits.scores))})


def assert_same_fusion(fused, fused_ranx):
    """Same documents and scores per query (to float32 rounding), ranked by ranx's scores."""
    want = fused_ranx.to_dict()
    for row in range(fused.nq):
        theirs = {int(d): s for d, s in want[f"q{row}"].items()}
        real = fused.ids[row] != -1
        ours = dict(zip(fused.ids[row][real].tolist(), fused.scores[row][real].tolist()))
        assert ours.keys() == theirs.keys()
        for doc, score in ours.items():
            assert score == pytest.approx(theirs[doc], rel=2e-7, abs=1e-12), doc
        ranked = [theirs[d] for d in fused.ids[row][real].tolist()]
        assert all(a >= b - 1e-6 * abs(b) - 1e-12 for a, b in zip(ranked, ranked[1:]))


def fuse_ranx(lists, norm, method, params=None):
    return ranx.fuse([to_ranx(h) for h in lists], norm=norm, method=method, params=params or {})


@settings(max_examples=40, deadline=None)
@given(hits_lists(min_results=1), st.sampled_from([1, 60]))
def test_rrf_equals_ranx(lists, r0):
    assert_same_fusion(fusion.rrf(lists, r0=r0), fuse_ranx(lists, None, "rrf", {"k": r0}))


@settings(max_examples=80, deadline=None)
@given(st.data(), st.sampled_from(list(METHODS)), st.sampled_from(list(NORMS)))
def test_score_fusion_equals_ranx(data, method, norm):
    lists = data.draw(hits_lists(scores=POSITIVE, min_results=1) if norm == "max" else hits_lists(min_results=1))
    weights = None
    params = {}
    if method == "wsum":
        weights = data.draw(st.lists(st.sampled_from([0.25, 0.5, 1.0, 3.0]),
                                     min_size=len(lists), max_size=len(lists)))
        params = {"weights": weights}
    fused = fusion.combine(lists, method=method, norm=norm, weights=weights)
    assert_same_fusion(fused, fuse_ranx(lists, NORMS[norm], METHODS[method], params))


@settings(max_examples=60, deadline=None)
@given(st.data(), st.sampled_from([("minmax", "min-max"), ("zscore", "zmuv"), ("rank", "rank"),
                                   (None, None)]), st.sampled_from([0.2, 0.5, 0.9]))
def test_convex_equals_ranx_weighted_sum(data, norms, alpha):
    """convex(alpha) is ranx's wsum with weights (alpha, 1 - alpha); ranx has no theoretical
    min-max (test_fusion_convex.py checks it against the reference and worked examples)."""
    dense = data.draw(hits_batch(2, min_results=1))
    sparse = data.draw(hits_batch(2, min_results=1))
    ours = fusion.convex(dense, sparse, alpha, norm=norms[0])
    assert_same_fusion(ours, fuse_ranx([dense, sparse], norms[1], "wsum",
                                       {"weights": [alpha, 1 - alpha]}))
