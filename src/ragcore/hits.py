"""The result type every retriever returns."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PADDING_ID = -1


@dataclass(frozen=True)
class Hits:
    """Top-k results of a batch of queries, best first.

    ``scores`` is float32 ``[nq, k]`` (higher is better) and ``ids`` is int64
    ``[nq, k]``. Ties are ordered by id ascending. A row with fewer than k
    results is padded with id -1 and score -inf.
    """

    scores: np.ndarray
    ids: np.ndarray

    def __post_init__(self) -> None:
        if not isinstance(self.scores, np.ndarray) or self.scores.dtype != np.float32:
            raise TypeError("Hits.scores must be a float32 numpy array")
        if not isinstance(self.ids, np.ndarray) or self.ids.dtype != np.int64:
            raise TypeError("Hits.ids must be an int64 numpy array")
        if self.scores.ndim != 2 or self.scores.shape != self.ids.shape:
            raise ValueError(
                f"Hits.scores and Hits.ids must be 2-D of the same shape, got "
                f"{self.scores.shape} and {self.ids.shape}"
            )
        if self.ids.size and self.ids.min() < PADDING_ID:
            raise ValueError(f"Hits.ids must be >= 0, or {PADDING_ID} for padding; got "
                             f"{int(self.ids.min())}")

    @property
    def nq(self) -> int:
        """Number of queries (rows)."""
        return self.scores.shape[0]

    @property
    def k(self) -> int:
        """Results per query (columns), padding included."""
        return self.scores.shape[1]

    def __len__(self) -> int:
        return self.nq

    def __getitem__(self, rows) -> Hits:
        """The hits of a subset of queries, as copies (an int keeps the 2-D shape)."""
        if isinstance(rows, (int, np.integer)):
            if not -self.nq <= rows < self.nq:
                raise IndexError(f"query {rows} out of range for {self.nq} queries")
            rows = slice(rows, rows + 1) if rows != -1 else slice(-1, None)
        return Hits(np.array(self.scores[rows]), np.array(self.ids[rows]))

    def to_lists(self) -> list[list[tuple[int, float]]]:
        """Per query, the (id, score) pairs without padding."""
        return [
            [(int(i), float(s)) for i, s in zip(ids, scores) if i != PADDING_ID]
            for ids, scores in zip(self.ids, self.scores)
        ]
