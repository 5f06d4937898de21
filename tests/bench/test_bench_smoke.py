"""The benchmark suite in its smoke mode: every task runs, every adapter whose library is
installed produces rows, the page renders from the results; bench/ab.py compares two builds."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ragcore

from _bench_path import BENCH, ROOT

import peers
from tasks import TASKS

PEER_COLUMN = {"fusion": "system", "fuzz": "kind"}
# The directory holding the ragcore package under test (src/ in a checkout with the module
# built beside it, site-packages once installed): the subprocesses import the same one.
PACKAGE_DIR = str(Path(ragcore.__file__).resolve().parents[1])


def _run(args, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in [PACKAGE_DIR, os.environ.get("PYTHONPATH", "")] if p))
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=900)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("smoke")
    proc = _run([str(BENCH / "run.py"), "--mode", "smoke", "--results", str(out),
                 "--page", str(out / "BENCHMARKS.md"), "--plots", str(out / "plots")], out)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


def test_every_task_writes_a_schema_file(smoke):
    for task in ("hw", *TASKS):
        doc = json.loads((smoke / f"{task}.json").read_text())
        assert doc["schema"] == "ragcore-bench/1" and doc["task"] == task
        assert doc["machine"]["cpu"] and doc["command"]
        assert doc["tables"][0]["rows"], task


def test_every_installed_adapter_produced_rows(smoke):
    for task in ("exact", "ann", "bm25", "encode", "ingest", "collection"):
        table = json.loads((smoke / f"{task}.json").read_text())["tables"][0]
        rows, notes = table["rows"], " ".join(table["notes"])
        seen = {r["peer"] for r in rows}
        classes, _ = peers.adapters(task)
        wanted = {c.name for c in classes if getattr(c, "max_docs", 10**9) >= 1000}
        # an adapter may qualify its name once built (the SIMD level it runs at)
        missing = {w for w in wanted if not any(p == w or p.startswith(w + " (") for p in seen)
                   and not ("Not timed here" in notes and w in notes)}
        assert missing == set(), task


def test_ragcore_agrees_with_exact_search(smoke):
    rows = json.loads((smoke / "exact.json").read_text())["tables"][0]["rows"]
    assert all(r["recall"] == 1.0 for r in rows if r["peer"] == "ragcore")
    ann = json.loads((smoke / "collection.json").read_text())["tables"][0]["rows"]
    assert all(r["recall_all"] == 1.0 for r in ann if r["peer"] == "ragcore")


def test_the_page_renders_every_section(smoke):
    page = (smoke / "BENCHMARKS.md").read_text()
    for task in ("hw", *TASKS):
        assert f'<a id="{task}"></a>' in page
    assert "## Summary" in page and "Result files not rendered" not in page
    if importlib.util.find_spec("matplotlib"):
        assert (smoke / "plots" / "exact.png").stat().st_size > 0


def test_ab_compares_two_builds(tmp_path):
    proc = _run([str(BENCH / "ab.py"), "--build", f"a={PACKAGE_DIR}", "--build", f"b={PACKAGE_DIR}",
                 "--rounds", "2", "--mode", "smoke", "--out", str(tmp_path), "exact"], tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads((tmp_path / "exact.json").read_text())
    rows = doc["tables"][0]["rows"]
    assert rows and all(r["a"] > 0 and r["b"] > 0 and r["b/a"] > 0 for r in rows)


def test_ab_refuses_one_build(tmp_path):
    proc = _run([str(BENCH / "ab.py"), "--build", f"a={ROOT / 'src'}", "exact"], tmp_path)
    assert proc.returncode == 2 and "two builds" in proc.stderr
