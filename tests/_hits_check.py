"""Comparing native Hits with the reference, allowing for float rounding.

Following FAISS's check_ref_knn_with_draws: scores must match position by
position within a tolerance, and ids may differ only among candidates whose
reference scores are within that tolerance of each other.
"""

from __future__ import annotations

import numpy as np

from ragcore.hits import PADDING_ID, Hits


def assert_hits_equal(got: Hits, want: Hits) -> None:
    """Exact equality: used where the arithmetic is exact (small integers)."""
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_array_equal(got.scores, want.scores)


def assert_hits_close(got: Hits, ref_scores: np.ndarray, ref_ids: np.ndarray, k: int, atol) -> None:
    """got against the full reference score matrix ref_scores [nq, n] over ref_ids.

    atol: a scalar or one tolerance per query.
    """
    nq, n = ref_scores.shape
    assert got.scores.shape == (nq, k) and got.ids.shape == (nq, k)
    atol = np.broadcast_to(np.asarray(atol, dtype=np.float64), (nq,))
    position = {int(i): j for j, i in enumerate(ref_ids)}
    kept = min(k, n)
    for row in range(nq):
        tol = atol[row]
        ids, scores = got.ids[row], got.scores[row].astype(np.float64)
        assert (ids[kept:] == PADDING_ID).all() and np.isneginf(scores[kept:]).all()
        real = ids[:kept]
        assert (real != PADDING_ID).all(), f"row {row}: padding inside the first {kept}"
        assert len(set(real.tolist())) == kept, f"row {row}: duplicate ids"
        assert (np.diff(scores[:kept]) <= 0).all(), f"row {row}: scores not descending"
        want_sorted = np.sort(ref_scores[row])[::-1][:kept]
        np.testing.assert_allclose(scores[:kept], want_sorted, rtol=0, atol=tol)
        ref_of_got = np.array([ref_scores[row, position[int(i)]] for i in real])
        np.testing.assert_allclose(ref_of_got, scores[:kept], rtol=0, atol=tol)
        # Nothing clearly better than the k-th result may be missing.
        if kept < n:
            clearly_in = ref_ids[ref_scores[row] > want_sorted[-1] + 2 * tol]
            assert set(clearly_in.tolist()) <= set(real.tolist()), f"row {row}: missed a result"
