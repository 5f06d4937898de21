"""IVFIndex(dtype="pq4"): 4-bit PQ codes per list in fast-scan blocks, re-scored exactly.
Native against the numpy reference, against PQIndex and FlatIndex, filters, add/remove,
save/load (mmap and crafted files), bad input."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ragcore
from ragcore import IndexFileError, reference
from ragcore.reference import ann as ref_ann
from _crafted import rewrite, stored
from _hits_check import assert_hits_close
from _ivf_data import clustered, recall

KIND = "IVFIndex"


def _ivf(x, nlist=8, m=4, metric="ip", ids=None, seed=0):
    index = ragcore.IVFIndex(x.shape[1], nlist, metric, "pq4", m=m, seed=seed)
    index.train(x)
    index.add(x, ids=ids)
    return index


def _luts(index, q, metric):
    books = _books(index)
    return [ref_ann.pq_quantize_tables(ref_ann.pq_tables(v, books, metric)) for v in q]


def _books(index):
    """The IVF's codebooks, through PQIndex trained identically (same sample, seed, m)."""
    return index._storage.books  # noqa: SLF001 (test access to the trained codebooks)


def _assert_nearest_codes(codes, rows, books):
    """Each stored code is a nearest centroid of its part (the reference's, or one at the
    same distance to float32 rounding: the native encoder sums in float32)."""
    m, _, dsub = books.shape
    want = ref_ann.pq_encode(rows, books)
    parts = rows.astype(np.float64).reshape(len(rows), m, dsub)
    books = books.astype(np.float64)
    picked = ((parts - books[np.arange(m), codes]) ** 2).sum(-1)
    best = ((parts - books[np.arange(m), want]) ** 2).sum(-1)
    np.testing.assert_array_less(picked, best + 1e-4 * (1 + best))


def _list_order(index, x, ids):
    """x in the index's list order (rows as the native scan numbers them)."""
    position = {int(i): j for j, i in enumerate(ids)}
    return x[[position[int(i)] for i in index.ids]]


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 300), nlist=st.integers(1, 12), m=st.sampled_from([1, 2, 3, 6]),
       k=st.integers(1, 12), nprobe=st.integers(1, 12), rescore=st.integers(1, 6),
       metric=st.sampled_from(["ip", "l2"]), filtered=st.booleans(), seed=st.integers(0, 1000),
       nq=st.integers(1, 20), n_threads=st.sampled_from([1, 2]))
def test_native_equals_the_reference_ivf_pq_pipeline(n, nlist, m, k, nprobe, rescore, metric,
                                                     filtered, seed, nq, n_threads):
    """Small integers: every table and score is exact in float32 and float64 alike, so
    the native search and the reference agree id for id. From 8 queries without a filter
    the native search scans list by list for all queries at once: the same answers."""
    rng = np.random.default_rng(seed)
    nlist, nprobe = min(nlist, n), min(nprobe, nlist, n)
    x = rng.integers(-3, 4, (n, 6)).astype(np.float32)
    sample = np.concatenate([x, rng.integers(-3, 4, (16, 6)).astype(np.float32)])
    ids = rng.permutation(5 * n)[:n].astype(np.int64)
    index = ragcore.IVFIndex(6, nlist, metric, "pq4", m=m, seed=seed)
    index.train(sample)
    index.add(x, ids=ids)
    q = rng.integers(-3, 4, (nq, 6)).astype(np.float32)
    allow = ids[rng.random(n) < 0.3] if filtered else None
    got = index.search(q, k, nprobe=nprobe, rescore=rescore, allow=allow, n_threads=n_threads)
    rows = _list_order(index, x, ids)
    codes = index._lists.rows  # noqa: SLF001 (the stored codes, list order)
    _assert_nearest_codes(codes, rows, _books(index))
    allowed = None if allow is None else np.isin(index.ids, allow)
    want = ref_ann.ivf_pq_search(index.centroids, index._lists.offsets, rows, codes,  # noqa: SLF001
                                 _luts(index, q, metric), q, k, nprobe, rescore, metric,
                                 index.ids, allowed)
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_allclose(got.scores, want.scores, rtol=0, atol=1e-4)
    # One query at a time takes the coarse step's few-queries path: the same answers.
    for i in range(len(q)):
        one = index.search(q[i], k, nprobe=nprobe, rescore=rescore, allow=allow)
        np.testing.assert_array_equal(one.ids[0], want.ids[i])


@pytest.mark.parametrize("metric", ["ip", "cosine", "l2"])
def test_every_list_and_every_candidate_is_flat_search(metric):
    x = clustered(700, 16, 10, seed=1) * np.random.default_rng(1).uniform(0.5, 2, (700, 1)).astype(np.float32)
    q = clustered(25, 16, 10, seed=2)
    ids = np.random.default_rng(3).permutation(5000)[:700].astype(np.int64)
    index = _ivf(x, nlist=10, m=4, metric=metric, ids=ids)
    flat = ragcore.FlatIndex(16, metric)
    flat.add(x, ids=ids)
    got = index.search(q, 10, nprobe=10, rescore=70)  # 700 candidates: all re-scored
    want = flat.search(q, 10)
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_array_equal(got.scores, want.scores)  # the same kernel: bit-equal


def test_probing_every_list_equals_pqindex_with_the_same_codes():
    x = clustered(900, 32, 12, seed=4)
    q = clustered(40, 32, 12, seed=5)
    index = _ivf(x, nlist=12, m=8)
    pq = ragcore.PQIndex(32, 8)
    pq.train(x)  # same sample, seed and m: the same codebooks
    np.testing.assert_array_equal(pq.centroids, _books(index))
    pq.add(_list_order(index, x, np.arange(900)), ids=index.ids)  # same rows, same order
    for rescore in (1, 3, 8):
        a = index.search(q, 10, nprobe=12, rescore=rescore)
        b = pq.search(q, 10, rescore=rescore)
        np.testing.assert_array_equal(a.ids, b.ids)
        np.testing.assert_array_equal(a.scores, b.scores)


def test_recall_grows_with_nprobe_and_reaches_high_values():
    x = clustered(4000, 32, 40, seed=6)
    rng = np.random.default_rng(7)  # queries near the data, not the data itself
    q = x[rng.permutation(4000)[:100]] + 0.1 * rng.standard_normal((100, 32)).astype(np.float32)
    index = _ivf(x, nlist=32, m=16)
    truth = reference.flat_search(x, q, 10).ids
    recalls = [recall(index.search(q, 10, nprobe=p, rescore=16).ids, truth) for p in (1, 2, 4, 8, 16, 32)]
    assert all(b >= a - 0.01 for a, b in zip(recalls, recalls[1:])), recalls
    assert recalls[-1] > 0.95, recalls


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_filters_apply_inside_the_scan_and_probe_further(metric):
    x = clustered(1500, 16, 15, seed=8)
    q = clustered(20, 16, 15, seed=9)
    index = _ivf(x, nlist=15, m=4, metric=metric)
    allow = np.arange(0, 1500, 97)  # 16 allowed vectors, spread over the lists
    got = index.search(q, 10, nprobe=1, rescore=4, allow=allow)
    assert np.isin(got.ids, allow).all()  # k = 10 found even with one list probed
    full = index.search(q, 10, nprobe=15, rescore=100, allow=allow)
    assert_hits_close(full, reference.dense_scores(x[allow], q, metric), allow, 10, atol=1e-4)
    mask = np.zeros(1500, dtype=bool)
    mask[allow] = True
    np.testing.assert_array_equal(index.search(q, 10, nprobe=15, rescore=100, allow=mask).ids, full.ids)


@pytest.mark.parametrize("mmap", [False, True])
@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_save_load_gives_the_same_answers(tmp_path, mmap, metric):
    x = clustered(600, 16, 8, seed=11)
    index = _ivf(x, nlist=8, m=8, metric=metric)
    index.remove([5, 17])
    path = tmp_path / "ivf.rc"
    index.save(path)
    back = ragcore.IVFIndex.load(path, mmap=mmap)
    assert repr(back) == repr(index) and back.m == 8
    for nprobe, rescore in ((1, 1), (3, 4), (8, 100)):
        a = index.search(x[:30], 10, nprobe=nprobe, rescore=rescore)
        b = back.search(x[:30], 10, nprobe=nprobe, rescore=rescore)
        np.testing.assert_array_equal(a.ids, b.ids)
        np.testing.assert_array_equal(a.scores, b.scores)
    assert back.add(x[:1])[0] == 600


def test_crafted_files_are_refused_naming_the_field(tmp_path):
    x = clustered(300, 16, 4, seed=12)
    path = tmp_path / "ivf.rc"
    _ivf(x, nlist=4, m=4).save(path)
    _, arrays = stored(path, KIND)
    n = len(arrays["ids"])
    cases = [
        ({"params": {"m": 5}}, "params.m"),
        ({"params": {"m": 0}}, "params.m"),
        ({"drop": ["m"]}, "params.m"),
        ({"arrays": {"rows": np.full((n, 4), 16, np.uint8)}}, "rows"),
        ({"arrays": {"rows": arrays["rows"][:, :3].copy()}}, "rows"),
        ({"arrays": {"codebooks": arrays["codebooks"][:-1]}}, "codebooks"),
        ({"arrays": {"codebooks": np.full_like(arrays["codebooks"], np.inf)}}, "codebooks"),
        ({"drop": ["codebooks"]}, "codebooks"),
        ({"drop": ["exact"]}, "exact"),
        ({"arrays": {"exact": np.full_like(arrays["exact"], 1e30)}}, "exact"),
        ({"arrays": {"offsets": arrays["offsets"][::-1].copy()}}, "offsets"),
    ]
    for change, field in cases:
        _ivf(x, nlist=4, m=4).save(path)
        rewrite(path, KIND, **change)
        with pytest.raises(IndexFileError, match=field):
            ragcore.IVFIndex.load(path)


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="needs m="):
        ragcore.IVFIndex(16, 4, dtype="pq4")
    with pytest.raises(ValueError, match="not divisible by m=5"):
        ragcore.IVFIndex(16, 4, dtype="pq4", m=5)
    with pytest.raises(ValueError, match="m applies to dtype='pq4' only"):
        ragcore.IVFIndex(16, 4, dtype="sq8", m=4)
    index = ragcore.IVFIndex(16, 4, dtype="pq4", m=4)
    with pytest.raises(ValueError, match="at least 16"):
        index.train(np.random.default_rng(0).standard_normal((10, 16)).astype(np.float32))
    with pytest.raises(ValueError, match="needs at least 4"):
        index.train(np.ones((3, 16), np.float32))
    with pytest.raises(RuntimeError, match="not trained"):
        index.search(np.ones(16, np.float32), 3)
    index.train(np.random.default_rng(0).standard_normal((64, 16)).astype(np.float32))
    assert (index.search(np.ones(16, np.float32), 3).ids == -1).all()  # empty: padding
    with pytest.raises(ValueError, match="rescore must be >= 1"):
        index.search(np.ones(16, np.float32), 3, rescore=0)
    assert index.bytes_per_vector()["scanned"] == 2
