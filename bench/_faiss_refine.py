"""faiss IndexRefineFlat over one shared IndexFlat of the exact rows.

At N = 1M and d = 384 each IndexRefineFlat holds its own 1.5 GB float32 copy of the
corpus; two or three faiss peers in one process would hold two or three. Here every
peer's refine stage points at one IndexFlat: the same IndexRefineFlat search code
(faiss's batched re-scoring of the flat rows), one copy.
"""

from __future__ import annotations


def shared_rows(faiss, x, metric):
    """One IndexFlat of the exact rows, for refine_flat_on."""
    rows = faiss.IndexFlat(x.shape[1], metric)
    rows.add(x)
    return rows


def refine_flat_on(faiss, base, rows, sample, x):
    """IndexRefineFlat(base), base trained on sample and given x, re-scoring with `rows`
    (which must hold x, in order) instead of its own copy. The caller keeps base and rows
    alive as long as the result."""
    if base.ntotal != 0:
        raise ValueError(f"base: expected an empty index, it holds {base.ntotal} vectors")
    if rows.ntotal != len(x) or rows.d != x.shape[1]:
        raise ValueError(f"rows hold {rows.ntotal} x {rows.d} vectors, x is {x.shape}")
    refine = faiss.IndexRefineFlat(base)  # checks base.ntotal == its own (empty) copy's
    base.train(sample)
    base.add(x)
    refine.own_refine_index = False  # rows are the caller's; its own empty copy is dropped
    refine.refine_index = rows
    refine.ntotal = base.ntotal
    refine.is_trained = True  # set at construction, when base was not yet trained
    return refine
