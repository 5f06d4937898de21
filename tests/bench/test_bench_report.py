"""bench/report.py: any ragcore-bench/1 file becomes a section; the committed page is what the
committed results render to."""

from __future__ import annotations

import json
import re

from _bench_path import BENCH, ROOT

import report


def _doc(task: str, **fields) -> dict:
    doc = {"schema": "ragcore-bench/1", "task": task, "title": f"Title of {task}",
           "command": f"python bench/{task}.py", "machine": {"cpu": "Test CPU", "threads": 2}}
    doc.update(fields)
    return doc


def _write(folder, name: str, doc) -> None:
    (folder / f"{name}.json").write_text(json.dumps(doc))


def test_a_new_result_file_is_rendered_as_its_own_section(tmp_path):
    _write(tmp_path, "hw", _doc("hw", order=0, columns=["limit", "value"],
                                rows=[["bandwidth", 10.0]]))
    _write(tmp_path, "newthing", _doc(
        "newthing", order=5,
        tables=[{"title": "Sub table", "columns": [{"key": "peer", "label": "library"},
                                                   {"key": "qps", "label": "QPS",
                                                    "format": ",.0f"}],
                 "rows": [{"peer": "ragcore", "qps": 12345.6}, {"peer": "other"}],
                 "notes": ["a note"]}],
        summary=[{"row": "latency", "measure": "ms", "ragcore": 2.0, "best_peer": "other",
                  "best_peer_value": 3.0, "higher_is_better": False}]))
    _write(tmp_path, "legacy", {"results": [1, 2]})
    page = report.render(tmp_path, tmp_path / "B.md", tmp_path / "plots")
    assert '<a id="newthing"></a>\n## Title of newthing' in page
    assert "### Sub table" in page
    assert "| ragcore | 12,346 |" in page and "| other | — |" in page
    assert "- a note" in page
    assert "| bandwidth | 10 |" in page  # rows as lists, columns as plain strings
    assert "| 1.50 |" in page  # lower is better: 3.0 / 2.0
    assert "`legacy.json`" in page.split("## Result files not rendered")[1]
    assert page.index('id="hw"') < page.index('id="newthing"')
    assert "Measured on another machine" not in page


def test_a_section_from_another_machine_says_so(tmp_path):
    _write(tmp_path, "hw", _doc("hw", order=0, columns=["a"], rows=[]))
    other = _doc("gpu", columns=["a"], rows=[])
    other["machine"] = {"cpu": "Other CPU", "threads": 8, "gpu": "NVIDIA H100"}
    _write(tmp_path, "gpu", other)
    page = report.render(tmp_path, tmp_path / "B.md", tmp_path / "plots")
    section = page.split('<a id="gpu"></a>')[1]
    assert "**Measured on another machine:** Other CPU" in section
    assert "GPU NVIDIA H100" in section


def test_a_file_missing_a_required_field_is_named_not_rendered(tmp_path):
    doc = _doc("broken", columns=["a"], rows=[])
    del doc["command"]
    _write(tmp_path, "broken", doc)
    docs, skipped = report.load(tmp_path)
    assert docs == [] and skipped == ["broken.json"]


def test_the_committed_page_is_the_committed_results_rendered(tmp_path):
    page = report.render(BENCH / "results", ROOT / "BENCHMARKS.md", tmp_path / "plots")
    committed = (ROOT / "BENCHMARKS.md").read_text()

    def without_images(text: str) -> str:
        return re.sub(r"(?m)^!\[.*\]\(.*\)\n", "", text).rstrip()

    assert without_images(page) == without_images(committed)
    assert len(committed.encode()) < 60_000
