"""IVFIndex storage dtype="pq4": direct 4-bit PQ codes per list in fast-scan blocks,
the best candidates re-scored with the exact float32 rows (see cpp/include/ragcore/
dense/ivf_pq4.h). The Lists snapshot keeps the codes as its rows ([n, m] uint8) and
the float32 rows as its exact rows; the fast-scan layout is derived from it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _core
from .._util.arrays import ONE_ROW_SQ_NORM_LIMIT
from . import _pq4_codes as codes_
from ._lists import Lists


@dataclass(frozen=True)
class Pq4Layout:
    """One snapshot of the lists and their fast-scan blocks, swapped in as one object,
    so a search never pairs the codes of one snapshot with the rows of another."""
    lists: Lists
    packed: np.ndarray         # uint8, blocks of 32 codes, each list on blocks of its own
    block_offsets: np.ndarray  # int64 [nlist + 1]

    @classmethod
    def of(cls, lists: Lists) -> Pq4Layout:
        packed, block_offsets = codes_.pack_lists(lists.rows, lists.offsets)
        return cls(lists, packed, block_offsets)


def empty_lists(nlist: int, dim: int, m: int, l2: bool) -> Lists:
    lists = Lists.empty(nlist, dim, np.float32, l2, True)
    return Lists(lists.offsets, np.empty((0, m), dtype=np.uint8), lists.ids, lists.sorted_ids,
                 lists.sq_norms, lists.exact)


def search(layout: Pq4Layout, centroids, centroid_sq_norms, m: int, by_dim, metric, q, k: int,
           nprobe: int, rescore: int, mask, by_row: bool, n_threads: int):
    """by_dim: the codebooks by dimension (_pq4_codes.by_dimension)."""
    lists = layout.lists
    return _core.ivf_pq4_search(
        centroids, centroid_sq_norms, lists.offsets, layout.block_offsets, layout.packed,
        m, by_dim, lists.exact, lists.sq_norms, lists.ids, metric,
        np.ascontiguousarray(q), k, nprobe=nprobe, rescore=rescore, allow=mask,
        allow_by_row=by_row, n_threads=n_threads)


def search_row(layout: Pq4Layout, centroids, centroid_sq_norms, m: int, by_dim, metric, query,
               k: int, nprobe: int, rescore: int, n_threads: int):
    """search of one contiguous, finite float32 row, checked natively; None for any other
    query (then search's full checks say what is wrong)."""
    lists = layout.lists
    return _core.ivf_pq4_search_row(
        centroids, centroid_sq_norms, lists.offsets, layout.block_offsets, layout.packed,
        m, by_dim, lists.exact, lists.sq_norms, lists.ids, metric, query, k, nprobe, rescore,
        ONE_ROW_SQ_NORM_LIMIT, n_threads)
