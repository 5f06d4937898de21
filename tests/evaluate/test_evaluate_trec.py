"""ragcore.evaluate against trec_eval (through pytrec-eval-terrier) and the plain reference.

Hypothesis draws runs and qrels with graded (and negative) judgments, tied scores, short runs,
empty runs, unjudged documents and queries missing on either side.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcore import reference as ref
from ragcore.evaluate import evaluate
from ragcore.hits import Hits

pytrec_eval = pytest.importorskip("pytrec_eval")

CUTS = (1, 3, 5, 10)
# ragcore name -> trec_eval measure name
PAIRS = {"mrr": "recip_rank", "ndcg": "ndcg", "map": "map", "rprec": "Rprec"}
for _k in CUTS:
    PAIRS.update({f"precision@{_k}": f"P_{_k}", f"recall@{_k}": f"recall_{_k}",
                  f"hit@{_k}": f"success_{_k}", f"ndcg@{_k}": f"ndcg_cut_{_k}",
                  f"map@{_k}": f"map_cut_{_k}"})
CUT_LIST = ",".join(map(str, CUTS))
MEASURES = {"recip_rank", "ndcg", "map", "Rprec"} | {
    f"{m}.{CUT_LIST}" for m in ("P", "recall", "success", "ndcg_cut", "map_cut")}

DOCS = [f"d{i}" for i in range(13)]  # "d10" < "d2" as strings: the tie order is visible
QUERIES = ["q0", "q1", "q2", "q3"]
# 1 + 1e-9 ties with 1: trec_eval compares scores as float32. (Scores beyond float32's range
# are left out: trec_eval hangs on them.)
SCORES = st.one_of(st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0, 1.0 + 1e-9]),
                   st.floats(-5, 5, allow_nan=False, allow_subnormal=False))
runs = st.dictionaries(st.sampled_from(QUERIES),
                       st.dictionaries(st.sampled_from(DOCS), SCORES, max_size=12), min_size=1)


def _not_all_negative(judged: dict) -> dict:
    """trec_eval (in pytrec_eval) can hang once it has seen a query whose judgments are all
    negative; ragcore scores such a query 0. Keep one judgment >= 0 per query."""
    if all(g < 0 for g in judged.values()):
        judged[min(judged)] = 0
    return judged


qrels_dicts = st.dictionaries(
    st.sampled_from(QUERIES),
    st.dictionaries(st.sampled_from(DOCS), st.integers(-1, 3), min_size=1, max_size=8).map(_not_all_negative),
    min_size=1)


def trec_eval(run: dict, qrels: dict) -> dict:
    return pytrec_eval.RelevanceEvaluator(qrels, MEASURES).evaluate(run)


@settings(max_examples=150, deadline=None)
@given(runs, qrels_dicts)
def test_every_metric_equals_trec_eval(run, qrels):
    want = trec_eval(run, qrels)
    if not want:
        with pytest.raises(ValueError, match="no query is in both"):
            evaluate(run, qrels, ["map"])
        return
    got = evaluate(run, qrels, list(PAIRS))
    assert got.qids.tolist() == [q for q in run if q in qrels]  # the queries trec_eval scores
    assert set(got.qids.tolist()) == set(want)
    for ours, theirs in PAIRS.items():
        expect = np.array([want[q][theirs] for q in got.qids.tolist()])
        np.testing.assert_allclose(got.per_query[ours], expect, rtol=0, atol=1e-9, err_msg=ours)
        assert got.mean[ours] == pytest.approx(expect.mean(), abs=1e-9)


@settings(max_examples=50, deadline=None)
@given(runs, qrels_dicts)
def test_complete_adds_the_judged_queries_the_run_lacks(run, qrels):
    """complete=True is trec_eval -c: a judged query without results counts, scoring 0."""
    padded = dict(run, **{q: {} for q in qrels if q not in run})
    want = trec_eval(padded, qrels)
    got = evaluate(run, qrels, list(PAIRS), complete=True)
    assert sorted(got.qids.tolist()) == sorted(want) == sorted(qrels)
    for ours, theirs in PAIRS.items():
        expect = np.array([want[q][theirs] for q in got.qids.tolist()])
        np.testing.assert_allclose(got.per_query[ours], expect, rtol=0, atol=1e-9, err_msg=ours)


@settings(max_examples=100, deadline=None)
@given(runs, qrels_dicts, st.sampled_from(["trec_eval", "as_ranked"]))
def test_every_metric_equals_the_reference(run, qrels, ties):
    common = [q for q in run if q in qrels]
    if not common:
        return
    names = list(PAIRS) + [f"mrr@{k}" for k in CUTS]
    got = evaluate(run, qrels, names, ties=ties)
    for i, q in enumerate(common):
        ranking = ref.trec_eval_order(run[q]) if ties == "trec_eval" else list(run[q])
        for name in names:
            base, _, cut = name.partition("@")
            want = ref.ranking_metric(ranking, qrels[q], base, int(cut) if cut else None)
            assert got.per_query[name][i] == pytest.approx(want, abs=1e-12), (q, name)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_hits_with_docid_mapping_equal_trec_eval(data):
    """Hits rows as queries, ids mapped to names; ties in float32 scores resolved as trec_eval does."""
    nq = data.draw(st.integers(1, 4))
    k = data.draw(st.integers(1, 8))
    names = np.array([f"doc-{i}" for i in range(20)])
    ids = np.full((nq, k), -1, dtype=np.int64)
    scores = np.full((nq, k), -np.inf, dtype=np.float32)
    for row in range(nq):
        n = data.draw(st.integers(0, k))
        ids[row, :n] = data.draw(st.permutations(range(20)))[:n]
        scores[row, :n] = sorted(data.draw(st.lists(st.sampled_from([0.25, 0.5, 1.0, 3.0]), min_size=n, max_size=n)), reverse=True)
    qrels = {f"query {r}": {str(names[d]): g for d, g in data.draw(
        st.dictionaries(st.integers(0, 19), st.integers(0, 3), min_size=1, max_size=6)).items()}
        for r in range(nq)}
    qids = list(qrels)
    run = {q: {str(names[i]): float(s) for i, s in zip(ids[r], scores[r]) if i != -1}
           for r, q in enumerate(qids)}
    want = trec_eval(run, qrels)
    got = evaluate(Hits(scores, ids), qrels, list(PAIRS), docids=names, qids=qids)
    assert got.qids.tolist() == qids
    for ours, theirs in PAIRS.items():
        expect = [want[q][theirs] for q in qids]
        np.testing.assert_allclose(got.per_query[ours], expect, rtol=0, atol=1e-9, err_msg=ours)
