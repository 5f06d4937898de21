"""The GPU benchmarks' result files (bench/gpu_bm25.py, bench/gpu_encoders.py): no GPU is needed
to check that what they write follows the ragcore-bench/1 schema and renders as a section of
the page naming the GPU."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from _bench_path import BENCH

import report


def _render(tmp_path, doc: dict) -> str:
    results = tmp_path / "results"
    results.mkdir()
    (results / f"{doc['task']}.json").write_text(json.dumps(doc))
    docs, skipped = report.load(results)
    assert [d["task"] for d in docs] == [doc["task"]] and skipped == []
    return report.render(results, tmp_path / "B.md", tmp_path / "plots")


def test_a_gpu_bm25_report_renders_as_its_section(tmp_path):
    pytest.importorskip("ragcore._core")
    import gpu_bm25

    row = {"k": 10, "cpu_all_ms": 812.5, "cpu_1t_ms": 1500.0, "gpu_ms": 4.25, "gpu_qps": 240941.2,
           "gpu_exhaustive_ms": 9.5, "fell_back": 0.25, "vs_cpu_all": 191.2, "vs_cpu_1t": 352.9,
           "same_hits": True}
    run = {"device": "NVIDIA H100 80GB HBM3", "cpu_cores": 16, "python": "3.11", "n": 1_000_000,
           "batch": 1024, "device_bytes": 3 * 2**30, "host_prepare_ms": 1.5, "rows": [row],
           "sweep": [{"options": {}, "gpu_ms": 4.0},
                     {"options": {"dense_min_df": 15625}, "gpu_ms": 5.0, "fell_back": 0.5}]}
    run.update(gpu_bm25.section(run, "python bench/gpu_bm25.py --sweep"))
    json.dumps(run)  # the file the script writes
    page = _render(tmp_path, run)
    section = page.split('<a id="gpu_bm25"></a>')[1]
    assert "GPU NVIDIA H100 80GB HBM3" in section.split("\n")[3]  # "measured on another machine"
    assert "python bench/gpu_bm25.py --sweep" in section
    assert "| 10 | 812.5 | 1500.0 | 4.25 | 240,941 | 25% | 9.50 | 191.2 | 352.9 | yes |" in section
    assert "| dense_min_df=15625 | 5.00 | 50% |" in section
    assert "| defaults | 4.00 | — |" in section


def test_a_gpu_encoders_dry_run_says_its_figures_are_not_a_gpus(tmp_path):
    import gpu_encoders

    runs = [{"precision": p, "provider": "CPUExecutionProvider", "io_binding": io,
             "texts_per_s": 250.0, "min_cosine_to_cpu_fp32": 0.99995,
             "nearest_neighbour_agreement": 1.0, "passed": True}
            for p in ("fp32", "fp16") for io in (False, True)]
    run = {"status": "dry-run", "n_texts": 64, "batch": 16, "runs": runs, "onnxruntime": "1.0"}
    run.update(gpu_encoders.section(run, "python bench/gpu_encoders.py --dry-run-on-cpu", None))
    page = _render(tmp_path, run)
    section = page.split('<a id="gpu_encoders"></a>')[1]
    assert "| fp16 | CPUExecutionProvider | yes | 250 | 0.99995 | 100.0% | yes |" in section
    assert "say nothing about GPUs" in section and "Status: dry-run." in section


def test_gpu_encoders_without_a_cuda_provider_writes_a_skipped_section(tmp_path):
    import gpu_encoders

    if gpu_encoders.cuda_provider()[0]:
        pytest.skip("onnxruntime has a CUDA provider here: the script would run for real")
    out = tmp_path / "gpu_encoders.json"
    done = subprocess.run([sys.executable, str(BENCH / "gpu_encoders.py"), "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    assert doc["status"] == "skipped" and doc["tables"][0]["rows"] == []
    assert "Status: skipped (skipped: onnxruntime CUDA provider" in _render(tmp_path, doc)


def test_a_gpu_dense_report_renders_as_its_section(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    pytest.importorskip("ragcore._core")
    import types

    # the script imports ragcore._cuda at the top; only its result writing runs here
    monkeypatch.setitem(sys.modules, "ragcore._cuda", types.ModuleType("ragcore._cuda"))
    monkeypatch.delitem(sys.modules, "gpu_dense", raising=False)
    import gpu_dense

    row = {"corpus": "10M x 384 fp16", "n": 10_000_000, "d": 384, "dtype": "float16", "batch": 1,
           "k": 10, "ragcore_ms": 3.21, "torch_ms": 2.04, "speedup_vs_torch": 0.6355,
           "ragcore_batch1_pct_hbm": 57.2}
    run = {"device": "NVIDIA H200", "torch": "2.13.0", "cupy": None,
           "hbm": {"copy_GBps": 4000.0, "read_GBps": 4200.0}, "rows": [row]}
    run.update(gpu_dense.section_fields(run, "python bench/gpu_dense.py --json OUT.json"))
    section = _render(tmp_path, run).split('<a id="gpu_dense"></a>')[1]
    assert "GPU NVIDIA H200" in section and "torch 2.13.0" in section
    assert "| 10M x 384 fp16 | 1 | 10 | 3.21 | — | 2.04 | — | 0.64 | — | 57 |" in section
    assert run["limits"] == {"hbm_read_gbps": 4200.0}
