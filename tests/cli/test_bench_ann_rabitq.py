"""``ragcore bench ann`` with the RaBitQ systems (ragcore and faiss) on a tiny data set."""

import json

import pytest

from ragcore.cli.main import main


def test_bench_ann_runs_the_rabitq_systems(tmp_path, capsys):
    pytest.importorskip("faiss")
    pytest.importorskip("matplotlib")
    rc = main(["bench", "ann", "--n", "600", "--d", "16", "--queries", "20", "--nlist", "8",
               "--nprobe", "1,8", "--systems", "ragcore-rabitq,faiss-ivf-rabitq",
               "--b1-calls", "3", "--b256-calls", "1", "--out", str(tmp_path), "--json"])
    assert rc == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {r["system"] for r in rows} == {"ragcore IVF rabitq", "faiss IndexIVFRaBitQ+RefineFlat"}
    # Every list probed: re-scoring within the bound finds (nearly) the exact answer.
    full = [r for r in rows if r["system"] == "ragcore IVF rabitq" and r["value"] == 8]
    assert full[0]["recall"] >= 0.95
