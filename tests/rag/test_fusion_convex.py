"""fusion.convex and the theoretical min-max normalisation: worked examples, the plain reference
and bad input (the comparison with ranx's weighted sum is in test_fusion_ranx.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _fusion_data import hits, hits_batch
from ragcore.rag import fusion
from ragcore.reference.fusion import convex_query, fuse_query

A, B, C, D = 1, 2, 3, 4


def as_dict(fused, row=0):
    real = fused.ids[row] != -1
    return dict(zip(fused.ids[row][real].tolist(), fused.scores[row][real].tolist()))


DENSE = hits([(A, 0.8), (B, 0.6), (C, -0.2)])   # cosines, lower bound -1
SPARSE = hits([(B, 10.0), (D, 5.0)])            # BM25, lower bound 0


def test_theoretical_worked_example():
    # dense: (s + 1) / 1.8 -> A 1, B 1.6/1.8, C 0.8/1.8; sparse: s / 10 -> B 1, D 0.5.
    fused = fusion.convex(DENSE, SPARSE, alpha=0.5)
    want = {A: 0.5, B: 0.5 * 1.6 / 1.8 + 0.5, C: 0.5 * 0.8 / 1.8, D: 0.25}
    assert as_dict(fused) == pytest.approx(want, rel=1e-6)
    assert fused.ids[0].tolist() == [B, A, D, C]


def test_theoretical_differs_from_minmax_when_a_list_is_flat():
    # All cosines near the best: min-max stretches 0.70 vs 0.69 to 1 vs 0; theoretical keeps them close.
    dense = hits([(A, 0.70), (B, 0.69)])
    sparse = hits([(B, 4.0), (A, 2.0)])
    mm = as_dict(fusion.convex(dense, sparse, 0.5, norm="minmax"))
    th = as_dict(fusion.convex(dense, sparse, 0.5))
    assert mm == pytest.approx({A: 0.5, B: 0.5})
    assert th == pytest.approx({A: 0.5 + 0.25, B: 0.5 * 1.69 / 1.70 + 0.5}, rel=1e-6)
    assert th[B] > th[A]


def test_alpha_ends_give_one_list_alone_first():
    one = fusion.convex(DENSE, SPARSE, alpha=1.0)
    assert one.ids[0, :3].tolist() == [A, B, C] and one.ids[0, 3] == D and one.scores[0, 3] == 0
    zero = fusion.convex(DENSE, SPARSE, alpha=0.0)
    assert zero.ids[0, :2].tolist() == [B, D] and (zero.scores[0, 2:] == 0).all()


def test_best_score_at_the_lower_bound_normalises_to_zero_and_padding_is_ignored():
    dense = hits([(A, -1.0)], [], k=2)
    sparse = hits([(B, 0.0)], [(C, 3.0)], k=1)
    fused = fusion.convex(dense, sparse, alpha=0.3)
    assert as_dict(fused, 0) == {A: 0.0, B: 0.0}
    assert as_dict(fused, 1) == pytest.approx({C: 0.7})
    assert fused.ids[1].tolist() == [C, -1]


def test_convex_is_combine_wsum_and_other_norms():
    for norm in ("minmax", "zscore", "rank", None):
        a = fusion.convex(DENSE, SPARSE, 0.3, norm=norm)
        b = fusion.combine([DENSE, SPARSE], "wsum", norm=norm, weights=[0.3, 0.7])
        np.testing.assert_array_equal(a.ids, b.ids)
        np.testing.assert_array_equal(a.scores, b.scores)


def test_bad_input_is_refused_with_the_argument_named():
    for alpha in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match=r"alpha must be in \[0, 1\]"):
            fusion.convex(DENSE, SPARSE, alpha)
    with pytest.raises(TypeError, match="alpha must be a number"):
        fusion.convex(DENSE, SPARSE, "0.5")
    with pytest.raises(ValueError, match="unknown norm 'tmm'; expected one of 'minmax', 'theoretical'"):
        fusion.convex(DENSE, SPARSE, 0.5, norm="tmm")
    with pytest.raises(ValueError, match=r"hits_list\[1\]: row 0 has score -1 below the lower bound 0"):
        fusion.convex(DENSE, hits([(A, -1.0)]))
    with pytest.raises(ValueError, match="norm='theoretical' needs lower_bounds"):
        fusion.combine([DENSE, SPARSE], norm="theoretical")
    with pytest.raises(ValueError, match="lower_bounds must be 2 values"):
        fusion.combine([DENSE, SPARSE], norm="theoretical", lower_bounds=[0.0])
    with pytest.raises(ValueError, match="unknown lower_bounds\\[0\\] 'dot'"):
        fusion.convex(DENSE, SPARSE, lower_bounds=("dot", "bm25"))
    with pytest.raises(ValueError, match="lower_bounds apply to norm='theoretical' only"):
        fusion.combine([DENSE, SPARSE], norm="minmax", lower_bounds=[0, 0])
    with pytest.raises(ValueError, match="lower_bounds\\[1\\] must be finite"):
        fusion.convex(DENSE, SPARSE, lower_bounds=(-1.0, float("-inf")))


BOUNDED = st.integers(-8, 40).map(lambda x: x / 8)  # >= -1: valid for both bounds below


@settings(max_examples=120, deadline=None)
@given(st.data(), st.sampled_from(["theoretical", "minmax", "zscore", "rank", None]),
       st.sampled_from([0.0, 0.25, 0.6, 1.0]), st.booleans())
def test_convex_equals_the_reference(data, norm, alpha, ties):
    nq = data.draw(st.integers(1, 3))
    dense = data.draw(hits_batch(nq, scores=BOUNDED, ties=ties))
    sparse = data.draw(hits_batch(nq, scores=BOUNDED.map(abs), ties=ties))
    fused = fusion.convex(dense, sparse, alpha, norm=norm, lower_bounds=(-1.0, 0.0))
    for row in range(nq):
        pairs = [[(i, float(s)) for i, s in zip(h.ids[row], h.scores[row]) if i != -1]
                 for h in (dense, sparse)]
        want = convex_query(*pairs, alpha, norm, (-1.0, 0.0))
        assert as_dict(fused, row) == pytest.approx(
            {d: float(np.float32(v)) for d, v in want.items()}, rel=1e-6, abs=1e-9)
        # The general reference agrees as well (two formulations of one definition).
        general = fuse_query(pairs, "wsum", norm, [alpha, 1 - alpha], lower_bounds=[-1.0, 0.0])
        assert general == pytest.approx(want, rel=1e-12, abs=1e-12)
        ids, scores = fused.ids[row], fused.scores[row]
        n = int((ids != -1).sum())
        assert all((scores[j], -ids[j]) > (scores[j + 1], -ids[j + 1]) for j in range(n - 1))
