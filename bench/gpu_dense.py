"""GPU exact top-k: ragcore's GpuFlatIndex against torch (matmul + topk) and
cupy (matmul + argpartition + sort) in the same run, on the same device arrays.

    python bench/gpu_dense.py --json OUT.json --markdown OUT.md [--quick]

Corpora (random normal rows, normalised, built on the device): 10,000,000 x 384
float16 and 1,000,000 x 768 float32. Batches 1, 16, 256, 4096; k 10, 100, 2048,
16384. Every system gets the same queries as float32 CUDA tensors (torch and
cupy multiply in the corpus dtype, as a user would); ragcore reads them in place
and leaves results on the device. Times are the median of repeated calls after
a warm-up, with the device synchronised. A system whose call takes over
--give-up seconds is not run at larger batches for that k. HBM bandwidth is
measured in the same run (a device-to-device copy and a reduction), and
batch-1 speed is reported as a fraction of it.

Standalone on purpose: the GPU machine has torch and cupy but not the CPU
benchmark's dependencies.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import numpy as np
import torch

import ragcore
from ragcore import _cuda
import _gpu_output
from _gpu_output import write_json, write_report

BATCHES = (1, 16, 256, 4096)
KS = (10, 100, 2048, 16384)


def timed(fn, repeats: int) -> float:
    fn()  # warm-up (also the memory pools)
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def hbm_bandwidth() -> dict:
    x = torch.empty(2 * 1024**3, dtype=torch.uint8, device="cuda")  # 2 GiB
    y = torch.empty_like(x)
    copy = timed(lambda: y.copy_(x), 5)
    xs = x.view(torch.float16)
    read = timed(lambda: xs.sum(dtype=torch.float32), 5)
    x = y = xs = None  # drop the buffers (the lambdas above read them) before empty_cache
    torch.cuda.empty_cache()
    bytes_ = 2 * 1024**3
    return {"copy_GBps": 2 * bytes_ / copy / 1e9, "read_GBps": bytes_ / read / 1e9}


def make_corpus(n: int, d: int, dtype: str, seed: int):
    """The corpus on the device (torch) and a GpuFlatIndex of it, built in chunks."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    tdtype = {"float16": torch.float16, "float32": torch.float32}[dtype]
    corpus = torch.empty((n, d), dtype=tdtype, device="cuda")
    index = ragcore.GpuFlatIndex(d, metric="ip", dtype=dtype)
    step = 1_000_000
    for start in range(0, n, step):
        block = torch.randn((min(step, n - start), d), generator=gen, device="cuda")
        block /= block.norm(dim=1, keepdim=True)
        corpus[start:start + len(block)] = block.to(tdtype)
        index.add(block.cpu().numpy())
    return corpus, index


def torch_search(corpus, q, k):
    scores = q.to(corpus.dtype) @ corpus.T
    return torch.topk(scores, k, dim=1)


def cupy_search(cp, corpus_cp, q_cp, k):
    scores = q_cp.astype(corpus_cp.dtype) @ corpus_cp.T
    part = cp.argpartition(-scores, k - 1, axis=1)[:, :k]
    top = cp.take_along_axis(scores, part, axis=1)
    order = cp.argsort(-top, axis=1)
    return cp.take_along_axis(part, order, axis=1)


def fits(nq: int, n: int, bytes_per_score: int, free: int) -> bool:
    return nq * n * bytes_per_score * 3 < free  # scores plus topk's workspace


def run_corpus(name, n, d, dtype, args, cp, bw) -> list[dict]:
    corpus, index = make_corpus(n, d, dtype, seed=n + d)
    corpus_bytes = corpus.numel() * corpus.element_size()
    corpus_cp = cp.asarray(corpus) if cp is not None else None
    rows = []
    gen = torch.Generator(device="cuda").manual_seed(7)
    batches = args.batches
    for k in args.ks:
        gave_up = set()
        for nq in batches:
            q = torch.randn((nq, d), generator=gen, device="cuda")
            q /= q.norm(dim=1, keepdim=True)
            reps = args.repeats if nq <= 256 else max(1, args.repeats // 3)
            row = {"corpus": name, "n": n, "d": d, "dtype": dtype, "batch": nq, "k": k}
            t = timed(lambda: index.search(q, k, return_device=True), reps)
            row["ragcore_ms"] = 1e3 * t
            if nq == 1:
                row["ragcore_batch1_GBps"] = corpus_bytes / t / 1e9
                row["ragcore_batch1_pct_hbm"] = 100 * corpus_bytes / t / 1e9 / max(bw.values())
            if nq <= 16 and dtype != "float32":  # the other kernel, to check the automatic choice
                other = _cuda.GpuPath.TensorCores if nq == 1 else _cuda.GpuPath.Scan
                index._search_options = {"path": other}
                row["ragcore_other_kernel_ms"] = 1e3 * timed(
                    lambda: index.search(q, k, return_device=True), reps)
                index._search_options = {}
            free = torch.cuda.mem_get_info()[0]
            score_bytes = corpus.element_size()
            if k > n:  # the peers' topk needs k <= n
                gave_up |= {"torch", "cupy"}
            if "torch" not in gave_up and fits(nq, n, score_bytes, free):
                try:
                    t = timed(lambda: torch_search(corpus, q, k), reps)
                    row["torch_ms"] = 1e3 * t
                    gave_up.update({"torch"} if t > args.give_up else set())
                    got = index.search(q[:4], k)
                    want = torch_search(corpus, q[:4], k)
                    row["recall_vs_torch"] = float(np.mean([
                        len(set(a) & set(b)) / k for a, b in
                        zip(got.ids.tolist(), want.indices.cpu().tolist())]))
                except torch.cuda.OutOfMemoryError:
                    row["torch_ms"] = None
                torch.cuda.empty_cache()
            if cp is not None and "cupy" not in gave_up and fits(nq, n, score_bytes, free):
                q_cp = cp.asarray(q)
                try:
                    t = timed(lambda: cupy_search(cp, corpus_cp, q_cp, k), reps)
                    row["cupy_ms"] = 1e3 * t
                    gave_up.update({"cupy"} if t > args.give_up else set())
                except (cp.cuda.memory.OutOfMemoryError, MemoryError):  # thrust: bad_alloc
                    row["cupy_ms"] = None
                cp.get_default_memory_pool().free_all_blocks()
            for peer in ("torch", "cupy"):
                if row.get(f"{peer}_ms"):
                    row[f"speedup_vs_{peer}"] = row[f"{peer}_ms"] / row["ragcore_ms"]
            print(json.dumps(row), flush=True)
            rows.append(row)
    corpus = index = corpus_cp = None  # drop the device copies before empty_cache
    torch.cuda.empty_cache()
    return rows


COLUMNS = [{"key": "corpus", "label": "corpus"}, {"key": "batch", "label": "batch"},
           {"key": "k", "label": "k"}, {"key": "ragcore_ms", "label": "ragcore ms", "format": ".2f"},
           {"key": "ragcore_other_kernel_ms", "label": "other kernel ms", "format": ".2f"},
           {"key": "torch_ms", "label": "torch ms", "format": ".2f"},
           {"key": "cupy_ms", "label": "cupy ms", "format": ".2f"},
           {"key": "speedup_vs_torch", "label": "torch time / ragcore time", "format": ".2f"},
           {"key": "speedup_vs_cupy", "label": "cupy time / ragcore time", "format": ".2f"},
           {"key": "ragcore_batch1_pct_hbm", "label": "batch 1, % of HBM read", "format": ".0f"}]


def section_fields(report, command: str) -> dict:
    return _gpu_output.section_fields(
        "gpu_dense", "Exact top-k on a GPU", command, order=90, device=report["device"],
        intro=("GpuFlatIndex against torch (topk of q @ X.T) and cupy (matmul, argpartition, "
               "sort); median of repeated calls after a warm-up, queries as float32 CUDA "
               "tensors, results left on the device. 'other kernel': the kernel the automatic "
               "choice did not pick."),
        versions={"torch": report["torch"], "cupy": report["cupy"]},
        limits={"hbm_read_gbps": report["hbm"].get("read_GBps")},
        tables=[{"title": "", "columns": COLUMNS, "rows": report["rows"], "notes": []}])


def markdown(report) -> str:
    bw = report["hbm"]
    lines = [
        f"Device: {report['device']}; measured HBM: copy {bw['copy_GBps']:.0f} GB/s, "
        f"read {bw['read_GBps']:.0f} GB/s.",
        "",
        "| corpus | batch | k | ragcore ms | torch ms | cupy ms | vs torch | vs cupy | batch-1 % of HBM |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    fmt = lambda v, f: "n/a" if v is None else format(v, f)  # noqa: E731
    for r in report["rows"]:
        lines.append(
            f"| {r['corpus']} | {r['batch']} | {r['k']} | {r['ragcore_ms']:.2f} | "
            f"{fmt(r.get('torch_ms'), '.2f')} | {fmt(r.get('cupy_ms'), '.2f')} | "
            f"{fmt(r.get('speedup_vs_torch'), '.2f')} | {fmt(r.get('speedup_vs_cupy'), '.2f')} | "
            f"{fmt(r.get('ragcore_batch1_pct_hbm'), '.0f')} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small corpora, for a smoke test")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--give-up", type=float, default=3.0)
    parser.add_argument("--json")
    parser.add_argument("--markdown")
    args = parser.parse_args()
    args.ks, args.batches = KS, BATCHES
    try:
        import cupy as cp
    except ImportError:
        cp = None
    corpora = [("10M x 384 fp16", 10_000_000, 384, "float16"),
               ("1M x 768 fp32", 1_000_000, 768, "float32")]
    if args.quick:
        corpora = [(f"{n // 1000}k x {d} {t}", n // 100, d, t) for _, n, d, t in corpora]
    bw = hbm_bandwidth()
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "cupy": getattr(cp, "__version__", None), "python": platform.python_version(),
              "hbm": bw, "rows": []}
    report.update(section_fields(report, _gpu_output.command_line()))
    for name, n, d, dtype in corpora:
        report["rows"] += run_corpus(name, n, d, dtype, args, cp, bw)
        report["tables"][0]["rows"] = report["rows"]
        write_json(args.json, report)  # partial results survive a timeout
    write_report(report, args.json, args.markdown, markdown(report))


if __name__ == "__main__":
    main()
