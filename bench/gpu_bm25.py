"""GPU BM25: GpuBM25Index against the CPU BM25Index in the same run, same queries.

    python bench/gpu_bm25.py --json OUT.json --markdown OUT.md [--n 1000000] [--quick]

Corpus and queries: bench/_zipf.py's Zipfian corpus (vocabulary 200,000, lengths
60-200 tokens; queries of 2-6 distinct mid-frequency words), --n documents, one
batch of --batch queries (default 1,024), variant "lucene", no stopwords. Per k:
the CPU index with every core (n_threads=0) and with one thread, and the GPU
index with its default (pruned) plan and with the exhaustive plan forced. Each
time is the median of --repeats batches after a warm-up batch and includes
tokenizing and weighing the query strings (both indexes do that on the host).
The GPU's hits are compared with the CPU's (ids and scores equal). --sweep also
times query-group and chunk sizes and two dense-term thresholds at k = 10.

Standalone on purpose (numpy and ragcore only): the GPU machine lacks the CPU
benchmark's dependencies.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np

import ragcore
from _gpu_output import command_line, section_fields, write_report
from _zipf import zipf_corpus  # the CPU benchmark's corpus, same seed and law


def median_seconds(fn, repeats: int):
    result = fn()  # warm-up; its result is the one compared
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def run(args) -> dict:
    start = time.perf_counter()
    texts, queries = zipf_corpus(args.n, 200_000, args.batch, seed=0)
    generated = time.perf_counter() - start
    index = ragcore.BM25Index(stopwords=None)
    start = time.perf_counter()
    index.index(texts, n_threads=0)
    built = time.perf_counter() - start
    del texts
    start = time.perf_counter()
    gpu = index.to("cuda")
    uploaded = time.perf_counter() - start
    report = {
        "device": ragcore._cuda.device_name(0), "cpu_cores": os.cpu_count(),
        "python": platform.python_version(), "n": args.n, "batch": args.batch,
        "generate_s": generated, "build_s": built, "to_cuda_s": uploaded,
        "device_bytes": gpu.device_bytes, "rows": [],
    }
    for k in args.k:
        cpu_all, cpu_hits = median_seconds(lambda: index.search(queries, k, n_threads=0), args.repeats)
        cpu_one, _ = median_seconds(lambda: index.search(queries, k, n_threads=1), args.repeats)
        gpu._search_options = {}
        gpu_s, (gpu_hits, exhaustive) = median_seconds(lambda: gpu._search(queries, k), args.repeats)
        gpu._search_options = {"exhaustive": True}
        gpu_ex_s, gpu_ex_hits = median_seconds(lambda: gpu.search(queries, k), args.repeats)
        gpu._search_options = {}
        same = all(np.array_equal(h.ids, cpu_hits.ids) and np.array_equal(h.scores, cpu_hits.scores)
                   for h in (gpu_hits, gpu_ex_hits))
        row = {"k": k, "cpu_all_ms": 1e3 * cpu_all, "cpu_1t_ms": 1e3 * cpu_one,
               "gpu_ms": 1e3 * gpu_s, "gpu_qps": args.batch / gpu_s,
               "gpu_exhaustive_ms": 1e3 * gpu_ex_s, "fell_back": float(exhaustive.mean()),
               "vs_cpu_all": cpu_all / gpu_s, "vs_cpu_1t": cpu_one / gpu_s, "same_hits": same}
        report["rows"].append(row)
        print(row, flush=True)
    # Host share of a GPU search: tokenizing and weighing the batch.
    host = index.copy()
    report["host_prepare_ms"] = 1e3 * median_seconds(
        lambda: host.weighed_queries(queries), args.repeats)[0]
    if args.sweep:  # the choices GpuBM25Index makes automatically, at k = 10
        report["sweep"] = []
        ex = {"exhaustive": True}
        for options in ({"max_group": 64}, {"max_group": 256}, {}, {**ex, "max_group": 64},
                        {**ex, "max_group": 256}, ex, {**ex, "max_chunk_rows": 1 << 20}):
            gpu._search_options = options
            seconds, _ = median_seconds(lambda: gpu.search(queries, 10), args.repeats)
            report["sweep"].append({"options": dict(options), "gpu_ms": 1e3 * seconds})
            print(report["sweep"][-1], flush=True)
        gpu._search_options = {}
        for dense_min_df in (args.n // 4, args.n // 64):
            other = ragcore.GpuBM25Index(index, "cuda", dense_min_df)
            seconds, (_, fell) = median_seconds(lambda: other._search(queries, 10), args.repeats)
            report["sweep"].append({"options": {"dense_min_df": dense_min_df}, "gpu_ms": 1e3 * seconds,
                                    "fell_back": float(fell.mean())})
            print(report["sweep"][-1], flush=True)
            del other
    return report


COLUMNS = [{"key": "k", "label": "k"},
           {"key": "cpu_all_ms", "label": "CPU all cores ms", "format": ".1f"},
           {"key": "cpu_1t_ms", "label": "CPU 1 thread ms", "format": ".1f"},
           {"key": "gpu_ms", "label": "GPU ms", "format": ".2f"},
           {"key": "gpu_qps", "label": "GPU QPS", "format": ",.0f"},
           {"key": "fell_back", "label": "fell back", "format": ".0%"},
           {"key": "gpu_exhaustive_ms", "label": "GPU exhaustive ms", "format": ".2f"},
           {"key": "vs_cpu_all", "label": "CPU all cores / GPU", "format": ".1f"},
           {"key": "vs_cpu_1t", "label": "CPU 1 thread / GPU", "format": ".1f"},
           {"key": "same_hits", "label": "same hits"}]
SWEEP_COLUMNS = [{"key": "setting", "label": "setting"},
                 {"key": "gpu_ms", "label": "GPU ms", "format": ".2f"},
                 {"key": "fell_back", "label": "fell back", "format": ".0%"}]


def section(report, command: str) -> dict:
    """The ragcore-bench/1 fields (bench/README.md) of a run's report."""
    notes = [f"Postings on the device: {report['device_bytes'] / 2**20:,.0f} MiB; host share of a "
             f"GPU search (tokenize and weigh the batch): {report['host_prepare_ms']:.1f} ms; "
             f"'fell back': the share of queries the pruned plan handed to the exhaustive one."]
    tables = [{"title": "", "columns": COLUMNS, "rows": report["rows"], "notes": notes}]
    if report.get("sweep"):
        rows = [{"setting": ", ".join(f"{k}={v}" for k, v in p["options"].items()) or "defaults",
                 "gpu_ms": p["gpu_ms"], "fell_back": p.get("fell_back")} for p in report["sweep"]]
        tables.append({"title": "The GPU index's choices, k = 10", "columns": SWEEP_COLUMNS,
                       "rows": rows, "notes": []})
    return section_fields(
        "gpu_bm25", "BM25 on a GPU", command, order=91, device=report["device"],
        intro=(f"GpuBM25Index against the CPU BM25Index in the same run: {report['n']:,} "
               f"documents of a Zipfian corpus (bench/_zipf.py), one batch of {report['batch']:,} "
               f"queries, variant lucene; the CPU with every core ({report['cpu_cores']}) and "
               "with one thread, the GPU with its default (pruned) plan and with the exhaustive "
               "one forced. Median of repeated batches after a warm-up, query tokenizing and "
               "weighing included; the GPU's ids and scores are compared with the CPU's."),
        tables=tables)


def markdown(report) -> str:
    lines = [
        f"Device: {report['device']}, host with {report['cpu_cores']} cores; "
        f"{report['n']:,} documents, batch {report['batch']}; postings on the device: "
        f"{report['device_bytes'] / 2**20:.0f} MiB.",
        "",
        "| k | CPU all cores ms | CPU 1 thread ms | GPU ms | GPU QPS | fell back | GPU exhaustive ms "
        "| vs CPU all | vs CPU 1 thread | same hits |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in report["rows"]:
        lines.append(f"| {r['k']} | {r['cpu_all_ms']:.1f} | {r['cpu_1t_ms']:.1f} | {r['gpu_ms']:.2f} | "
                     f"{r['gpu_qps']:,.0f} | {r['fell_back']:.0%} | {r['gpu_exhaustive_ms']:.2f} | "
                     f"{r['vs_cpu_all']:.1f} | {r['vs_cpu_1t']:.1f} | "
                     f"{'yes' if r['same_hits'] else 'NO'} |")
    lines.append(f"\nHost share (tokenize + weigh the batch): {report['host_prepare_ms']:.1f} ms.")
    for p in report.get("sweep", []):
        lines.append(f"- k = 10, {p['options'] or 'defaults'}: {p['gpu_ms']:.2f} ms"
                     + (f" ({p['fell_back']:.0%} fell back)" if "fell_back" in p else ""))
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--k", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="100,000 documents, a smoke test")
    parser.add_argument("--sweep", action="store_true",
                        help="also time query-group and chunk sizes (k = 10)")
    parser.add_argument("--json")
    parser.add_argument("--markdown")
    args = parser.parse_args()
    if args.quick:
        args.n = 100_000
    report = run(args)
    report.update(section(report, command_line()))
    write_report(report, args.json, args.markdown, markdown(report))
    if not all(r["same_hits"] for r in report["rows"]):
        raise SystemExit("GPU hits differ from the CPU index's")


if __name__ == "__main__":
    main()
