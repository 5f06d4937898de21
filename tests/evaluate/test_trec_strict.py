"""TREC files read strictly: ASCII numbers, int64 grades, UTF-8, errors with path:line."""

from __future__ import annotations

import pytest

from ragcore.evaluate._trec_io import read_qrels, read_run


def test_arabic_indic_digit_grade_is_refused(tmp_path):
    """'\\u0663' (Arabic-Indic three) was read as grade 3; trec_eval reads ASCII digits only."""
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 1\nq1 0 d2 \u0663\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"qrels.txt:2: grade '\u0663' is not an integer in ASCII"):
        read_qrels(path)


def test_grade_beyond_int64_names_path_and_line(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 1\n\nq1 0 d2 100000000000000000000\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"qrels.txt:3: grade '100000000000000000000' is outside"):
        read_qrels(path)


def test_run_with_invalid_utf8_names_path_and_line(tmp_path):
    path = tmp_path / "run.txt"
    path.write_bytes(b"q1 Q0 d1 1 2.5 t\nq1 Q0 d\xff2 2 1.5 t\n")
    with pytest.raises(ValueError, match=r"run.txt:2: not valid UTF-8"):
        read_run(path)


def test_run_score_in_non_ascii_digits_is_refused(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("q1 Q0 d1 1 2.5 t\nq2 Q0 d1 1 \u0663.5 t\nq1 Q0 d2 2 1.5 t\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"run.txt:2: score"):
        read_run(path)


def test_good_files_still_read(tmp_path):
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_text("q2 Q0 d1 1 2.5 t\nq1 Q0 d1 1 -1e3 t\nq2 Q0 d3 2 1.5 t\n", encoding="utf-8")
    qrels.write_text("q1 0 d1 -1\nq2 0 d3 +2\n", encoding="utf-8")
    r = read_run(run)
    assert r.qids.tolist() == ["q2", "q1"] and r.scores.tolist() == [2.5, 1.5, -1000.0]
    assert read_qrels(qrels).grades.tolist() == [-1, 2]
