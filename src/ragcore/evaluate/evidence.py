"""Evidence-span labels: gold evidence as character spans, independent of the chunking.

A question's gold evidence is a list of groups; each group is a list of alternative spans
``(doc, start, end)`` (end exclusive). A retrieved chunk ``(doc, start, end)`` covers a span
when it contains at least half of it (a span cut exactly in half by a chunk boundary is covered
by both chunks). A group is covered when any of its spans is covered.

- ``recall@k``: covered groups in the top k chunks / groups, per question.
- ``mrr`` (``mrr@k``): 1 / rank of the first chunk covering any span of any group (in the top k).

Means are over answerable questions: a question whose gold is None has no answer in the corpus
and is skipped; a question with an empty list of groups is an error.
"""

from __future__ import annotations

from itertools import chain

import numpy as np

from ..hits import PADDING_ID, Hits
from ._metrics import Evaluation, parse_metrics

METRICS = {"recall": "required", "mrr": "optional"}


def evaluate_evidence(retrieved, gold, metrics=("recall@5", "mrr"), chunks=None) -> Evaluation:
    """Per-question and mean span recall / reciprocal rank.

    retrieved: per question, the chunks ``(doc, start, end)`` best first; or Hits whose ids
    index ``chunks``, a sequence of ``(doc, start, end)`` (or three arrays doc, start, end).
    gold: per question, None (unanswerable) or a list of groups of ``(doc, start, end)`` spans.
    Returns an Evaluation whose qids are the indices of the answerable questions.
    """
    parsed = parse_metrics(metrics, METRICS, aliases={})
    n_questions, chunk_q, chunk_rank, cdoc, cstart, cend = _flat_chunks(retrieved, chunks)
    if not isinstance(gold, (list, tuple)):
        raise TypeError(f"gold must be a list with one entry per question, got {type(gold).__name__}")
    if n_questions != len(gold):
        raise ValueError(f"retrieved has {n_questions} questions but gold has {len(gold)}")
    answerable = [i for i, groups in enumerate(gold) if groups is not None]
    if not answerable:
        raise ValueError("no question is answerable (every gold entry is None)")
    for i in answerable:
        _check_groups(gold[i], i)

    groups = [group for i in answerable for group in gold[i]]
    group_q = np.repeat(np.arange(len(answerable)), [len(gold[i]) for i in answerable])
    span_group = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
    spans = list(chain.from_iterable(groups))
    compact = np.full(n_questions, -1)
    compact[answerable] = np.arange(len(answerable))
    keep = compact[chunk_q] >= 0  # chunks of answerable questions
    chunk_q, chunk_rank = compact[chunk_q[keep]], chunk_rank[keep]
    cdoc, cstart, cend = cdoc[keep], cstart[keep], cend[keep]
    sdoc, sstart, send = _columns(spans, "gold span")
    if (send <= sstart).any() or (sstart < 0).any():
        bad = int(np.argmax((send <= sstart) | (sstart < 0)))
        raise ValueError(f"gold span {spans[bad]!r} must have 0 <= start < end")

    first_span = _first_covering_rank(chunk_q, chunk_rank, cdoc, cstart, cend,
                                      group_q[span_group], sdoc, sstart, send)
    first_group = np.full(len(groups), np.inf)
    np.minimum.at(first_group, span_group, first_span)
    n_groups = np.bincount(group_q, minlength=len(answerable))
    per_query = {}
    for name, (base, k) in parsed.items():
        if base == "recall":
            covered = np.bincount(group_q, weights=first_group <= k, minlength=len(answerable))
            per_query[name] = covered / n_groups
        else:
            first = np.full(len(answerable), np.inf)
            np.minimum.at(first, group_q, first_group)
            if k is not None:
                first[first > k] = np.inf
            per_query[name] = 1.0 / first
    return Evaluation(np.array(answerable), per_query)


def _flat_chunks(retrieved, chunks):
    """(questions, question, rank from 1, doc, start, end) of every retrieved chunk."""
    if isinstance(retrieved, Hits):
        if chunks is None:
            raise ValueError("Hits input needs chunks: the (doc, start, end) of every chunk id")
        doc, start, end = _chunk_table(chunks)
        if (retrieved.ids >= len(doc)).any():
            raise IndexError(f"chunk id {int(retrieved.ids.max())} is beyond chunks, which has {len(doc)}")
        valid = retrieved.ids != PADDING_ID
        q, col = np.nonzero(valid)
        ids = retrieved.ids[valid]
        return retrieved.nq, q, col + 1, doc[ids].astype(str), start[ids], end[ids]
    if chunks is not None:
        raise ValueError("chunks applies to Hits input only")
    if not isinstance(retrieved, (list, tuple)):
        raise TypeError("retrieved must be Hits or a list (per question) of (doc, start, end) chunks")
    sizes = [len(c) for c in retrieved]
    rank = np.arange(sum(sizes)) - np.repeat(np.cumsum(sizes) - sizes, sizes) + 1
    columns = _columns(list(chain.from_iterable(retrieved)), "retrieved chunk")
    return len(retrieved), np.repeat(np.arange(len(retrieved)), sizes), rank, *columns


def _chunk_table(chunks):
    """doc, start, end arrays of a chunk table (three arrays, or (doc, start, end) triples)."""
    if isinstance(chunks, tuple) and len(chunks) == 3 and all(np.ndim(c) == 1 for c in chunks):
        doc, start, end = (np.asarray(c) for c in chunks)
        if not len(doc) == len(start) == len(end):
            raise ValueError("chunks: doc, start and end must have the same length")
        if start.dtype.kind not in "iu" or end.dtype.kind not in "iu":
            raise TypeError("chunks: start and end must be integer character offsets")
        if (end < start).any():
            raise ValueError(f"chunks: chunk {int(np.argmax(end < start))} ends before it starts")
        return doc, start.astype(np.int64), end.astype(np.int64)
    return _columns(list(chunks), "chunks entry")


def _check_groups(groups, i: int) -> None:
    if not isinstance(groups, (list, tuple)):
        raise TypeError(f"gold[{i}] must be a list of groups (or None), got {type(groups).__name__}")
    if not groups:
        raise ValueError(f"gold[{i}] has no groups; pass None for a question with no answer in the corpus")
    for j, group in enumerate(groups):
        if not isinstance(group, (list, tuple, set, frozenset)) or not group:
            raise ValueError(f"gold[{i}][{j}] must be a non-empty list of alternative spans")


def _columns(triples: list, what: str):
    """doc (str), start, end (int64) columns of (doc, start, end) triples."""
    for t in triples:
        if not isinstance(t, (tuple, list)) or len(t) != 3:
            raise ValueError(f"each {what} must be (doc, start, end), got {t!r}")
    if not triples:
        return np.zeros(0, dtype=str), np.zeros(0, np.int64), np.zeros(0, np.int64)
    doc, start, end = zip(*triples)
    try:
        start, end = np.asarray(start, dtype=np.int64), np.asarray(end, dtype=np.int64)
    except (TypeError, ValueError):
        raise TypeError(f"{what} start and end must be integer character offsets") from None
    if (end < start).any():
        raise ValueError(f"{what} {triples[int(np.argmax(end < start))]!r} ends before it starts")
    return np.asarray(doc).astype(str), start, end


def _first_covering_rank(cq, crank, cdoc, cstart, cend, sq, sdoc, sstart, send) -> np.ndarray:
    """Per span, the best rank of a chunk of its question that covers it (inf if none)."""
    _, codes = np.unique(np.concatenate([cdoc, sdoc]), return_inverse=True)
    codes = codes.ravel()
    width = np.int64(codes.max(initial=0) + 1)
    ckey = cq * width + codes[: len(cdoc)]
    skey = sq * width + codes[len(cdoc):]
    order = np.argsort(ckey, kind="stable")
    lo = np.searchsorted(ckey[order], skey, side="left")
    count = np.searchsorted(ckey[order], skey, side="right") - lo
    span = np.repeat(np.arange(len(skey)), count)  # one (span, chunk) pair per same-document chunk
    offsets = np.arange(len(span)) - np.repeat(np.cumsum(count) - count, count)
    chunk = order[np.repeat(lo, count) + offsets]
    overlap = np.minimum(cend[chunk], send[span]) - np.maximum(cstart[chunk], sstart[span])
    covered = 2 * overlap >= send[span] - sstart[span]
    first = np.full(len(skey), np.inf)
    np.minimum.at(first, span[covered], crank[chunk[covered]])
    return first
