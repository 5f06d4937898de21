"""``ragcore bench ann`` end to end on a tiny data set."""

import csv
import json

import numpy as np
import pytest

from ragcore.cli.main import main


def test_bench_ann_writes_csv_json_markdown_and_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    rc = main(["bench", "ann", "--n", "600", "--d", "16", "--queries", "20", "--nlist", "8",
               "--nprobe", "1,8", "--systems", "ragcore-f32,ragcore-sq8,faiss-ivf",
               "--b1-calls", "3", "--b256-calls", "1", "--out", str(tmp_path), "--json"])
    assert rc == 0
    payload = json.loads(capsys.readouterr().out)
    rows = payload["rows"]
    assert {r["system"] for r in rows} >= {"ragcore IVF float32", "ragcore IVF sq8"}
    full = [r for r in rows if r["system"] == "ragcore IVF float32" and r["value"] == 8]
    assert full[0]["recall"] == 1.0  # every list probed: the exact answer
    assert set(payload["targets"]) == {"ivf_float32_vs_faiss_ivfflat_qps_b1",
                                       "ivf_float32_vs_faiss_ivfflat_qps_b256",
                                       "ivf_sq8_vs_float32_qps_b1"}
    with open(tmp_path / "ann.csv") as f:
        assert len(list(csv.DictReader(f))) == len(rows)
    assert (tmp_path / "ann.png").stat().st_size > 0
    assert "Best QPS" in (tmp_path / "ann.md").read_text()


def test_bench_ann_reads_embeddings_from_a_file(tmp_path, capsys):
    x = np.random.default_rng(0).standard_normal((300, 8)).astype(np.float32)
    np.save(tmp_path / "emb.npy", x)
    main(["bench", "ann", "--data", str(tmp_path / "emb.npy"), "--queries", "10", "--nlist", "4",
          "--nprobe", "4", "--systems", "ragcore-f32", "--b1-calls", "2", "--b256-calls", "1",
          "--out", str(tmp_path / "out"), "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert payload["parameters"]["n"] == 290 and payload["rows"][0]["recall"] == 1.0


def test_bench_ann_refuses_unknown_systems_and_data(tmp_path):
    with pytest.raises(SystemExit, match="unknown nope"):
        main(["bench", "ann", "--systems", "nope", "--out", str(tmp_path)])
    with pytest.raises(SystemExit, match="--data"):
        main(["bench", "ann", "--data", "gaussian", "--n", "10", "--out", str(tmp_path)])
