"""TREC files read strictly: ASCII numbers, int64 grades, UTF-8, errors with path:line."""

from __future__ import annotations

import pytest

from ragcore.evaluate._trec_io import read_qrels, read_run


@pytest.mark.parametrize("reader, content, match", [
    # '\u0663' (Arabic-Indic three) was read as grade 3; trec_eval reads ASCII digits only.
    (read_qrels, "q1 0 d1 1\nq1 0 d2 \u0663\n".encode(), r":2: grade '\u0663' is not an integer in ASCII"),
    (read_qrels, b"q1 0 d1 1\n\nq1 0 d2 100000000000000000000\n",
     r":3: grade '100000000000000000000' is outside the int64 range"),
    (read_run, b"q1 Q0 d1 1 2.5 t\nq1 Q0 d\xff2 2 1.5 t\n", r":2: not valid UTF-8"),
    (read_run, "q1 Q0 d1 1 2.5 t\nq2 Q0 d1 1 \u0663.5 t\nq1 Q0 d2 2 1.5 t\n".encode(), r":2: score"),
])
def test_bad_numbers_and_bytes_name_the_path_and_line(tmp_path, reader, content, match):
    path = tmp_path / "file.txt"
    path.write_bytes(content)
    with pytest.raises(ValueError, match="file.txt" + match):
        reader(path)


def test_good_files_still_read(tmp_path):
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_text("q2 Q0 d1 1 2.5 t\nq1 Q0 d1 1 -1e3 t\nq2 Q0 d3 2 1.5 t\n", encoding="utf-8")
    qrels.write_text("q1 0 d1 -1\nq2 0 d3 +2\n", encoding="utf-8")
    r = read_run(run)
    assert r.qids.tolist() == ["q2", "q1"] and r.scores.tolist() == [2.5, 1.5, -1000.0]
    assert read_qrels(qrels).grades.tolist() == [-1, 2]
