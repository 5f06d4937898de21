"""ragcore.rag.fusion: worked examples, invariances and argument checks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _fusion_data import hits, hits_lists
from ragcore.rag import fusion
from ragcore import reference as ref
from ragcore.hits import Hits

A, B, C, D, E = 1, 2, 3, 4, 5


SPARSE = hits([(A, 9.0), (B, 7.5), (C, 3.0), (D, 1.0)])
DENSE = hits([(B, 0.9), (D, 0.8), (E, 0.7), (A, 0.6)])


def test_rrf_worked_example():
    fused = fusion.rrf([SPARSE, DENSE], r0=60)
    assert fused.ids.tolist() == [[B, A, D, C, E]]  # C = E tie: id ascending
    np.testing.assert_allclose(fused.scores[0], [0.0325, 0.0320, 0.0318, 0.0159, 0.0159], atol=5e-5)
    assert fused.scores[0, 3] == fused.scores[0, 4]


def test_rrf_rank_one_and_ten_against_three_and_three():
    ten = hits([(i, 10.0 - i) for i in range(1, 11)])  # doc 10 at rank 10, doc 3 at rank 3
    other = hits([(10, 5.0), (20, 4.0), (3, 3.0)])
    fused = fusion.rrf([ten, other])
    got = dict(zip(fused.ids[0].tolist(), fused.scores[0].tolist()))
    assert got[10] == pytest.approx(1 / 61 + 1 / 70) and round(got[10], 4) == 0.0307
    assert got[3] == pytest.approx(2 / 63) and round(got[3], 4) == 0.0317
    assert got[3] > got[10]


def test_rrf_weights_and_k():
    fused = fusion.rrf([SPARSE, DENSE], weights=[1.0, 0.0], k=2)
    assert fused.ids.tolist() == [[A, B]]
    np.testing.assert_allclose(fused.scores[0], [1 / 61, 1 / 62], rtol=1e-6)
    wide = fusion.rrf([SPARSE, DENSE], k=8)
    assert wide.ids[0, 5:].tolist() == [-1] * 3 and np.isneginf(wide.scores[0, 5:]).all()


def test_documents_missing_from_a_list_contribute_nothing_and_padding_is_ignored():
    one = hits([(A, 2.0)], [(B, 1.0), (C, 0.5)], k=3)
    two = hits([], [(C, 3.0)], k=2)
    fused = fusion.rrf([one, two])
    assert fused.ids.tolist() == [[A, -1], [C, B]]
    np.testing.assert_allclose(fused.scores[1], [1 / 62 + 1 / 61, 1 / 61], rtol=1e-6)


def test_same_contributions_tie_exactly_whatever_the_list_order():
    # D gets ranks (1, 2, 3), E gets (3, 1, 2): the same sum, added smallest first.
    lists = [hits([(D, 3.0), (9, 2.0), (E, 1.0)]), hits([(E, 3.0), (D, 2.0), (8, 1.0)]),
             hits([(7, 3.0), (E, 2.0), (D, 1.0)])]
    fused = fusion.rrf(lists)
    assert fused.ids[0, :2].tolist() == [D, E]
    assert fused.scores[0, 0] == fused.scores[0, 1]


@pytest.mark.parametrize("norm, want", [
    (None, {A: 9.6, B: 7.5 + 0.9, C: 3.0, D: 1.8, E: 0.7}),
    ("minmax", {A: 1.0, B: 6.5 / 8 + 1.0, C: 0.25, D: 2 / 3, E: 1 / 3}),
    ("max", {A: 1.0 + 0.6 / 0.9, B: 7.5 / 9 + 1.0, C: 3 / 9, D: 1 / 9 + 0.8 / 0.9, E: 0.7 / 0.9}),
    ("rank", {A: 1.0 + 0.25, B: 0.75 + 1.0, C: 0.5, D: 0.25 + 0.75, E: 0.5}),
])
def test_combsum_worked_examples(norm, want):
    fused = fusion.combine([SPARSE, DENSE], method="combsum", norm=norm)
    got = dict(zip(fused.ids[0].tolist(), fused.scores[0].tolist()))
    assert got == pytest.approx(want, rel=1e-6)


def test_zscore_and_combmnz_and_wsum():
    a = hits([(A, 1.0), (B, 2.0), (C, 3.0)][::-1])
    z = fusion.combine([a], method="combsum", norm="zscore")
    np.testing.assert_allclose(z.scores[0], [np.sqrt(1.5), 0.0, -np.sqrt(1.5)], rtol=1e-6, atol=1e-7)
    mnz = fusion.combine([SPARSE, DENSE], method="combmnz", norm=None)
    got = dict(zip(mnz.ids[0].tolist(), mnz.scores[0].tolist()))
    assert got == pytest.approx({A: 2 * 9.6, B: 2 * 8.4, C: 3.0, D: 2 * 1.8, E: 0.7}, rel=1e-6)
    w = fusion.combine([SPARSE, DENSE], method="wsum", norm=None, weights=[0.5, 2.0])
    got = dict(zip(w.ids[0].tolist(), w.scores[0].tolist()))
    assert got == pytest.approx({A: 4.5 + 1.2, B: 3.75 + 1.8, C: 1.5, D: 0.5 + 1.6, E: 1.4}, rel=1e-6)


def test_equal_scores_normalise_to_zero():
    flat = hits([(A, 2.0), (B, 2.0)])
    for norm in ("minmax", "zscore"):
        assert fusion.combine([flat], norm=norm).scores.tolist() == [[0.0, 0.0]]


@settings(max_examples=60, deadline=None)
@given(hits_lists(min_lists=1), st.sampled_from([np.exp, lambda x: 3 * x - 7, lambda x: x**3]))
def test_rrf_is_invariant_under_monotone_transforms(lists, f):
    def transformed(h):
        with np.errstate(over="ignore"):
            scores = np.where(h.ids != -1, f(h.scores.astype(np.float64)), -np.inf)
        return Hits(scores.astype(np.float32), h.ids.copy())

    before = fusion.rrf(lists)
    after = fusion.rrf([transformed(h) for h in lists])
    np.testing.assert_array_equal(before.ids, after.ids)
    np.testing.assert_array_equal(before.scores, after.scores)
    ranked = fusion.combine([transformed(h) for h in lists], method="combsum", norm="rank")
    np.testing.assert_array_equal(fusion.combine(lists, method="combsum", norm="rank").ids, ranked.ids)


@settings(max_examples=60, deadline=None)
@given(hits_lists(min_lists=1), st.sampled_from(["rrf", "wsum", "combsum", "combmnz"]),
       st.sampled_from(["minmax", "zscore", "rank", None]))
def test_output_is_valid_hits_and_batches_equal_single_queries(lists, method, norm):
    fuse = (lambda ls: fusion.rrf(ls)) if method == "rrf" else (
        lambda ls: fusion.combine(ls, method=method, norm=norm))
    fused = fuse(lists)
    for row in range(fused.nq):
        ids, scores = fused.ids[row], fused.scores[row]
        real = ids != -1
        assert not (real[1:] & ~real[:-1]).any()
        union = set().union(*(set(h.ids[row].tolist()) for h in lists)) - {-1}
        assert set(ids[real].tolist()) == union
        for j in range(int(real.sum()) - 1):  # score descending, ties by id ascending
            assert (scores[j], -ids[j]) > (scores[j + 1], -ids[j + 1])
        alone = fuse([h[row] for h in lists])
        n = int(real.sum())
        np.testing.assert_array_equal(alone.ids[0, :n], ids[:n])
        np.testing.assert_array_equal(alone.scores[0, :n], scores[:n])


def test_argument_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"hits_list\[1\] row 0 holds id 2 twice"):
        fusion.rrf([SPARSE, hits([(B, 1.0), (B, 0.5)])])
    with pytest.raises(ValueError, match="hits_list\\[1\\] has 2 queries but hits_list\\[0\\] has 1"):
        fusion.rrf([SPARSE, hits([(A, 1.0)], [(B, 1.0)])])
    with pytest.raises(ValueError, match="hits_list is empty"):
        fusion.rrf([])
    with pytest.raises(TypeError, match="list of Hits"):
        fusion.rrf(SPARSE)
    with pytest.raises(TypeError, match=r"hits_list\[0\] must be a Hits"):
        fusion.combine([{"a": 1.0}])
    with pytest.raises(ValueError, match="k must be >= 1, got 0"):
        fusion.rrf([SPARSE], k=0)
    with pytest.raises(TypeError, match="k must be an integer"):
        fusion.combine([SPARSE], k=2.5)
    with pytest.raises(ValueError, match="r0 must be a finite number >= 0"):
        fusion.rrf([SPARSE], r0=-1)
    with pytest.raises(ValueError, match="weights must be 2 numbers, one per list"):
        fusion.rrf([SPARSE, DENSE], weights=[1.0])
    with pytest.raises(ValueError, match="weights must be finite and >= 0"):
        fusion.combine([SPARSE, DENSE], weights=[1.0, -1.0])
    with pytest.raises(ValueError, match="weights apply to method='wsum' only"):
        fusion.combine([SPARSE, DENSE], method="combmnz", weights=[1.0, 2.0])
    with pytest.raises(ValueError, match="unknown method 'mnz'; expected one of 'wsum', 'combsum', 'combmnz'"):
        fusion.combine([SPARSE], method="mnz")
    with pytest.raises(ValueError, match="unknown norm 'min-max'; expected one of 'minmax', 'theoretical', 'zscore', 'max', 'rank', None"):
        fusion.combine([SPARSE], norm="min-max")
    with pytest.raises(ValueError, match="norm='max' needs a positive top score in every query; query 0"):
        fusion.combine([hits([(A, -1.0), (B, -2.0)])], norm="max")
    with pytest.raises(ValueError, match="padding must come last"):
        fusion.rrf([Hits(np.array([[-np.inf, 1.0]], np.float32), np.array([[-1, 3]]))])
    with pytest.raises(ValueError, match="NaN or infinite score"):
        fusion.combine([Hits(np.array([[np.nan]], np.float32), np.array([[3]]))])


@settings(max_examples=80, deadline=None)
@given(st.data(), st.sampled_from(["rrf", "wsum", "combsum", "combmnz"]),
       st.sampled_from(["minmax", "zscore", "max", "rank", None]), st.sampled_from([0, 1, 60]))
def test_equals_the_reference_with_tied_scores(data, method, norm, r0):
    """Tied scores are allowed here (the comparison with ranx cannot have them)."""
    values = [0.5, 1.0, 2.0, 4.0] if norm == "max" else [-1.0, 0.0, 0.5, 2.0]
    lists = data.draw(hits_lists(min_lists=1, scores=st.sampled_from(values), ties=True))
    weights = None
    if method in ("rrf", "wsum"):
        weights = data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]),
                                     min_size=len(lists), max_size=len(lists)))
    if method == "rrf":
        fused = fusion.rrf(lists, weights=weights, r0=r0)
    else:
        fused = fusion.combine(lists, method=method, norm=norm, weights=weights)
    for row in range(fused.nq):
        pairs = [[(i, float(s)) for i, s in zip(h.ids[row], h.scores[row]) if i != -1] for h in lists]
        want = ref.fuse_query(pairs, method, norm, weights, r0=r0)
        real = fused.ids[row] != -1
        got = dict(zip(fused.ids[row][real].tolist(), fused.scores[row][real].tolist()))
        assert got == pytest.approx({d: float(np.float32(v)) for d, v in want.items()}, rel=1e-6, abs=1e-9)
