"""IVFIndex search(..., allow=): filtering inside the scan, probing further when needed."""

import numpy as np
from hypothesis import given, settings, strategies as st

import ragcore
from ragcore import reference
from _hits_check import assert_hits_equal
from _ivf_data import clustered, small_integers


@settings(max_examples=15, deadline=None)
@given(n=st.integers(8, 200), k=st.integers(1, 15), fraction=st.floats(0.0, 1.0),
       dtype=st.sampled_from(["float32", "sq8"]), seed=st.integers(0, 10_000))
def test_all_lists_probed_equals_filtered_reference(n, k, fraction, dtype, seed):
    rng = np.random.default_rng(seed)
    x = small_integers(n, 10, seed)
    q = small_integers(3, 10, seed + 1)
    ids = rng.permutation(3 * n)[:n].astype(np.int64)
    allowed = ids[rng.random(n) < fraction]
    index = ragcore.IVFIndex(10, 8, dtype=dtype)
    index.train(x)
    index.add(x, ids=ids)
    got = index.search(q, k, nprobe=8, allow=allowed, rescore=n)
    assert_hits_equal(got, reference.filtered_flat_search(x, q, k, allowed, "ip", ids))


def test_probes_further_until_k_allowed_are_found():
    x = clustered(2000, 16, 40, seed=1, spread=0.2)
    index = ragcore.IVFIndex(16, 40, seed=3)
    index.train(x)
    index.add(x)
    allowed = np.arange(0, 2000, 150)  # 14 ids scattered over the lists
    hits = index.search(x[:20], 10, nprobe=1, allow=allowed)
    assert (hits.ids >= 0).all() and np.isin(hits.ids, allowed).all()
    # A post-filter of the unfiltered nprobe = 1 answer would keep almost nothing.
    plain = index.search(x[:20], 10, nprobe=1)
    assert np.isin(plain.ids, allowed).sum() < 20
    # Probing on in centroid order finds most of the exact filtered answer.
    exact = reference.filtered_flat_search(x, x[:20], 10, allowed)
    assert np.mean([len(np.intersect1d(a, b)) for a, b in zip(hits.ids, exact.ids)]) >= 7
