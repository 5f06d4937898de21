"""RaBitQ codes: the native quantiser and estimator against the numpy reference, and
the error bound checked empirically at its stated confidence."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ragcore
from ragcore import _core
from ragcore.reference import rabitq as ref
from _ivf_data import clustered


def _rotated_inputs(n, dim, seed):
    rng = np.random.default_rng(seed)
    dp = ref.padded_dim(dim)
    v = rng.standard_normal((n, dp)).astype(np.float32) * rng.uniform(0.1, 3.0, (n, 1)).astype(np.float32)
    c = rng.standard_normal((3, dp)).astype(np.float32)
    labels = rng.integers(0, 3, n).astype(np.int64)
    return v, c, labels


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 20), dim=st.sampled_from([1, 7, 8, 13, 64, 97]),
       bits=st.integers(1, 8), seed=st.integers(0, 10_000))
def test_native_rows_equal_reference_rows(n, dim, bits, seed):
    v, c, labels = _rotated_inputs(n, dim, seed)
    rows, cosines = _core.rabitq_encode(v, c, labels, bits=bits, n_threads=1)
    want = ref.encode_rows(v, c, labels, bits)
    dp = v.shape[1]
    y_got, f_got = ref.decode_rows(rows, dp, bits)
    y_want, f_want = ref.decode_rows(want, dp, bits)
    cos = lambda y: np.einsum("ij,ij->i", y, v) / np.linalg.norm(y, axis=1) / np.linalg.norm(v, axis=1)
    # The native walk also visits the states between tied steps, so it can only do better.
    assert (cos(y_got) >= cos(y_want) - 1e-9).all()
    np.testing.assert_allclose(cosines, cos(y_got), rtol=1e-5)
    same = (y_got == y_want).all(axis=1)
    assert same.mean() >= 0.9  # random data: ties between critical scales are rare
    np.testing.assert_allclose(f_got[same], f_want[same], rtol=2e-4, atol=1e-5)


def test_more_bits_give_closer_codes():
    v, c, labels = _rotated_inputs(200, 128, 0)
    mean_cos = [float(_core.rabitq_encode(v, c, labels, bits=b)[1].mean()) for b in range(1, 9)]
    assert all(a < b for a, b in zip(mean_cos, mean_cos[1:]))
    assert 0.78 < mean_cos[0] < 0.82  # 1 bit: E cos = sqrt(2 / pi) = 0.798 for Gaussian data


def _index(metric, bits, n=600, dim=24, nlist=6, seed=0):
    x = clustered(n, dim, nlist, seed=seed, spread=0.5)
    index = ragcore.IVFIndex(dim, nlist, metric, "rabitq", bits=bits, seed=seed)
    index.train(x)
    index.add(x)
    return index, x


@settings(max_examples=20, deadline=None)
@given(metric=st.sampled_from(["ip", "cosine", "l2"]), bits=st.integers(1, 8),
       seed=st.integers(0, 1000), simd=st.sampled_from([None, "Scalar"]))
def test_native_estimates_equal_reference_estimates(metric, bits, seed, simd):
    index, x = _index(metric, bits, n=300, seed=seed)
    rng = np.random.default_rng(seed)
    query = rng.standard_normal((1, index.dim)).astype(np.float32)
    if metric == "cosine":
        query /= np.linalg.norm(query)
    lists = index._lists
    level = None if simd is None else getattr(_core.SimdLevel, simd)
    for l in range(index.nlist):
        a, b = lists.offsets[l], lists.offsets[l + 1]
        est, err = _core.rabitq_estimates(
            lists.rows, query, l, centroids=index._coarse.centroids,
            centroid_sq_norms=index._coarse.sq_norms, rotation=index._storage.rotation, bits=bits,
            list_offsets=lists.offsets, ids=lists.ids, exact_rows=lists.exact,
            sq_norms=lists.sq_norms, metric=_core.Metric.L2 if metric == "l2" else _core.Metric.InnerProduct,
            simd_level=level)
        want_est, want_err = ref.estimates(
            lists.rows[a:b], query[0], index._coarse.centroids[l], index.rotation, bits, metric,
            None if lists.sq_norms is None else lists.sq_norms[a:b])
        scale = 1.0 + np.abs(want_est).max(initial=0.0)
        np.testing.assert_allclose(est, want_est, rtol=0, atol=2e-4 * scale)
        np.testing.assert_allclose(err, want_err, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("bits", [1, 2, 4, 8])
@pytest.mark.parametrize("epsilon", [1.0, 1.9, 3.0])
def test_error_bound_holds_at_its_stated_confidence(bits, epsilon):
    # Random unit vectors: the true residual inner product lies within epsilon
    # bounds of the estimate at least as often as a normal variable within epsilon
    # standard deviations (minus sampling slack over 20 x 400 pairs).
    rng = np.random.default_rng(bits)
    dim = 64
    x = rng.standard_normal((400, dim)).astype(np.float32)
    index = ragcore.IVFIndex(dim, 1, "ip", "rabitq", bits=bits, epsilon=epsilon)
    index.train(x)
    index.add(x)
    queries = rng.standard_normal((20, dim)).astype(np.float32)
    inside = []
    for q in queries:
        est, err = index.estimates(q[None, :], 0)
        truth = index._lists.exact.astype(np.float64) @ q.astype(np.float64)
        inside.append(np.abs(truth - est) <= epsilon * err + 1e-4)
    rate = float(np.mean(inside))
    assert rate >= ref.bound_confidence(epsilon) - 0.02, rate
    # ... and the bound is not vacuous: errors use a good part of it.
    assert rate < 1.0 or epsilon >= 3.0
