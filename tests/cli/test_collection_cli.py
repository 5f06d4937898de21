"""``ragcore index`` and ``ragcore search`` (the bundled encoder, offline)."""

from __future__ import annotations

import json

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
