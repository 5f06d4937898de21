"""The inverted lists of an IVFIndex: one immutable snapshot of its contents.

All lists are concatenated, sorted by list: list l holds rows
``offsets[l]:offsets[l + 1]``. add/remove build a new snapshot (O(n) copying,
so add in large batches) and swap it in; a search keeps the snapshot it
started with, so searches may run while vectors are added or removed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Lists:
    offsets: np.ndarray        # int64 [nlist + 1]
    rows: np.ndarray           # [n, dim] as stored: float32, float16, bfloat16 bits or uint8 codes
    ids: np.ndarray            # int64 [n] external ids
    sorted_ids: np.ndarray     # int64 [n] the ids, sorted (for membership checks)
    sq_norms: np.ndarray | None  # float32 [n], metric "l2" only
    exact: np.ndarray | None     # float32 [n, dim], dtype "sq8" only: rows before quantisation

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def empty(cls, nlist: int, dim: int, row_dtype, l2: bool, exact: bool) -> Lists:
        return cls(
            offsets=np.zeros(nlist + 1, dtype=np.int64),
            rows=np.empty((0, dim), dtype=row_dtype),
            ids=np.empty(0, dtype=np.int64),
            sorted_ids=np.empty(0, dtype=np.int64),
            sq_norms=np.empty(0, dtype=np.float32) if l2 else None,
            exact=np.empty((0, dim), dtype=np.float32) if exact else None,
        )

    def labels(self) -> np.ndarray:
        """The list number of each row."""
        nlist = len(self.offsets) - 1
        return np.repeat(np.arange(nlist, dtype=np.int64), np.diff(self.offsets))

    def with_added(self, labels, rows, ids, sq_norms, exact) -> Lists:
        """A snapshot holding these rows too (each goes to the end of its list)."""
        all_labels = np.concatenate([self.labels(), labels])
        order = np.argsort(all_labels, kind="stable")
        # Each old and new row is written once to its place in the new snapshot (no
        # concatenated copy first: at 1M rows of float32 that copy is 1.5 GB).
        place = np.empty_like(order)
        place[order] = np.arange(len(order))
        old = len(self)

        def merged(before, added):
            out = np.empty((len(order),) + before.shape[1:], dtype=np.result_type(before, added))
            out[place[:old]] = before
            out[place[old:]] = added
            return out

        return self._rebuilt(
            all_labels[order], merged(self.rows, rows), merged(self.ids, ids),
            None if sq_norms is None else merged(self.sq_norms, sq_norms),
            None if exact is None else merged(self.exact, exact),
        )

    def without(self, remove_ids: np.ndarray) -> Lists:
        """A snapshot without the rows of these ids (list order is kept)."""
        keep = ~np.isin(self.ids, remove_ids)
        return self._rebuilt(
            self.labels()[keep], self.rows[keep], self.ids[keep],
            None if self.sq_norms is None else self.sq_norms[keep],
            None if self.exact is None else self.exact[keep],
        )

    def _rebuilt(self, labels, rows, ids, sq_norms, exact) -> Lists:
        nlist = len(self.offsets) - 1
        offsets = np.zeros(nlist + 1, dtype=np.int64)
        np.cumsum(np.bincount(labels, minlength=nlist), out=offsets[1:])
        return Lists(offsets, np.ascontiguousarray(rows), ids, np.sort(ids), sq_norms,
                     None if exact is None else np.ascontiguousarray(exact))
