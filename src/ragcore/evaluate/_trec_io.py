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


def _read_text(path) -> str:
    """The file as UTF-8 text; invalid UTF-8 is an error naming the path and line."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ValueError(f"{path}:{line}: not valid UTF-8 ({err.reason} at byte {err.start})") from None


def _columns(path, ncols: int, what: str) -> tuple[np.ndarray, list[int]]:
    """The whitespace-separated fields of a file as a [lines, ncols] string array, and the
    line number of each row."""
    text = _read_text(path)
    all_lines = text.splitlines()
    numbers = [number for number, line in enumerate(all_lines, 1) if line.strip()]
    tokens = text.split()
    if len(tokens) != ncols * len(numbers):
        for number in numbers:
            line = all_lines[number - 1]
            if len(line.split()) != ncols:
                raise ValueError(
                    f"{path}:{number}: a {what} line has {ncols} fields, got "
                    f"{len(line.split())}: {line.strip()!r}"
                )
    return np.array(tokens, dtype=str).reshape(len(numbers), ncols), numbers


_INT64_RANGE = (-(2**63), 2**63 - 1)


def _numbers(column: np.ndarray, numbers: list[int], path, dtype, what: str) -> np.ndarray:
    """The column as numbers, written in ASCII (as trec_eval reads them: '\u0663' is not 3)."""
    kind = "an integer" if dtype is int else "a number"
    try:
        column.astype(np.bytes_)  # refuses non-ASCII digits, which int() and float() accept
        values = column.astype(np.int64 if dtype is int else np.float64)
    except (ValueError, OverflowError, UnicodeEncodeError):
        for number, value in zip(numbers, column.tolist()):
            problem = None
            if not value.isascii():
                problem = f"is not {kind} in ASCII digits"
            else:
                try:
                    parsed = dtype(value)
                except ValueError:
                    problem = f"is not {kind}"
                else:
                    if dtype is int and not _INT64_RANGE[0] <= parsed <= _INT64_RANGE[1]:
                        problem = "is outside the int64 range"
            if problem:
                raise ValueError(f"{path}:{number}: {what} {value!r} {problem}") from None
        raise
    return values


def read_run(path) -> Run:
    """A TREC run file; queries in order of first appearance, rows in line order."""
    cols, numbers = _columns(path, 6, "run")
    qid_col = cols[:, 0]
    uniq, first, inverse = np.unique(qid_col, return_index=True, return_inverse=True)
    order = np.argsort(first)  # queries in order of first appearance
    rank_of = np.empty(len(uniq), dtype=np.int64)
    rank_of[order] = np.arange(len(uniq))
    q = rank_of[inverse.ravel()]
    rows = np.argsort(q, kind="stable")
    scores = _numbers(cols[rows, 4], [numbers[r] for r in rows.tolist()], path, float, "score")
    return Run.from_arrays(uniq[order], q[rows], cols[rows, 2], scores)


def read_qrels(path) -> Qrels:
    """A TREC qrels file; grades must be integers."""
    cols, numbers = _columns(path, 4, "qrels")
    grades = _numbers(cols[:, 3], numbers, path, int, "grade")
    return Qrels.from_arrays(cols[:, 0], cols[:, 2], grades)


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
