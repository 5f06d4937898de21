"""TREC run and qrels files (trec_eval's formats), read and written.

Run: ``qid Q0 docid rank score tag`` per line; trec_eval reads only qid, docid and score (the
rank column is ignored; ragcore keeps the line order as the as-ranked order).
Qrels: ``qid iteration docid grade`` per line, integer grades.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ._data import Qrels, Run, qrels_from, run_from


def is_path(x) -> bool:
    return isinstance(x, (str, os.PathLike))


def _columns(path, ncols: int, what: str) -> np.ndarray:
    """The whitespace-separated fields of a file as a [lines, ncols] string array."""
    text = Path(path).read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line.strip()]
    tokens = text.split()
    if len(tokens) != ncols * len(lines):
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip() and len(line.split()) != ncols:
                raise ValueError(
                    f"{path}:{number}: a {what} line has {ncols} fields, got "
                    f"{len(line.split())}: {line.strip()!r}"
                )
    return np.array(tokens, dtype=str).reshape(len(lines), ncols)


def _numbers(column: np.ndarray, path, dtype, what: str) -> np.ndarray:
    try:
        return column.astype(dtype)
    except ValueError:
        text = Path(path).read_text(encoding="utf-8").splitlines()
        numbers = [number for number, line in enumerate(text, 1) if line.strip()]
        for number, value in zip(numbers, column.tolist()):
            try:
                dtype(value)
            except ValueError:
                kind = "an integer" if dtype is int else "a number"
                raise ValueError(f"{path}:{number}: {what} {value!r} is not {kind}") from None
        raise


def read_run(path) -> Run:
    """A TREC run file; queries in order of first appearance, rows in line order."""
    cols = _columns(path, 6, "run")
    qid_col = cols[:, 0]
    uniq, first, inverse = np.unique(qid_col, return_index=True, return_inverse=True)
    order = np.argsort(first)  # queries in order of first appearance
    rank_of = np.empty(len(uniq), dtype=np.int64)
    rank_of[order] = np.arange(len(uniq))
    q = rank_of[inverse.ravel()]
    rows = np.argsort(q, kind="stable")
    scores = _numbers(cols[rows, 4], path, float, "score")
    return Run.from_arrays(uniq[order], q[rows], cols[rows, 2], scores)


def read_qrels(path) -> Qrels:
    """A TREC qrels file; grades must be integers."""
    cols = _columns(path, 4, "qrels")
    return Qrels.from_arrays(cols[:, 0], cols[:, 2], _numbers(cols[:, 3], path, int, "grade"))


def _check_tokens(values: np.ndarray, what: str) -> None:
    """Refuse ids that are empty or hold whitespace (they would break the columns)."""
    if not len(values):
        return
    bad = np.char.str_len(values) == 0
    for ch in (" ", "\t", "\n", "\r", "\v", "\f"):
        bad |= np.char.find(values, ch) >= 0
    if bad.any():
        raise ValueError(f"{what} {str(values[np.argmax(bad)])!r} cannot be written to a TREC "
                         "file (empty or containing whitespace)")


def write_run(run, path, tag: str = "ragcore", docids=None, qids=None) -> None:
    """Write a run (Run, Hits with docids / qids, or dict) as a TREC run file, ranks from 1.

    Scores are written with repr precision, so reading the file back gives the same floats.
    A query without results has no line (trec_eval's format cannot express it).
    """
    run = run_from(run, docids=docids, qids=qids)
    if not tag or any(c.isspace() for c in tag):
        raise ValueError(f"tag must be a non-empty word without whitespace, got {tag!r}")
    _check_tokens(run.qids, "query id")
    _check_tokens(run.docids, "document id")
    rows = np.argsort(run.q, kind="stable")
    q = run.q[rows]
    starts = np.searchsorted(q, q, side="left")
    rank = np.arange(len(q)) - starts + 1
    qid = run.qids[q].tolist()
    lines = (f"{a} Q0 {d} {r} {s!r} {tag}\n" for a, d, r, s in
             zip(qid, run.docids[rows].tolist(), rank.tolist(), run.scores[rows].tolist()))
    _write_atomic(path, lines)


def write_qrels(qrels, path) -> None:
    """Write qrels (Qrels or dict) as a TREC qrels file (iteration column 0)."""
    qrels = qrels_from(qrels)
    _check_tokens(qrels.qids, "query id")
    _check_tokens(qrels.docids, "document id")
    lines = (f"{a} 0 {d} {g}\n" for a, d, g in
             zip(qrels.qids.tolist(), qrels.docids.tolist(), qrels.grades.tolist()))
    _write_atomic(path, lines)


def _write_atomic(path, lines) -> None:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.writelines(lines)
    os.replace(tmp, path)
