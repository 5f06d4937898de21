"""Ranking metrics with trec_eval's definitions (9.0.4 and later), vectorised over all queries.

Every metric is a function of one prepared, sorted run (``_Ranked``) and an optional cutoff k,
returning one float64 per evaluated query. Definitions, as trec_eval's measure of that name:

- relevant: grade >= 1; a run with fewer than k results counts the missing slots as
  non-relevant (precision@k divides by k).
- ``precision@k`` (P_k), ``recall@k`` (recall_k), ``hit@k`` (success_k).
- ``mrr`` (recip_rank): 1 / rank of the first relevant result, 0 if none; ``mrr@k`` only looks
  at the top k (trec_eval has no cutoff for it; this is the usual MRR@10).
- ``ndcg`` / ``ndcg@k`` (ndcg / ndcg_cut_k): gain = grade (negative grades gain 0), discount
  log2(rank + 1), ideal DCG from all judged grades of the query, cut at k too.
- ``map`` / ``map@k`` (map / map_cut_k): sum of precision at each relevant rank (<= k) divided
  by the number of relevant documents of the query.
- ``rprec`` (Rprec): precision at rank R, R = number of relevant documents.

Queries: those in both the run and the qrels are evaluated (trec_eval's default). A query of
the run with no results scores 0; a query whose judgments hold no relevant document scores 0
on every metric and still counts in the mean, as in trec_eval.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._coerce import as_qrels, as_run
from ._data import Qrels, Run, find

TIES = ("trec_eval", "as_ranked")


@dataclass(frozen=True)
class _Ranked:
    """One run joined with its qrels, for the evaluated queries only."""

    nq: int
    q: np.ndarray  # int64 [n] query of each row, sorted
    rank: np.ndarray  # int64 [n] rank within the query, from 1
    grade: np.ndarray  # int64 [n] judged grade, 0 if unjudged
    num_rel: np.ndarray  # int64 [nq] relevant documents per query
    ideal_q: np.ndarray  # query of each positive-gain judgment, sorted by gain descending within
    ideal_rank: np.ndarray
    ideal_gain: np.ndarray

    def rows(self, k: int | None) -> np.ndarray:
        """Rows in the top k (all rows when k is None)."""
        return np.ones(len(self.q), dtype=bool) if k is None else self.rank <= k

    def per_query(self, weights: np.ndarray, where: np.ndarray) -> np.ndarray:
        return np.bincount(self.q[where], weights=weights[where], minlength=self.nq)

    def relevant_retrieved(self, k: int | None) -> np.ndarray:
        rel = (self.grade >= 1).astype(np.float64)
        return self.per_query(rel, self.rows(k))


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0 where den is 0."""
    return np.divide(num, den, out=np.zeros(len(num)), where=den > 0)


def precision(r: _Ranked, k: int) -> np.ndarray:
    """Relevant results in the top k, divided by k (trec_eval P_k)."""
    return r.relevant_retrieved(k) / k


def recall(r: _Ranked, k: int) -> np.ndarray:
    """Relevant results in the top k over relevant documents (trec_eval recall_k)."""
    return _ratio(r.relevant_retrieved(k), r.num_rel.astype(np.float64))


def hit(r: _Ranked, k: int) -> np.ndarray:
    """1 when a relevant result is in the top k (trec_eval success_k)."""
    return (r.relevant_retrieved(k) > 0).astype(np.float64)


def mrr(r: _Ranked, k: int | None = None) -> np.ndarray:
    """Reciprocal rank of the first relevant result (in the top k); trec_eval recip_rank."""
    first = np.flatnonzero((r.grade >= 1) & r.rows(k))
    queries, at = np.unique(r.q[first], return_index=True)
    out = np.zeros(r.nq)
    out[queries] = 1.0 / r.rank[first[at]]
    return out


def ndcg(r: _Ranked, k: int | None = None) -> np.ndarray:
    """Normalised DCG (at k): linear gain, log2(rank + 1) discount; trec_eval ndcg / ndcg_cut_k."""
    gain = np.maximum(r.grade, 0) / np.log2(r.rank + 1.0)
    dcg = r.per_query(gain, r.rows(k))
    ideal_gain = r.ideal_gain / np.log2(r.ideal_rank + 1.0)
    keep = np.ones(len(ideal_gain), dtype=bool) if k is None else r.ideal_rank <= k
    idcg = np.bincount(r.ideal_q[keep], weights=ideal_gain[keep], minlength=r.nq)
    return _ratio(dcg, idcg)


def average_precision(r: _Ranked, k: int | None = None) -> np.ndarray:
    """Mean of precision at each relevant rank (<= k) over all relevant; trec_eval map / map_cut_k."""
    rel = r.grade >= 1
    cum = np.cumsum(rel)
    starts = np.searchsorted(r.q, np.arange(r.nq))
    before = np.concatenate(([0], cum))[starts]  # relevant rows of earlier queries
    prec = (cum - before[r.q]) / r.rank
    return _ratio(r.per_query(prec, rel & r.rows(k)), r.num_rel.astype(np.float64))


def r_precision(r: _Ranked, k: None = None) -> np.ndarray:
    """Precision at rank R = number of relevant documents; trec_eval Rprec."""
    rel = (r.grade >= 1).astype(np.float64)
    return _ratio(r.per_query(rel, r.rank <= r.num_rel[r.q]), r.num_rel.astype(np.float64))


# name -> (function, cutoff: "required" | "optional" | "none")
METRICS = {
    "precision": (precision, "required"),
    "recall": (recall, "required"),
    "hit": (hit, "required"),
    "mrr": (mrr, "optional"),
    "ndcg": (ndcg, "optional"),
    "map": (average_precision, "optional"),
    "rprec": (r_precision, "none"),
}
ALIASES = {"p": "precision", "success": "hit", "hit_rate": "hit", "recip_rank": "mrr",
           "r-precision": "rprec"}


def parse_metric(name: str, kinds: dict | None = None, aliases: dict = ALIASES) -> tuple[str, int | None]:
    """"ndcg@10" -> ("ndcg", 10), checked against kinds (name -> "required" | "optional" |
    "none" cutoff; default: those of METRICS)."""
    if kinds is None:
        kinds = {base: kind for base, (_, kind) in METRICS.items()}
    if not isinstance(name, str):
        raise TypeError(f"metric names are strings like 'ndcg@10', got {type(name).__name__}")
    base, _, cut = name.strip().lower().partition("@")
    base = aliases.get(base, base)
    if base not in kinds:
        raise ValueError(f"unknown metric {name!r}; expected one of "
                         f"{', '.join(sorted(kinds))} (with @k where a cutoff applies)")
    if not cut:
        if kinds[base] == "required":
            raise ValueError(f"metric {name!r} needs a cutoff, e.g. '{base}@10'")
        return base, None
    if kinds[base] == "none":
        raise ValueError(f"metric {base!r} takes no cutoff, got {name!r}")
    if not cut.isdigit() or int(cut) < 1:
        raise ValueError(f"the cutoff in {name!r} must be an integer >= 1")
    return base, int(cut)


def parse_metrics(metrics, kinds: dict | None = None, aliases: dict = ALIASES) -> dict:
    """{name: (base, k)} of a metric name or a list of them; refuses an empty list."""
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    if not names:
        raise ValueError("metrics is empty; name at least one, e.g. ['recall@10']")
    return {name: parse_metric(name, kinds, aliases) for name in names}


@dataclass(frozen=True)
class Evaluation:
    """Per-query values (in ``qids`` order) and means of each requested metric."""

    qids: np.ndarray
    per_query: dict

    @property
    def mean(self) -> dict:
        """Mean over the evaluated queries, as trec_eval's "all" line."""
        return {name: float(values.mean()) for name, values in self.per_query.items()}

    def __getitem__(self, metric: str) -> float:
        return self.mean[metric]

    def query(self, qid) -> dict:
        """The metrics of one query."""
        where = np.flatnonzero(self.qids.astype(str) == str(qid))
        if not len(where):
            raise KeyError(f"query {qid!r} was not evaluated")
        return {name: float(values[where[0]]) for name, values in self.per_query.items()}


def evaluate(run, qrels, metrics, ties: str = "trec_eval", docids=None, qids=None,
             complete: bool = False) -> Evaluation:
    """Evaluate a run against qrels with trec_eval's definitions.

    run: Hits (with ``docids``, an id-to-docid sequence or dict, and ``qids``, one per row), a
    Run, a dict ``{qid: {docid: score}}`` or a TREC run file path. qrels: Qrels, a dict
    ``{qid: {docid: grade}}`` or a TREC qrels file path. metrics: names such as "ndcg@10",
    "recall@100", "mrr", "map" (see METRICS). ties: "trec_eval" re-sorts each query by score
    descending, equal scores by document id descending as strings (trec_eval's order; like
    trec_eval, scores are compared as float32, so 1.0 and 1.0 + 1e-9 tie);
    "as_ranked" evaluates the order given (Hits: best first, ties by id ascending).
    complete: also evaluate the judged queries the run lacks, scoring 0 (trec_eval -c);
    by default only queries in both are evaluated.
    """
    parsed = parse_metrics(metrics)
    if ties not in TIES:
        raise ValueError(f"unknown ties {ties!r}; expected one of {', '.join(map(repr, TIES))}")
    run, qrels = as_run(run, docids=docids, qids=qids), as_qrels(qrels)
    if complete:
        run = _with_queries(run, qrels.qids)
    ranked, evaluated = _prepare(run, qrels, ties)
    per_query = {name: METRICS[base][0](ranked, k) for name, (base, k) in parsed.items()}
    return Evaluation(evaluated, per_query)


def _with_queries(run: Run, qids: np.ndarray) -> Run:
    """run plus the queries of qids it lacks (appended in sorted order, without results)."""
    missing = np.setdiff1d(qids, run.qids)
    if not len(missing):
        return run
    return Run(np.concatenate([run.qids, missing]), run.q, run.docids, run.scores)


def _prepare(run: Run, qrels: Qrels, ties: str) -> tuple[_Ranked, np.ndarray]:
    """Join run and qrels on (query, document) and sort the run's rows for ranking."""
    # Queries: those of the run that the qrels judge, in run order.
    pos, in_run = find(run.qids, qrels.qids)
    qrels_q = pos[in_run]  # run query index of each kept judgment
    judged = np.zeros(len(run.qids), dtype=bool)
    judged[qrels_q] = True
    if not judged.any():
        raise ValueError("no query is in both the run and the qrels; check the query ids")
    compact = np.cumsum(judged) - 1
    nq = int(judged.sum())

    # Documents: one code per distinct id; code order is string order.
    vocab, codes = np.unique(np.concatenate([run.docids, qrels.docids[in_run]]), return_inverse=True)
    codes = codes.ravel()
    run_doc, qrels_doc = codes[: len(run)], codes[len(run):]
    keep = judged[run.q]
    run_q, run_doc, scores = compact[run.q[keep]], run_doc[keep], run.scores[keep]
    qrels_q = compact[qrels_q]
    grades = qrels.grades[in_run]
    width = np.int64(len(vocab))
    run_key = run_q * width + run_doc
    qrels_key = qrels_q * width + qrels_doc
    evaluated = run.qids[judged]
    _refuse_duplicates(run_key, width, evaluated, vocab, "run")
    _refuse_duplicates(qrels_key, width, evaluated, vocab, "qrels")

    # Grade of each run row (0 when unjudged).
    at, judged_row = find(qrels_key, run_key)
    grade = np.where(judged_row, grades[at] if len(grades) else 0, 0)

    if ties == "trec_eval":
        # trec_eval holds scores as C floats: scores equal in float32 tie (beyond its range, inf).
        with np.errstate(over="ignore"):
            as_float32 = scores.astype(np.float32)
        order = np.lexsort((-run_doc, -as_float32, run_q))
    else:
        order = np.argsort(run_q, kind="stable")
    q = run_q[order]
    rank = np.arange(len(q)) - np.searchsorted(q, q) + 1

    positive = grades > 0
    ideal_order = np.lexsort((-grades[positive], qrels_q[positive]))
    ideal_q = qrels_q[positive][ideal_order]
    ideal_rank = np.arange(len(ideal_q)) - np.searchsorted(ideal_q, ideal_q) + 1
    num_rel = np.bincount(qrels_q[grades >= 1], minlength=nq)
    ranked = _Ranked(nq, q, rank, grade[order], num_rel, ideal_q, ideal_rank,
                     grades[positive][ideal_order].astype(np.float64))
    return ranked, evaluated


def _refuse_duplicates(keys, width, qids, vocab, what: str) -> None:
    srt = np.sort(keys)
    dup = np.flatnonzero(srt[1:] == srt[:-1])
    if len(dup):
        key = srt[dup[0]]
        raise ValueError(f"the {what} lists document {str(vocab[key % width])!r} twice for query "
                         f"{str(qids[key // width])!r}; each document may appear once per query")
