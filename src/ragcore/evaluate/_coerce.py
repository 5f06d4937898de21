"""What the metrics accept as a run or qrels: the in-memory forms of _data, or a TREC file."""

from __future__ import annotations

from ._data import Qrels, Run, qrels_from, run_from
from ._trec_io import is_path, read_qrels, read_run


def as_run(run, docids=None, qids=None) -> Run:
    """A Run from a Run, Hits (with docids / qids), a dict, or a TREC run file path."""
    if is_path(run) and docids is None and qids is None:
        return read_run(run)
    return run_from(run, docids, qids, expected="Hits, a Run, a dict or a TREC run file path")


def as_qrels(qrels) -> Qrels:
    """Qrels from Qrels, a dict, or a TREC qrels file path."""
    if is_path(qrels):
        return read_qrels(qrels)
    return qrels_from(qrels, expected="Qrels, a dict or a TREC qrels file path")
