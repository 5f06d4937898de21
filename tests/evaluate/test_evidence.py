"""Evidence-span labels: the worked examples of the issue, half coverage and argument checks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ragcore import reference as ref
from ragcore.evaluate import evaluate_evidence
from ragcore.hits import Hits

FILLER = [("other", 0, 10)] * 10

# Q1: one group, first covered at rank 3 (rank 2 holds only 20 of its 100 characters).
Q1 = ([("doc2", 0, 100), ("doc1", 0, 120), ("doc1", 100, 300), ("doc2", 100, 200), ("doc9", 0, 5)],
      [[("doc1", 100, 200)]])
# Q2: two groups, one covered, at rank 1.
Q2 = ([("doc3", 0, 100)] + FILLER[:4], [[("doc3", 0, 50)], [("doc4", 10, 20)]])
# Q3: nothing in the top 10.
Q3 = (FILLER, [[("doc5", 0, 10)]])
# Q4: groups {e1, e2} and {e3}; rank 2 covers e2, rank 3 covers e1, rank 5 holds exactly half of e3.
E1, E2, E3 = ("a", 0, 100), ("b", 0, 100), ("c", 50, 150)
Q4 = ([("z", 0, 10), ("b", 0, 60), ("a", 40, 140), ("z", 10, 20), ("c", 100, 200)], [[E1, E2], [E3]])


def run(*questions, metrics=("recall@3", "recall@5", "mrr")):
    return evaluate_evidence([q[0] for q in questions], [q[1] for q in questions], metrics)


def test_three_questions():
    got = run(Q1, Q2, Q3)
    assert got.per_query["recall@5"].tolist() == [1.0, 0.5, 0.0]
    assert got.per_query["mrr"].tolist() == pytest.approx([1 / 3, 1.0, 0.0])
    assert got["recall@5"] == 0.5
    assert round(got["mrr"], 3) == 0.444


def test_fourth_question_with_alternative_spans():
    alone = run(Q4).query(0)
    assert alone == {"recall@3": 0.5, "recall@5": 1.0, "mrr": 0.5}
    got = run(Q1, Q2, Q3, Q4)
    assert got["recall@5"] == 0.625
    assert round(got["mrr"], 3) == 0.458


def test_a_span_cut_exactly_in_half_is_covered_by_both_halves():
    gold = [[[("d", 10, 20)]]] * 3
    got = evaluate_evidence([[("d", 0, 15)], [("d", 15, 30)], [("d", 0, 14)]], gold, ["recall@1"])
    assert got.per_query["recall@1"].tolist() == [1.0, 1.0, 0.0]


def test_mrr_with_cutoff_and_unanswerable_questions_skipped():
    got = evaluate_evidence([Q1[0], FILLER, Q4[0]], [Q1[1], None, Q4[1]], ["mrr@2", "mrr"])
    assert got.qids.tolist() == [0, 2]
    assert got.per_query["mrr@2"].tolist() == [0.0, 0.5]
    assert got.per_query["mrr"].tolist() == pytest.approx([1 / 3, 0.5])


def test_hits_with_a_chunk_table():
    chunks = Q4[0] + [("a", 0, 100)]
    hits = Hits(np.array([[4, 3, 2, 1, 0], [9, -np.inf, -np.inf, -np.inf, -np.inf]], np.float32),
                np.array([[0, 1, 2, 3, 4], [5, -1, -1, -1, -1]], np.int64))
    got = evaluate_evidence(hits, [Q4[1], [[E1]]], ["recall@3", "mrr"], chunks=chunks)
    assert got.per_query["recall@3"].tolist() == [0.5, 1.0]
    columns = tuple(np.array(c) for c in zip(*chunks))
    again = evaluate_evidence(hits, [Q4[1], [[E1]]], ["recall@3", "mrr"], chunks=columns)
    assert again.per_query["mrr"].tolist() == got.per_query["mrr"].tolist() == [0.5, 1.0]


def test_argument_errors():
    with pytest.raises(ValueError, match=r"gold\[1\] has no groups; pass None for a question with no answer"):
        evaluate_evidence([[], []], [[[E1]], []])
    with pytest.raises(ValueError, match=r"gold\[0\]\[1\] must be a non-empty list of alternative spans"):
        evaluate_evidence([[]], [[[E1], []]])
    with pytest.raises(ValueError, match="retrieved has 1 questions but gold has 2"):
        evaluate_evidence([[]], [None, [[E1]]])
    with pytest.raises(ValueError, match="no question is answerable"):
        evaluate_evidence([[]], [None])
    with pytest.raises(ValueError, match=r"gold span \('a', 5, 5\) must have 0 <= start < end"):
        evaluate_evidence([[]], [[[("a", 5, 5)]]])
    with pytest.raises(ValueError, match=r"retrieved chunk \('a', 9, 1\) ends before it starts"):
        evaluate_evidence([[("a", 9, 1)]], [[[E1]]])
    with pytest.raises(ValueError, match="each retrieved chunk must be \\(doc, start, end\\)"):
        evaluate_evidence([[("a", 9)]], [[[E1]]])
    with pytest.raises(ValueError, match="unknown metric 'ndcg@5'; expected one of mrr, recall"):
        evaluate_evidence([[]], [[[E1]]], ["ndcg@5"])
    with pytest.raises(ValueError, match="metric 'recall' needs a cutoff"):
        evaluate_evidence([[]], [[[E1]]], ["recall"])
    one = Hits(np.zeros((1, 1), np.float32), np.zeros((1, 1), np.int64))
    with pytest.raises(ValueError, match="chunks: chunk 0 ends before it starts"):
        evaluate_evidence(one, [[[E1]]], chunks=(np.array(["a"]), np.array([5]), np.array([1])))
    with pytest.raises(IndexError, match="chunk id 0 is beyond chunks, which has 0"):
        evaluate_evidence(one, [[[E1]]], chunks=[])
    with pytest.raises(ValueError, match="Hits input needs chunks"):
        evaluate_evidence(Hits(np.zeros((1, 1), np.float32), np.zeros((1, 1), np.int64)), [[[E1]]])


SPANS = st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 30), st.integers(1, 20)).map(
    lambda t: (t[0], t[1], t[1] + t[2]))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.lists(SPANS, max_size=8),
                          st.one_of(st.none(), st.lists(st.lists(SPANS, min_size=1, max_size=3),
                                                        min_size=1, max_size=3))),
                min_size=1, max_size=4),
       st.integers(1, 6))
def test_equals_the_reference(questions, k):
    assume(any(gold is not None for _, gold in questions))
    got = evaluate_evidence([c for c, _ in questions], [g for _, g in questions],
                            [f"recall@{k}", f"mrr@{k}", "mrr"])
    answerable = [i for i, (_, gold) in enumerate(questions) if gold is not None]
    assert got.qids.tolist() == answerable
    for j, i in enumerate(answerable):
        chunks, groups = questions[i]
        recall, rr = ref.evidence_question(chunks, groups, k)
        assert got.per_query[f"recall@{k}"][j] == pytest.approx(recall)
        assert got.per_query[f"mrr@{k}"][j] == pytest.approx(rr)
        assert got.per_query["mrr"][j] == pytest.approx(ref.evidence_question(chunks, groups)[1])
