"""GpuBM25Index: BM25 scoring of query batches on a CUDA device.

A snapshot of a BM25Index (``BM25Index.to("cuda")``): every posting's score part,
as the CPU index computes it, sits on the device in CSR form (term -> slots and
float32 parts, 8 bytes per posting), plus a bitmap per dense term. Scores are the
CPU index's to the bit and ties go to the smaller id, so ``search`` returns
exactly what ``BM25Index.search`` returns. Two plans (cuda/gpu_bm25.h):

- pruned (default): the documents holding one of the query's rarer terms are the
  candidates, each scored exactly; where the k-th best candidate beats the most
  the common ("dense") terms alone can give any other document, the candidates'
  top k is the answer (reference.bm25_candidate_search);
- exhaustive, for the other queries: every posting of every query term is added
  into per-query accumulators, then the top k is cut (reference.bm25_impact_search).

Queries are tokenized and weighted on the host by the snapshot's CPU copy, which
this index keeps (host memory equal to the CPU index). Changes to the original
index do not reach the snapshot: take a new one with ``to("cuda")``.
"""

from __future__ import annotations

import numpy as np

from .._util.arrays import check_positive_int
from .._util.cuda import HostBackedGpuIndex, cuda_module, parse_device
from .._util.devices import register_gpu_version
from .bm25 import BM25Index
from ..hits import Hits


def _rank_of_slot(slot_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rank of each slot's id among the live ids, -1 if removed; the live ids ascending)."""
    live = slot_ids >= 0
    sorted_ids = np.sort(slot_ids[live])
    ranks = np.full(len(slot_ids), -1, dtype=np.int32)
    ranks[live] = np.searchsorted(sorted_ids, slot_ids[live])
    return ranks, np.ascontiguousarray(sorted_ids, dtype=np.int64)


class GpuBM25Index(HostBackedGpuIndex):
    """Exact BM25 top-k for batches of queries on a CUDA device (see the module doc).

    Build it with ``BM25Index.to("cuda")`` or ``GpuBM25Index.from_index(index, device)``.
    """

    def __init__(self, index: BM25Index, device="cuda", dense_min_df: int | None = None):
        """dense_min_df: terms held by at least this many documents are dense (never make
        candidates; probed through a bitmap of 1/8 byte per document). Default: one
        document in 16."""
        if not isinstance(index, BM25Index):
            raise TypeError(f"index must be a BM25Index, got {type(index).__name__}")
        dense_min_df = 0 if dense_min_df is None else check_positive_int(dense_min_df,
                                                                          "dense_min_df")
        self._device = parse_device(device)
        self._host = index.copy()
        impacts = self._host.impacts()
        ranks, sorted_ids = _rank_of_slot(impacts["slot_ids"])
        self._native = cuda_module().DeviceBm25(
            self._device, offsets=impacts["offsets"], docs=impacts["docs"],
            values=impacts["values"], rank_of_slot=ranks, sorted_ids=sorted_ids,
            dense_min_df=dense_min_df)
        # Private knobs for tests and benchmarks: exhaustive (skip the pruned plan),
        # first_chunk_rows, max_chunk_rows, max_group.
        self._search_options: dict = {}

    @classmethod
    def from_index(cls, index: BM25Index, device="cuda", dense_min_df: int | None = None
                   ) -> GpuBM25Index:
        """A GPU snapshot of a CPU BM25Index."""
        return cls(index, device, dense_min_df)

    @property
    def dense_min_df(self) -> int:
        return self._native.dense_min_df

    @property
    def device_bytes(self) -> int:
        """Device memory of the postings (8 bytes each) and the per-document arrays."""
        return self._native.device_bytes

    def __repr__(self) -> str:
        h = self._host
        return (f"GpuBM25Index(k1={h.k1}, b={h.b}, variant={h.variant!r}, "
                f"device={self.device!r}, n={len(self)})")

    def to(self, device):
        """'cpu' gives a BM25Index copy; a CUDA device gives a GpuBM25Index there."""
        if device == "cpu":
            return self._host.copy()
        return GpuBM25Index(self._host, device, self.dense_min_df)

    def save(self, path) -> None:
        """Writes the snapshot as a BM25Index file (BM25Index.save)."""
        self._host.save(path)

    @classmethod
    def load(cls, path, device="cuda", dense_min_df: int | None = None) -> GpuBM25Index:
        """Reads a BM25Index file (BM25Index.load) onto a CUDA device."""
        return cls(BM25Index.load(path), device, dense_min_df)

    def search(self, queries, k: int) -> Hits:
        """Top-k documents of each query: ``Hits`` [nq, k], best first, ties by id.

        queries: as for BM25Index.search (a str, a list of str or of token lists).
        As there, only documents holding a query term are results; rows are padded with
        id -1 / score -inf past them.
        """
        return self._search(queries, k)[0]

    def _search(self, queries, k: int) -> tuple[Hits, np.ndarray]:
        """search(), plus whether each query was scored exhaustively (for tests and
        benchmarks)."""
        k = check_positive_int(k, "k")
        terms, weights, offsets, base = self._host.weighed_queries(queries)
        scores, ids, exhaustive = self._native.search(terms, weights, offsets, base, k,
                                                      **self._search_options)
        return Hits(scores, ids), exhaustive


register_gpu_version(BM25Index, GpuBM25Index.from_index)
