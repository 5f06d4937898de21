"""Which texts go into one model call: sorted by length, bounded by count and by
padded tokens, so long texts do not pad short ones and a call's activations stay
small enough for the core's cache (256 padded tokens a call was fastest per text for
fp32 and int8 on the CPUs measured; BiEncoder's token_budget)."""

from __future__ import annotations

import numpy as np


def plan_batches(lengths, max_texts: int, token_budget: int | None) -> list[np.ndarray]:
    """Row indices of each batch, longest texts first (ties in input order).

    A batch holds at most max_texts texts and, when token_budget is set, at most
    token_budget padded tokens (its longest text's length times its size); a
    text longer than the budget is a batch of its own. Every row is in exactly
    one batch.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    order = np.argsort(-lengths, kind="stable")
    if token_budget is None:
        return [order[i:i + max_texts] for i in range(0, len(order), max_texts)]
    batches, start = [], 0
    while start < len(order):
        width = int(lengths[order[start]])  # the longest of the batch: it sets the padding
        size = max(1, min(max_texts, token_budget // max(width, 1)))
        batches.append(order[start:start + size])
        start += size
    return batches


def split_padded(rows: np.ndarray, batch, max_tokens: int) -> list:
    """(rows, batch) pieces of one padded batch, each of at most max_tokens padded
    tokens (at least one text) and all at the batch's own width, so that a model
    whose texts do not interact computes every text exactly as in the whole batch."""
    width = batch.input_ids.shape[1]
    size = max(1, max_tokens // max(width, 1))
    return [(rows[a:a + size], batch.rows(a, a + size)) for a in range(0, len(rows), size)]
