"""Runs and qrels as columns of numpy arrays, built from Hits, dicts or TREC files."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np

from ..hits import PADDING_ID, Hits


def _str_array(values, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a flat list of ids, got shape {arr.shape}")
    if arr.dtype.kind not in "UiuO" and len(arr):
        raise TypeError(f"{name} must hold strings or integers, got dtype {arr.dtype}")
    return arr.astype(str) if len(arr) else arr.astype("U1")


@dataclass(frozen=True)
class Run:
    """Ranked results of a set of queries, as columns.

    ``qids`` holds the distinct query ids (str) in their given order; row j of the columns is
    document ``docids[j]`` with score ``scores[j]`` for query ``qids[q[j]]``. Within a query,
    rows are in the given (as-ranked) order. A query may have no rows (a retriever that found
    nothing): it is still evaluated, scoring 0.
    """

    qids: np.ndarray
    q: np.ndarray
    docids: np.ndarray
    scores: np.ndarray

    @classmethod
    def from_hits(cls, hits: Hits, docids=None, qids=None) -> Run:
        """Rows of Hits as queries; padding dropped.

        docids maps ids to document ids: a sequence (``docids[id]``), a dict ``{id: docid}``
        or None (the id written in decimal). qids: one id per row (default "0", "1", ...).
        """
        if not isinstance(hits, Hits):
            raise TypeError(f"hits must be a Hits, got {type(hits).__name__}")
        qids = np.arange(hits.nq).astype(str) if qids is None else _str_array(qids, "qids")
        if len(qids) != hits.nq:
            raise ValueError(f"qids has {len(qids)} ids but the hits have {hits.nq} queries")
        valid = hits.ids != PADDING_ID
        q = np.broadcast_to(np.arange(hits.nq)[:, None], hits.ids.shape)[valid]
        return cls.from_arrays(qids, q, _map_docids(hits.ids[valid], docids),
                            hits.scores[valid].astype(np.float64))

    @classmethod
    def from_dict(cls, run: dict) -> Run:
        """From ``{qid: {docid: score}}`` (pytrec_eval and ranx's format); dict order is the rank order."""
        qids, sizes, docids, scores = _flatten(run, "run", "score")
        try:
            scores = np.asarray(scores, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError("run scores must be numbers") from None
        return cls.from_arrays(qids, np.repeat(np.arange(len(run)), sizes), docids, scores)

    @classmethod
    def from_arrays(cls, qids, q, docids, scores) -> Run:
        """A Run from columns: distinct query ids, each row's query index, doc ids, scores."""
        if len(np.unique(qids)) != len(qids):
            raise ValueError("query ids must be distinct")
        if not np.isfinite(scores).all():
            raise ValueError("run scores must be finite (no NaN or infinity)")
        return cls(qids, np.asarray(q, dtype=np.int64), docids, scores)

    def to_dict(self) -> dict:
        """``{qid: {docid: score}}`` in rank order."""
        out = {qid: {} for qid in self.qids.tolist()}
        for qi, doc, score in zip(self.q.tolist(), self.docids.tolist(), self.scores.tolist()):
            out[self.qids[qi]][doc] = score
        return out

    def __len__(self) -> int:
        return len(self.q)


@dataclass(frozen=True)
class Qrels:
    """Relevance judgments as columns: query ``qids[j]`` judges ``docids[j]`` with ``grades[j]``.

    Grades are integers; as in trec_eval, relevant means grade >= 1 and nDCG's gain is the
    grade (negative grades gain nothing).
    """

    qids: np.ndarray
    docids: np.ndarray
    grades: np.ndarray

    @classmethod
    def from_dict(cls, qrels: dict) -> Qrels:
        """From ``{qid: {docid: grade}}``."""
        qids, sizes, docids, grades = _flatten(qrels, "qrels", "grade")
        return cls.from_arrays(np.repeat(qids, sizes), docids, np.array(grades))

    @classmethod
    def from_arrays(cls, qids, docids, grades) -> Qrels:
        """Qrels from columns: each judgement's query id, doc id and integer grade."""
        grades = np.asarray(grades)
        if len(grades) and grades.dtype.kind not in "iu":
            if grades.dtype.kind != "f" or not (grades == np.round(grades)).all():
                raise TypeError("qrels grades must be integers (as in trec_eval)")
        return cls(qids, docids, grades.astype(np.int64))

    def to_dict(self) -> dict:
        out: dict = {}
        for qid, doc, grade in zip(self.qids.tolist(), self.docids.tolist(), self.grades.tolist()):
            out.setdefault(qid, {})[doc] = grade
        return out

    def __len__(self) -> int:
        return len(self.grades)


def _flatten(nested, name: str, value: str):
    """Query ids, results per query, document ids and values of ``{qid: {docid: value}}``."""
    if not isinstance(nested, dict):
        raise TypeError(f"{name} must be a dict {{qid: {{docid: {value}}}}}, got {type(nested).__name__}")
    for qid, docs in nested.items():
        if not isinstance(docs, dict):
            raise TypeError(f"{name}[{qid!r}] must be a dict {{docid: {value}}}, got {type(docs).__name__}")
    sizes = np.fromiter((len(d) for d in nested.values()), dtype=np.int64, count=len(nested))
    docids = _str_array(list(chain.from_iterable(nested.values())), f"{name} document ids")
    values = list(chain.from_iterable(d.values() for d in nested.values()))
    return _str_array(list(nested), f"{name} query ids"), sizes, docids, values


def find(haystack: np.ndarray, needles: np.ndarray):
    """Position in haystack (unsorted, distinct values) of each needle, and whether it is there."""
    if not len(haystack):
        return np.zeros(len(needles), dtype=np.int64), np.zeros(len(needles), dtype=bool)
    order = np.argsort(haystack, kind="stable")
    pos = order[np.minimum(np.searchsorted(haystack, needles, sorter=order), len(haystack) - 1)]
    return pos, haystack[pos] == needles


def _map_docids(ids: np.ndarray, docids) -> np.ndarray:
    """Document ids (str) of int64 ids through a sequence, a dict or decimal notation."""
    if docids is None:
        return ids.astype(str)
    if isinstance(docids, dict):
        keys = np.fromiter(docids.keys(), dtype=np.int64, count=len(docids))
        values = _str_array(list(docids.values()), "docids values")
        pos, found = find(keys, ids)
        if not found.all():
            raise KeyError(f"docids has no entry for id {int(ids[np.argmin(found)])}")
        return values[pos]
    table = _str_array(docids, "docids")
    if len(ids) and ids.max() >= len(table):
        raise IndexError(f"id {int(ids.max())} is beyond docids, which has {len(table)} entries")
    return table[ids]


def run_from(run, docids=None, qids=None, expected: str = "Hits, a Run or a dict") -> Run:
    """A Run from a Run, Hits (with docids / qids) or a dict (no files: see _coerce.as_run)."""
    if isinstance(run, Run):
        return run
    if isinstance(run, Hits):
        return Run.from_hits(run, docids=docids, qids=qids)
    if docids is not None or qids is not None:
        raise ValueError("docids and qids apply to Hits input only")
    if isinstance(run, dict):
        return Run.from_dict(run)
    raise TypeError(f"run must be {expected}, got {type(run).__name__}")


def qrels_from(qrels, expected: str = "Qrels or a dict") -> Qrels:
    """Qrels from Qrels or a dict (no files: see _coerce.as_qrels)."""
    if isinstance(qrels, Qrels):
        return qrels
    if isinstance(qrels, dict):
        return Qrels.from_dict(qrels)
    raise TypeError(f"qrels must be {expected}, got {type(qrels).__name__}")
