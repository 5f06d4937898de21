"""Exact dense top-k: ragcore FlatIndex against faiss-cpu IndexFlatIP and numpy.

For each cell (corpus size N, threads, batch, k), on seeded random unit-norm
float32 vectors (d = 384, inner product), the queries per second of
  - ragcore   FlatIndex(dtype="float32"), n_threads = threads, automatic path;
  - faiss     IndexFlatIP, its default path (SIMD scan below
              distance_compute_blas_threshold, BLAS above);
  - faiss BLAS  the same index with the BLAS path forced
              (distance_compute_blas_threshold = 0, restored afterwards);
  - numpy     matmul + argpartition + sort of the top k, in corpus chunks;
the ratio ragcore / max(faiss, faiss BLAS), and efficiency against
bench/hw.py's figures: at batch 1, corpus bytes read per second as % of the
measured memory read bandwidth (and as % of a BLAS sgemv over the same corpus
timed alongside, since this host's bandwidth drifts); at batch >= 256,
GFLOP/s (2 N d nq / time) as % of numpy's sgemm at the same thread count.
Then ragcore with float16 and bfloat16 storage at batch 1, k = 10: QPS, ratio
to the best faiss float32 path and recall@10 against exact float32 ids (faiss
BLAS, 100 queries).
Every ragcore result is also checked against faiss (scores and ids).

Timing: one warm-up call per system, then repeats until >= 0.5 s and >= 3
repeats (fewer for calls over 1.5 s), in 3 rounds that interleave the systems
of a cell (a slow phase of the shared machine then hits all of them), with a
0.2 s pause before each system's turn (BLAS / OpenMP threads of the previous
one spin for a while after a call); the median is reported. Threads are set with
faiss.omp_set_num_threads and threadpoolctl (all BLAS/OpenMP pools).
Each cell first waits for the machine to be quiet and records how much CPU
other processes took while it ran (cells with other load are marked).
OPENBLAS_CORETYPE is unset (see _common.py); the kernel each BLAS picked is
recorded. faiss-cpu's bundled OpenBLAS 0.3.15 does not know Zen 5 and falls
back to its Barcelona kernel there: --faiss-openblas-coretype SkylakeX gives
it its AVX-512 kernel (numpy's OpenBLAS is left alone).

Run:  .venv/bin/python bench/dense.py --n 100000          (N = 100k only)
      .venv/bin/python bench/dense.py                     (N = 100k and 1M: the full run)
      .venv/bin/python bench/dense.py --quick             (smoke run)
Writes bench/results/dense.json and bench/results/dense.md (for BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import os
import time
from dataclasses import dataclass

import _common  # first: re-executes without OPENBLAS_CORETYPE
from _common import (
    RESULTS_DIR, blas_threads, fmt_num, markdown_table, recall_at_k, time_calls, unit_vectors,
    write_json,
)

import numpy as np

import hw
import ragcore
from ragcore import _core

DIM = 384
SYSTEMS = ("ragcore", "faiss", "faiss_blas", "numpy")
SYSTEM_TITLES = {"ragcore": "ragcore", "faiss": "faiss default", "faiss_blas": "faiss BLAS",
                 "numpy": "numpy"}
NARROW_DTYPES = ("float16", "bfloat16")
STORAGE_ORDER = ("float32", *NARROW_DTYPES)
RECALL_QUERIES = 100
NARROW_BATCH, NARROW_K = 1, 10
# Pause before each library's turn: OpenBLAS / OpenMP workers of the previous
# one spin for up to ~0.1 s after a call and would take the cores.
SETTLE_S = 0.2
# Timed next to each batch-1 measurement: BLAS sgemv over the float32 corpus at
# the same thread count, the read rate reachable in that very time window.
READ_REFERENCE = "blas_read_reference"


# ---- systems -----------------------------------------------------------------


def import_faiss(coretype: str | None):
    """Imports faiss; coretype, if given, is OPENBLAS_CORETYPE for faiss's own OpenBLAS only."""
    if coretype:
        os.environ["OPENBLAS_CORETYPE"] = coretype  # read once, when the library loads
    try:
        import faiss
    finally:
        os.environ.pop("OPENBLAS_CORETYPE", None)
    return faiss


@contextlib.contextmanager
def faiss_blas_forced(faiss):
    saved = faiss.cvar.distance_compute_blas_threshold
    faiss.cvar.distance_compute_blas_threshold = 0
    try:
        yield
    finally:
        faiss.cvar.distance_compute_blas_threshold = saved


@contextlib.contextmanager
def thread_count(faiss, n: int):
    """n threads for faiss (OpenMP) and every BLAS; ragcore gets n_threads=n per call."""
    saved = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(n)
    try:
        with blas_threads(n):
            yield
    finally:
        faiss.omp_set_num_threads(saved)


def numpy_topk(corpus: np.ndarray, queries: np.ndarray, k: int):
    """Exact top-k by inner product: chunked matmul, argpartition, running merge, sort."""
    nq = len(queries)
    chunk = int(min(65536, max(4096, (32 << 20) // (4 * nq))))  # score block <= ~32 MiB
    best_s = np.full((nq, 0), -np.inf, dtype=np.float32)
    best_i = np.empty((nq, 0), dtype=np.int64)
    for start in range(0, len(corpus), chunk):
        scores = queries @ corpus[start : start + chunk].T
        kk = min(k, scores.shape[1])
        top = np.argpartition(scores, -kk, axis=1)[:, -kk:]
        cand_s = np.concatenate([best_s, np.take_along_axis(scores, top, 1)], axis=1)
        cand_i = np.concatenate([best_i, top + start], axis=1)
        keep = np.argpartition(cand_s, -min(k, cand_s.shape[1]), axis=1)[:, -k:]
        best_s, best_i = np.take_along_axis(cand_s, keep, 1), np.take_along_axis(cand_i, keep, 1)
    order = np.argsort(-best_s, axis=1, kind="stable")
    return np.take_along_axis(best_s, order, 1), np.take_along_axis(best_i, order, 1)


@dataclass
class Searchers:
    """The systems under test over one corpus; each call returns (scores, ids)."""

    faiss: object
    corpus: np.ndarray
    rc_index: ragcore.FlatIndex
    faiss_index: object

    @classmethod
    def build(cls, faiss, corpus: np.ndarray) -> "Searchers":
        rc_index = ragcore.FlatIndex(corpus.shape[1], metric="ip", dtype="float32")
        rc_index.add(corpus)
        faiss_index = faiss.IndexFlatIP(corpus.shape[1])
        faiss_index.add(corpus)
        return cls(faiss, corpus, rc_index, faiss_index)

    def search(self, system: str, queries: np.ndarray, k: int, threads: int):
        if system == "ragcore":
            hits = self.rc_index.search(queries, k, n_threads=threads)
            return hits.scores, hits.ids
        if system == "faiss":
            return self.faiss_index.search(queries, k)
        if system == "faiss_blas":
            with faiss_blas_forced(self.faiss):
                return self.faiss_index.search(queries, k)
        if system == "numpy":
            return numpy_topk(self.corpus, queries, k)
        raise ValueError(system)


# ---- metrics -----------------------------------------------------------------


def efficiency(n: int, batch: int, threads: int, seconds: float, hw_figures: dict,
               bytes_per_value: int = 4, reference_gbps: float | None = None) -> dict | None:
    """Batch 1: GB/s, % of hw.py's read bandwidth and % of the read reference measured
    in the same window; batch >= 256: GFLOP/s and % of sgemm."""
    if batch == 1:
        gbps = n * DIM * bytes_per_value / seconds / 1e9
        return {"unit": "GB/s", "value": gbps,
                "pct": 100 * gbps / hw_figures["bandwidth"]["gbps_best"],
                "pct_of_reference": 100 * gbps / reference_gbps if reference_gbps else None}
    if batch >= 256:
        gflops = 2.0 * n * DIM * batch / seconds / 1e9
        peak = hw_figures["sgemm"]["gflops_by_threads"][str(threads)]
        return {"unit": "GFLOP/s", "value": gflops, "pct": 100 * gflops / peak}
    return None


def agreement(scores, ids, ref_scores, ref_ids) -> dict:
    """How far a result is from a reference: worst score difference, id recall."""
    return {"max_abs_score_diff": float(np.max(np.abs(scores - ref_scores))),
            "id_recall": recall_at_k(ids, ref_ids)}


# ---- the fp32 grid -------------------------------------------------------------


def reference_gbps(corpus: np.ndarray, timings: dict) -> float | None:
    """GB/s of the BLAS read reference timed alongside, if it was."""
    ref = timings.get(READ_REFERENCE)
    return corpus.nbytes / ref.median / 1e9 if ref else None


def run_cell(s: Searchers, n: int, threads: int, batch: int, k: int, queries: np.ndarray,
             hw_figures: dict) -> dict:
    q = queries[:batch]
    cell = {"n": n, "threads": threads, "batch": batch, "k": k, "systems": {}}
    fns = {system: functools.partial(s.search, system, q, k, threads) for system in SYSTEMS}
    if batch == 1:
        fns[READ_REFERENCE] = functools.partial(hw.blas_read, s.corpus, q[0])
    _common.wait_until_quiet()
    load = _common.LoadMeter()
    with thread_count(s.faiss, threads):
        timings, results = time_calls(fns, settle_s=SETTLE_S)
    cell["load"] = load.report()
    ref_gbps = reference_gbps(s.corpus, timings)
    cell["read_reference_gbps"] = ref_gbps
    for system in SYSTEMS:
        timing = timings[system]
        cell["systems"][system] = {
            "qps": batch / timing.median, "timing": timing.as_dict(),
            "efficiency": efficiency(n, batch, threads, timing.median, hw_figures,
                                     reference_gbps=ref_gbps)}
    qps = {name: v["qps"] for name, v in cell["systems"].items()}
    best_faiss = max(("faiss", "faiss_blas"), key=qps.get)
    cell["best_faiss"] = best_faiss
    cell["ratio_vs_best_faiss"] = qps["ragcore"] / qps[best_faiss]
    cell["check"] = {name: agreement(*results[name], *results["faiss_blas"])
                     for name in ("ragcore", "numpy", "faiss")}
    return cell


def foreign_load(item: dict) -> float:
    return _common.foreign_cores(item["load"])


def busy(item: dict) -> bool:
    """Whether other processes / the hypervisor took a noticeable share during a measurement."""
    return foreign_load(item) >= _common.BUSY_CORES


def busy_note(item: dict) -> str:
    return f" BUSY: other load {foreign_load(item)} cores" if busy(item) else ""


def progress(cell: dict, index: int, total: int, seconds: float) -> str:
    q = {name: fmt_num(v["qps"]) for name, v in cell["systems"].items()}
    chk = cell["check"]["ragcore"]
    return (f"[{index}/{total}] N={cell['n']:,} t={cell['threads']} batch={cell['batch']} "
            f"k={cell['k']}: ragcore {q['ragcore']} q/s | faiss {q['faiss']} | "
            f"faiss BLAS {q['faiss_blas']} | numpy {q['numpy']} | "
            f"ratio {cell['ratio_vs_best_faiss']:.2f} | ids vs faiss {chk['id_recall']:.3f} "
            f"({seconds:.1f} s){busy_note(cell)}")


def run_grid(s: Searchers, n: int, args, queries: np.ndarray, hw_figures: dict) -> list[dict]:
    grid = [(t, b, k) for t in args.threads for b in args.batches for k in args.ks]
    cells = []
    for i, (t, b, k) in enumerate(grid, 1):
        t0 = time.perf_counter()
        cells.append(run_cell(s, n, t, b, k, queries, hw_figures))
        print(progress(cells[-1], i, len(grid), time.perf_counter() - t0), flush=True)
    return cells


# ---- narrow storage ----------------------------------------------------------


def faiss_best_qps(s: Searchers, cells: list[dict], n: int, threads: int,
                   queries: np.ndarray) -> float:
    """Best faiss QPS at (batch 1, k 10) from the grid, measured now if the grid lacks it."""
    for c in cells:
        if (c["n"], c["threads"], c["batch"], c["k"]) == (n, threads, NARROW_BATCH, NARROW_K):
            return max(c["systems"][f]["qps"] for f in ("faiss", "faiss_blas"))
    q = queries[:NARROW_BATCH]
    fns = {f: functools.partial(s.search, f, q, NARROW_K, threads) for f in ("faiss", "faiss_blas")}
    with thread_count(s.faiss, threads):
        timings, _ = time_calls(fns, settle_s=SETTLE_S)
    return NARROW_BATCH / min(t.median for t in timings.values())


def narrow_recall(index: ragcore.FlatIndex, queries: np.ndarray, truth: np.ndarray) -> dict:
    """recall@10 of both native paths (they must agree) against exact float32 ids."""
    out = {}
    for name, path in (("scan", _core.DensePath.Scan), ("blocked", _core.DensePath.Blocked)):
        index._search_options = {"path": path}
        out[name] = recall_at_k(index.search(queries, NARROW_K).ids, truth)
    index._search_options = {}
    return out


def run_narrow(s: Searchers, n: int, args, queries: np.ndarray, cells: list[dict],
               hw_figures: dict) -> list[dict]:
    recall_q = queries[:RECALL_QUERIES]
    with faiss_blas_forced(s.faiss):
        truth = s.faiss_index.search(recall_q, NARROW_K)[1]
    rows = []
    for dtype in STORAGE_ORDER:
        index = ragcore.FlatIndex(DIM, metric="ip", dtype=dtype)
        index.add(s.corpus)
        recall = narrow_recall(index, recall_q, truth)
        for t in args.threads:
            q = queries[:NARROW_BATCH]
            fns = {"search": functools.partial(index.search, q, NARROW_K, n_threads=t),
                   READ_REFERENCE: functools.partial(hw.blas_read, s.corpus, q[0])}
            _common.wait_until_quiet()
            load = _common.LoadMeter()
            with blas_threads(t):
                timings, _ = time_calls(fns, settle_s=SETTLE_S)
            load = load.report()
            timing = timings["search"]
            qps = NARROW_BATCH / timing.median
            ratio = qps / faiss_best_qps(s, cells, n, t, queries)
            eff = efficiency(n, NARROW_BATCH, t, timing.median, hw_figures,
                             bytes_per_value=2 if dtype != "float32" else 4,
                             reference_gbps=reference_gbps(s.corpus, timings))
            rows.append({"n": n, "threads": t, "dtype": dtype, "qps": qps,
                         "timing": timing.as_dict(), "ratio_vs_best_faiss_fp32": ratio,
                         "efficiency": eff, "recall_at_10": recall, "load": load})
            print(f"[narrow] N={n:,} t={t} {dtype}: {fmt_num(qps)} q/s, ratio {ratio:.2f}, "
                  f"recall@10 scan {recall['scan']:.3f} blocked {recall['blocked']:.3f}",
                  flush=True)
        del index
    return rows


# ---- report --------------------------------------------------------------------


def fmt_eff(eff: dict | None) -> str:
    if not eff:
        return "—"
    pcts = f"{eff['pct']:.0f}%"
    if eff.get("pct_of_reference"):
        pcts += f" / {eff['pct_of_reference']:.0f}%"
    return f"{fmt_num(eff['value'])} {eff['unit']} ({pcts})"


def grid_table(cells: list[dict]) -> str:
    headers = ["threads", "batch", "k", *(f"{SYSTEM_TITLES[s]} QPS" for s in SYSTEMS),
               "ragcore / best faiss", "ragcore eff.", "best faiss eff."]
    rows = []
    for c in cells:
        sy = c["systems"]
        mark = "*" if busy(c) else ""
        rows.append([f"{c['threads']}{mark}", c["batch"], c["k"],
                     *(fmt_num(sy[s]["qps"]) for s in SYSTEMS),
                     f"{c['ratio_vs_best_faiss']:.2f}", fmt_eff(sy["ragcore"]["efficiency"]),
                     fmt_eff(sy[c["best_faiss"]]["efficiency"])])
    return markdown_table(headers, rows, align="r" * len(headers))


def narrow_table(rows: list[dict]) -> str:
    headers = ["threads", "storage", "QPS", "ratio to best faiss fp32", "read rate",
               "recall@10 (scan / blocked path)"]
    body = [[f"{r['threads']}{'*' if busy(r) else ''}", r["dtype"], fmt_num(r["qps"]),
             f"{r['ratio_vs_best_faiss_fp32']:.2f}", fmt_eff(r["efficiency"]),
             f"{r['recall_at_10']['scan']:.3f} / {r['recall_at_10']['blocked']:.3f}"]
            for r in sorted(rows, key=lambda r: (r["threads"], STORAGE_ORDER.index(r["dtype"])))]
    return markdown_table(headers, body, align="rlrrrr")


def checks_summary(cells: list[dict]) -> str:
    worst = min(cells, key=lambda c: c["check"]["ragcore"]["id_recall"])
    diff = max(c["check"]["ragcore"]["max_abs_score_diff"] for c in cells)
    return (f"ragcore vs faiss BLAS: largest score difference {diff:.2e}; lowest id agreement "
            f"{worst['check']['ragcore']['id_recall']:.4f} (N={worst['n']:,}, "
            f"t={worst['threads']}, batch={worst['batch']}, k={worst['k']}).")


def library_lines(env: dict, faiss_info: dict) -> list[str]:
    threshold = faiss_info["blas_threshold"]
    coretype = faiss_info["coretype"]
    lines = [f"- {_common.ragcore_build_line(env['ragcore'])}: SIMD level "
             f"{env['ragcore']['simd_level']}, blocked path from batch "
             + ", ".join(f"{n} ({dtype})" for dtype, n in env['ragcore']['blocked_path_min_batch'].items()),
             f"- faiss {faiss_info['version']} ({faiss_info['compile_options'].strip()}); "
             f"default path uses BLAS when nq * d >= {threshold} "
             f"(nq >= {math.ceil(threshold / DIM)} at d = {DIM})",
             f"- numpy {env['numpy']}, Python {env['python']}, "
             f"OPENBLAS_CORETYPE={env['openblas_coretype_env'] or 'unset'}"
             + (f" (faiss's OpenBLAS loaded with {coretype})" if coretype else "")]
    lines += [f"- {r['user_api']}: {r['internal_api']} {r['version'] or ''} kernel="
              f"{r['architecture']} ({r['file']})" for r in env["blas"]]
    kernels = sorted({r["architecture"] for r in env["blas"] if r["user_api"] == "blas"})
    if len(kernels) > 1:
        lines.append(f"- **Warning**: the BLAS libraries picked different kernels "
                     f"({', '.join(kernels)}): a library that does not know this CPU falls "
                     "back to an older kernel, which slows its BLAS path "
                     "(see --faiss-openblas-coretype)")
    return lines


def machine_lines(env: dict, hw_figures: dict, load: dict) -> list[str]:
    bw = hw_figures["bandwidth"]["gbps_by_threads"]
    gemm = hw_figures["sgemm"]["gflops_by_threads"]
    return [f"- CPU: {env['cpu']}, {env['cores']} cores ({' '.join(env['cpu_flags'])})",
            f"- Machine (bench/hw.py): read bandwidth {fmt_num(bw['1'])} GB/s on 1 thread, "
            f"{fmt_num(bw['2'])} GB/s on 2 (the best, "
            f"{fmt_num(hw_figures['bandwidth']['gbps_best'])} GB/s, is the 100% of batch-1 "
            f"rates); sgemm {fmt_num(gemm['1'])} / {fmt_num(gemm['2'])} GFLOP/s on 1 / 2 "
            "threads (the 100% of batch >= 256 rates); other load while measuring them: "
            f"{_common.foreign_cores(hw_figures['load'])} cores",
            f"- Run took {load['wall_s']:.0f} s; meanwhile other processes used "
            f"{load['other_processes_cores']} cores and the hypervisor stole "
            f"{load['steal_cores']} on average (each cell waits for a quiet machine first; "
            f"cells marked * had >= {_common.BUSY_CORES} cores of other load while measured)"]


def markdown(payload: dict) -> str:
    env = payload["environment"]
    out = ["# Dense exact top-k: ragcore vs faiss-cpu vs numpy", "",
           f"- Command: `{env['command']}`", f"- Date: {env['date']}",
           *machine_lines(env, payload["hw"], payload["load"]),
           *library_lines(env, payload["faiss"]),
           *(f"- **Warning**: {w}" for w in payload.get("warnings", [])), "",
           f"Random unit-norm float32 vectors, d = {DIM}, inner product; QPS = queries per "
           "second (median of repeats). Efficiency: at batch 1, corpus bytes read per second, "
           "as % of bench/hw.py's best read bandwidth / % of a BLAS sgemv over the same corpus "
           "at the same thread count timed in the same window (this host's bandwidth drifts "
           "by tens of percent over time); at batch >= 256, 2·N·d·nq / time as % of sgemm at "
           "the same thread count."]
    for n in payload["n"]:
        cells = [c for c in payload["cells"] if c["n"] == n]
        narrow = [r for r in payload["narrow"] if r["n"] == n]
        out += ["", f"## N = {n:,}", "", grid_table(cells), "", checks_summary(cells)]
        if narrow:
            out += ["", f"### Narrow storage, batch {NARROW_BATCH}, k = {NARROW_K} (N = {n:,})",
                    "", narrow_table(narrow), "",
                    f"Recall@10 against exact float32 ids (faiss BLAS) over {RECALL_QUERIES} "
                    "queries; read rate counts the bytes as stored."]
    return "\n".join(out) + "\n"


# ---- main ----------------------------------------------------------------------


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 16, 256, 1024])
    parser.add_argument("--ks", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: N = 20,000, batches 1 16 256, k = 10, quick hw figures")
    parser.add_argument("--no-narrow", action="store_true", help="skip float16/bfloat16")
    parser.add_argument("--hw", metavar="PATH",
                        help="reuse bench/hw.py's JSON instead of measuring the machine now")
    parser.add_argument("--faiss-openblas-coretype", metavar="NAME",
                        help="OPENBLAS_CORETYPE for faiss's bundled OpenBLAS only (e.g. Haswell, "
                             "where it does not know the CPU); numpy's stays unset")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--json", default=str(RESULTS_DIR / "dense.json"))
    parser.add_argument("--markdown", default=str(RESULTS_DIR / "dense.md"))
    args = parser.parse_args()
    if args.quick:
        args.n, args.batches, args.ks = [20_000], [1, 16, 256], [10]
    return args


def hw_figures(args) -> dict:
    """bench/hw.py's figures, keyed by thread count as strings (as in its JSON)."""
    figures = _common.read_json(args.hw) if args.hw else hw.measure(quick=args.quick)
    return _common.json_roundtrip(figures)


def main() -> None:
    args = parse_args()
    load = _common.LoadMeter()
    faiss = import_faiss(args.faiss_openblas_coretype)
    env = _common.environment()  # now: ragcore's build is hashed as loaded
    figures = hw_figures(args)
    faiss_info = {"version": faiss.__version__, "compile_options": faiss.get_compile_options(),
                  "blas_threshold": faiss.cvar.distance_compute_blas_threshold,
                  "coretype": args.faiss_openblas_coretype}
    queries = unit_vectors(max(max(args.batches), RECALL_QUERIES), DIM, seed=args.seed + 1)
    cells, narrow = [], []
    for n in args.n:
        searchers = Searchers.build(faiss, unit_vectors(n, DIM, seed=args.seed))
        cells += run_grid(searchers, n, args, queries, figures)
        if not args.no_narrow:
            narrow += run_narrow(searchers, n, args, queries, cells, figures)
        del searchers
    warnings = [w for w in [_common.ragcore_reinstalled(env["ragcore"])] if w]
    payload = {"environment": env, "faiss": faiss_info, "hw": figures,
               "n": args.n, "dim": DIM, "cells": cells, "narrow": narrow,
               "load": load.report(), "warnings": warnings}
    write_json(args.json, payload)
    md = markdown(payload)
    _common.write_text(args.markdown, md)
    print(md)


if __name__ == "__main__":
    main()
