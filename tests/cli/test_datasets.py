"""The stdlib documentation corpus and the BEIR loader."""

from __future__ import annotations

import json

import pytest

from ragcore.cli.datasets import load_beir, stdlib_docs


@pytest.fixture(scope="module")
def sample():
    return stdlib_docs(max_docs=300, seed=1)


def test_deterministic_and_well_formed(sample):
    again = stdlib_docs(max_docs=300, seed=1)
    assert [d.doc_id for d in again.documents] == [d.doc_id for d in sample.documents]
    assert again.questions == sample.questions
    other = stdlib_docs(max_docs=300, seed=2)
    assert [d.doc_id for d in other.documents] != [d.doc_id for d in sample.documents]
    docs = {d.doc_id: d.text for d in sample.documents}
    assert len(docs) == len(sample.documents) == 300
    assert len(set(sample.questions)) == len(sample.questions) > 100
    for question, qid, groups in zip(sample.questions, sample.qids, sample.evidence):
        assert len(question.split()) >= 4
        ((doc, start, end),) = groups[0]
        assert sample.qrels[qid] == {doc: 1}
        body = docs[doc][start:end]
        assert body and question not in body.split("\n")[0]  # the summary line is not in the text
        assert docs[doc][:start].startswith(doc)  # qualified name and signature head the document


def test_questions_are_unique_summaries(tmp_path):
    (tmp_path / "pkg.py").write_text(
        '"""Shared summary line of four words.\n\nBody a."""\n'
        'def f():\n    """Shared summary line of four words.\n\n    Body b.\n    """\n'
        'def g(x, y=1):\n    """A unique summary of g.\n\n    Body of g.\n    """\n'
        'def _private():\n    """Hidden from the corpus here.\n\n    Body.\n    """\n'
        'def short():\n    """Too short.\n\n    Body.\n    """\n')
    data = stdlib_docs(root=tmp_path)
    assert [d.doc_id for d in data.documents] == ["pkg", "pkg.f", "pkg.g", "pkg.short"]
    assert data.questions == ["A unique summary of g."]
    assert data.documents[2].text == "pkg.g(x, y=1)\n\nBody of g."


def test_beir_folder(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(
        json.dumps({"_id": "d1", "title": "T", "text": "alpha"}) + "\n" +
        json.dumps({"_id": "d2", "text": "beta"}) + "\n")
    (tmp_path / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "find alpha"}) + "\n" + json.dumps({"_id": "q2", "text": "x"}) + "\n")
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\n")
    data = load_beir(tmp_path)
    assert [d.text for d in data.documents] == ["T\n\nalpha", "beta"]
    assert data.questions == ["find alpha"] and data.qrels == {"q1": {"d1": 2}}
    (tmp_path / "qrels" / "test.tsv").write_text("q9\td1\t1\n")
    with pytest.raises(ValueError, match="q9"):
        load_beir(tmp_path)
    with pytest.raises(FileNotFoundError, match="dev.tsv"):
        load_beir(tmp_path, split="dev")
