"""``ragcore index`` and ``ragcore search`` (the bundled encoder, offline)."""

from __future__ import annotations

import json

from ragcore.cli import collection_commands
from ragcore.cli.main import main


def test_index_a_folder_and_jsonl_then_search(tmp_path, capsys):
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.txt").write_text("Python lists are mutable sequences.\n\nTuples are immutable.")
    (docs / "sub" / "b.md").write_text("A dict maps keys to values. Sets hold unique items.")
    (docs / "skip.bin").write_bytes(b"\x00\x01")
    col = str(tmp_path / "col")
    assert main(["index", str(docs), "--collection", col, "--no-progress"]) == 0
    assert "2 documents indexed" in capsys.readouterr().out
    jsonl = tmp_path / "more.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in [
        {"id": "j1", "text": "Generators yield values lazily.", "metadata": {"year": 2020}},
        {"id": "j2", "text": "Decorators wrap functions.", "metadata": {"year": 2010}}]))
    assert main(["index", str(jsonl), "--collection", col, "--no-progress"]) == 0
    assert "the collection holds 4" in capsys.readouterr().out

    assert main(["search", col, "immutable tuples", "--k", "1"]) == 0
    assert "a.txt" in capsys.readouterr().out
    assert main(["search", col, "functions", "--filter", '{"year": {"$lt": 2015}}', "--json",
                 "--mode", "sparse"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in out["results"]] == ["j2"] and "sparse" in out["timings"]


def test_errors_are_reported_not_raised(tmp_path, capsys):
    assert main(["search", str(tmp_path / "nope"), "q"]) == 2
    assert "no such directory" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1}\n')
    assert main(["index", str(bad), "--collection", str(tmp_path / "c"), "--no-progress"]) == 2
    assert "expected an object with 'text'" in capsys.readouterr().err


def _folder_with_problem_files(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Python lists are mutable sequences.")
    (docs / "b.md").write_text("A dict maps keys to values.")
    (docs / "empty.txt").write_bytes(b"")
    (docs / "blank.rst").write_text("  \n\t\n")
    (docs / "latin1.txt").write_bytes(b"Caf\xe9 au lait is coffee with milk.")
    (docs / "image.png").write_bytes(b"\x89PNG")
    return docs


def test_index_without_a_terminal_logs_progress_and_skipped_files(tmp_path, capsys, monkeypatch):
    # One batch per document and a long interval: the first and the last line only.
    monkeypatch.setattr(collection_commands, "_BATCH", 1)
    monkeypatch.setattr(collection_commands, "PROGRESS_EVERY", 3600.0)
    docs = _folder_with_problem_files(tmp_path)
    assert main(["index", str(docs), "--collection", str(tmp_path / "col")]) == 0
    out, err = capsys.readouterr()
    assert "3 documents indexed (3 chunks in" in out
    lines = err.splitlines()
    assert "ragcore index: skipped 1 empty file: empty.txt" in lines
    assert "ragcore index: skipped 1 file holding only whitespace: blank.rst" in lines
    assert any(line.startswith("ragcore index: skipped 1 file without a text suffix")
               and line.endswith(": image.png") for line in lines)
    assert any(line.startswith("ragcore index: 1 file not valid UTF-8, indexed with each "
                               "undecodable byte replaced by U+FFFD")
               and line.endswith(": latin1.txt (first bad byte at offset 3)") for line in lines)
    assert lines[4].startswith("indexing 3 documents into ")
    progress = [line for line in lines if line.startswith("indexing ") and "/3" in line]
    assert len(progress) == 2, err
    assert progress[0].startswith("indexing 1/3 documents, 1 chunks, ")
    assert "chunks/s" in progress[0] and "ETA" in progress[0]
    assert progress[1].startswith("indexing 3/3 documents, 3 chunks, ")
    assert "\r" not in err


def test_index_no_progress_still_names_skipped_files(tmp_path, capsys):
    docs = _folder_with_problem_files(tmp_path)
    assert main(["index", str(docs), "--collection", str(tmp_path / "col"), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "empty.txt" in err and "latin1.txt" in err and "indexing" not in err


def test_report_skipped_names_ten_then_counts():
    import io

    stream = io.StringIO()
    collection_commands.report_skipped([("empty", f"f{i}.txt") for i in range(12)], stream)
    assert stream.getvalue() == ("ragcore index: skipped 12 empty files: " +
                                 ", ".join(f"f{i}.txt" for i in range(10)) + " and 2 more\n")


def test_jsonl_lines_with_an_empty_text_are_skipped_and_named(tmp_path, capsys):
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text(json.dumps({"id": "a", "text": "Tuples are immutable."}) + "\n" +
                     json.dumps({"id": "b", "text": "  "}) + "\n")
    assert main(["index", str(jsonl), "--collection", str(tmp_path / "col"), "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert "1 documents indexed" in out
    assert "ragcore index: skipped 1 JSONL line whose text is empty: line 2" in err


def test_search_reports_the_model_load_apart_from_the_search(tmp_path, capsys, monkeypatch):
    import re
    import time

    import ragcore.encoders

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Tuples are immutable sequences.")
    col = str(tmp_path / "col")
    assert main(["index", str(docs), "--collection", col, "--no-progress"]) == 0
    capsys.readouterr()
    real = ragcore.encoders.default_encoder

    def slow_to_load(*args, **kwargs):
        time.sleep(0.5)
        return real(*args, **kwargs)

    monkeypatch.setattr(ragcore.encoders, "default_encoder", slow_to_load)
    assert main(["search", col, "immutable tuples"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    found = re.fullmatch(r"\(1 results; search ([\d.]+) ms; model loaded in ([\d.]+) s; "
                         r"collection opened in [\d.]+ s\)", last)
    assert found, last
    assert float(found[2]) >= 0.5 and float(found[1]) < 500

    assert main(["search", col, "tuples", "--json"]) == 0
    load = json.loads(capsys.readouterr().out)["load_seconds"]
    assert load["model"] >= 0.5 and load["collection"] >= 0
    assert main(["search", col, "tuples", "--mode", "sparse"]) == 0
    assert "no model (sparse search)" in capsys.readouterr().out
