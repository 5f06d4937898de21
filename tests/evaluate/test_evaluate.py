"""ragcore.evaluate: worked examples, tie rules, inputs, TREC files and argument checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragcore.evaluate import (Qrels, Run, evaluate, read_qrels, read_run, write_qrels,
                              write_run)
from ragcore.hits import Hits

QRELS = {"q1": {"d1": 2, "d2": 0, "d3": 1}, "q2": {"d1": 0}, "q3": {"d9": 1}}
# q1 in trec_eval's order: d9 (2.0), then the ties at 1.0 by id descending as strings
# (d2, d10, d1), then d3: relevant d1 (grade 2) at rank 4, d3 (grade 1) at rank 5.
RUN = {"q1": {"d1": 1.0, "d2": 1.0, "d3": 0.5, "d10": 1.0, "d9": 2.0},
       "q2": {"d1": 1.0}, "q3": {}, "q4": {"x": 1.0}}


def test_worked_example_with_trec_eval_ties():
    got = evaluate(RUN, QRELS, ["mrr", "map", "ndcg", "ndcg@5", "precision@5", "recall@4",
                                "hit@3", "rprec", "mrr@3"])
    # q4 is not judged: left out. q2 has no relevant document and q3 no results: both score 0.
    assert got.qids.tolist() == ["q1", "q2", "q3"]
    q1 = got.query("q1")
    assert q1["mrr"] == 0.25 and q1["mrr@3"] == 0.0 and q1["hit@3"] == 0.0
    assert q1["map"] == pytest.approx((1 / 4 + 2 / 5) / 2)
    dcg = 2 / math.log2(5) + 1 / math.log2(6)
    assert q1["ndcg"] == q1["ndcg@5"] == pytest.approx(dcg / (2 + 1 / math.log2(3)))
    assert q1["precision@5"] == pytest.approx(0.4) and q1["recall@4"] == 0.5 and q1["rprec"] == 0.0
    for qid in ("q2", "q3"):
        assert set(got.query(qid).values()) == {0.0}
    assert got["map"] == pytest.approx(0.325 / 3)
    assert got.mean["mrr"] == pytest.approx(0.25 / 3)


def test_as_ranked_keeps_the_given_order():
    got = evaluate(RUN, QRELS, ["mrr", "map"], ties="as_ranked")  # q1: d1 first, d3 third
    assert got.query("q1") == {"mrr": 1.0, "map": pytest.approx((1 + 2 / 3) / 2)}


def test_short_runs_count_missing_slots_as_non_relevant():
    got = evaluate({"q": {"a": 1.0}}, {"q": {"a": 1, "b": 3}}, ["precision@10", "recall@10", "ndcg@10"])
    assert got.query("q") == {"precision@10": 0.1, "recall@10": 0.5,
                              "ndcg@10": pytest.approx(1 / (3 + 1 / math.log2(3)))}


def test_trec_eval_compares_scores_as_float32():
    # 1.0 + 1e-9 rounds to 1.0 in float32: a tie, broken by id descending ("b" first).
    run = {"q": {"a": 1.0 + 1e-9, "b": 1.0}}
    assert evaluate(run, {"q": {"b": 1}}, "mrr")["mrr"] == 1.0
    assert evaluate(run, {"q": {"b": 1}}, "mrr", ties="as_ranked")["mrr"] == 0.5


def test_hits_with_docid_sequence_dict_and_default():
    hits = Hits(np.array([[3.0, 2.0, -np.inf], [5.0, 5.0, 1.0]], np.float32),
                np.array([[0, 2, -1], [1, 2, 0]], np.int64))
    qrels = {"a": {"doc-2": 1}, "b": {"doc-1": 1, "doc-0": 2}}
    names = ["doc-0", "doc-1", "doc-2"]
    seq = evaluate(hits, qrels, ["mrr", "ndcg@3"], docids=names, qids=["a", "b"])
    as_dict = evaluate(hits, qrels, ["mrr", "ndcg@3"], docids=dict(enumerate(names)), qids=["a", "b"])
    assert seq.per_query["mrr"].tolist() == as_dict.per_query["mrr"].tolist() == [0.5, 0.5]
    # row b: 5.0 ties between doc-1 and doc-2; trec_eval puts doc-2 (larger string) first.
    assert evaluate(hits, qrels, "mrr", docids=names, qids=["a", "b"]).query("b")["mrr"] == 0.5
    assert evaluate(hits, qrels, "mrr", docids=names, qids=["a", "b"], ties="as_ranked").query("b")["mrr"] == 1.0
    plain = evaluate(hits, {"0": {"2": 1}}, "mrr")  # default: ids in decimal, rows "0", "1", ...
    assert plain.qids.tolist() == ["0"] and plain["mrr"] == 0.5


def test_trec_files_round_trip(tmp_path):
    run, qrels = Run.from_dict(RUN), Qrels.from_dict(QRELS)
    write_run(run, tmp_path / "run.txt", tag="bm25")
    write_qrels(QRELS, tmp_path / "qrels.txt")
    lines = (tmp_path / "run.txt").read_text().splitlines()
    assert lines[0] == "q1 Q0 d1 1 1.0 bm25" and lines[4] == "q1 Q0 d9 5 2.0 bm25"
    back = read_run(tmp_path / "run.txt")
    assert back.to_dict() == {q: d for q, d in RUN.items() if d}  # a query without results has no line
    assert read_qrels(tmp_path / "qrels.txt").to_dict() == qrels.to_dict() == QRELS
    names = ["mrr", "map", "ndcg@3"]
    from_files = evaluate(str(tmp_path / "run.txt"), tmp_path / "qrels.txt", names)
    from_dicts = evaluate({q: d for q, d in RUN.items() if d}, QRELS, names)
    assert from_files.per_query.keys() == from_dicts.per_query.keys()
    for name in names:
        assert from_files.per_query[name].tolist() == from_dicts.per_query[name].tolist()


def test_written_scores_read_back_exactly(tmp_path):
    hits = Hits(np.array([[0.1, 1 / 3, 1e-30]], np.float32), np.array([[4, 5, 6]], np.int64))
    write_run(hits, tmp_path / "r.txt", qids=["q"])
    assert read_run(tmp_path / "r.txt").scores.tolist() == hits.scores[0].astype(float).tolist()


def test_file_errors_name_the_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 t\n")
    with pytest.raises(ValueError, match=r"bad.txt:2: a run line has 6 fields, got 5"):
        read_run(bad)
    bad.write_text("q1 Q0 d1 1 high t\n")
    with pytest.raises(ValueError, match="score 'high' is not a number"):
        read_run(bad)
    bad.write_text("q1 0 d1 1\n\nq1 0 d2 0.5\n")
    with pytest.raises(ValueError, match="bad.txt:3: grade '0.5' is not an integer"):
        read_qrels(bad)
    bad.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.25 t\n")
    with pytest.raises(ValueError, match="the run lists document 'd1' twice for query 'q1'"):
        evaluate(bad, {"q1": {"d1": 1}}, "mrr")
    with pytest.raises(ValueError, match="document id 'a b' cannot be written"):
        write_run({"q": {"a b": 1.0}}, tmp_path / "x.txt")


def test_argument_errors():
    with pytest.raises(ValueError, match="the run lists document '1' twice for query 'q'"):
        evaluate(Hits(np.ones((1, 2), np.float32), np.array([[1, 1]])), {"q": {"1": 1}}, "mrr",
                 qids=["q"])
    with pytest.raises(ValueError, match="unknown metric 'ndgc@10'; expected one of hit, map, mrr, ndcg"):
        evaluate(RUN, QRELS, ["ndgc@10"])
    with pytest.raises(ValueError, match="metric 'recall' needs a cutoff, e.g. 'recall@10'"):
        evaluate(RUN, QRELS, ["recall"])
    with pytest.raises(ValueError, match="metric 'rprec' takes no cutoff"):
        evaluate(RUN, QRELS, ["rprec@5"])
    with pytest.raises(ValueError, match="the cutoff in 'ndcg@0' must be an integer >= 1"):
        evaluate(RUN, QRELS, ["ndcg@0"])
    with pytest.raises(ValueError, match="metrics is empty"):
        evaluate(RUN, QRELS, [])
    with pytest.raises(ValueError, match="unknown ties 'stable'; expected one of 'trec_eval', 'as_ranked'"):
        evaluate(RUN, QRELS, "mrr", ties="stable")
    with pytest.raises(ValueError, match="no query is in both the run and the qrels"):
        evaluate({"x": {"a": 1.0}}, QRELS, "mrr")
    hits = Hits(np.ones((2, 1), np.float32), np.array([[0], [5]]))
    with pytest.raises(ValueError, match="qids has 1 ids but the hits have 2 queries"):
        evaluate(hits, QRELS, "mrr", qids=["q1"])
    with pytest.raises(IndexError, match="id 5 is beyond docids, which has 2 entries"):
        evaluate(hits, QRELS, "mrr", docids=["a", "b"])
    with pytest.raises(KeyError, match="docids has no entry for id 5"):
        evaluate(hits, QRELS, "mrr", docids={0: "a"})
    with pytest.raises(ValueError, match="docids and qids apply to Hits input only"):
        evaluate(RUN, QRELS, "mrr", docids=["a"])
    with pytest.raises(TypeError, match="run must be Hits, a Run, a dict or a TREC run file path"):
        evaluate([1, 2], QRELS, "mrr")
    with pytest.raises(TypeError, match=r"run\['q'\] must be a dict"):
        evaluate({"q": ["d1"]}, QRELS, "mrr")
    with pytest.raises(ValueError, match="run scores must be finite"):
        evaluate({"q1": {"d1": float("nan")}}, QRELS, "mrr")
    with pytest.raises(TypeError, match="qrels grades must be integers"):
        evaluate(RUN, {"q1": {"d1": 0.5}}, "mrr")
    with pytest.raises(KeyError, match="query 'q9' was not evaluated"):
        evaluate(RUN, QRELS, "mrr").query("q9")


def test_a_query_judged_only_negative_scores_zero():
    # trec_eval (in pytrec_eval) can hang on such a query after earlier evaluations.
    got = evaluate({"q": {"a": 1.0, "b": 0.5}}, {"q": {"a": -1, "b": -2}}, ["ndcg", "map", "mrr", "rprec"])
    assert set(got.query("q").values()) == {0.0}
