"""``ragcore bench ann``: exhaustive versus approximate search, peers side by side.

Steps: data (clustered by default, or ``stdlib``: the bundled encoder's
embeddings of stdlib docstring and comment paragraphs), ground truth with
FlatIndex (exact), then for each system (ragcore IVFIndex float32, sq8, pq4 and rabitq for
each nlist, ragcore HNSWIndex, faiss IndexIVFFlat for each nlist, faiss
IndexHNSWFlat, hnswlib, usearch, where installed; the graphs all with --M and
--ef-construction) one build, timed, and a sweep of its search knob; at each point
recall@k against the exact top-k, and latency/QPS at batch 1 and 256 (see
measure_latency). Writes ann.csv, ann.json, ann.md and ann.png (recall vs QPS
with the Pareto front of each system) to --out.
"""

from __future__ import annotations

import argparse
import csv
import gc
import itertools
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from ...dense.flat import FlatIndex
from . import data as bench_data
from ._machine import CpuLoad, environment
from ..._util.progress import Progress
from .latency import measure_latency
from .pareto import best_qps_at, plot
from .peers import GRAPH_EF_CONSTRUCTION, GRAPH_M, SYSTEM_NAMES, make_systems
from .recall import recall_vs_exact

TARGET_RECALL = 0.95
CSV_FIELDS = ("system", "config", "knob", "value", "recall", "qps_b1", "p50_ms_b1", "p99_ms_b1",
              "qps_b256", "p50_ms_b256", "build_s", "memory_mb", "other_cores", "steal_cores")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--n", type=int, default=200_000, help="corpus vectors (default 200000)")
    add("--d", type=int, default=384, help="dimensions (default 384; ignored for a FILE.npy)")
    add("--data", default="clustered",
        help="clustered (mixture of Gaussians, normalised; default), random, stdlib (the bundled "
             "encoder's embeddings of stdlib paragraphs, computed once and cached), or FILE.npy")
    add("--queries", type=int, default=1000, help="queries for recall (default 1000)")
    add("--k", type=int, default=10, help="results per query (default 10)")
    add("--nlist", type=_int_list, default=None,
        help="IVF list counts, comma-separated (default: 2 and 4 x sqrt(n), powers of 2)")
    add("--nprobe", type=_int_list, default=[1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128],
        help="IVF nprobe sweep (default 1,2,4,8,12,16,24,32,48,64,96,128)")
    add("--ef", type=_int_list, default=[10, 16, 24, 32, 48, 64, 96, 128, 256],
        help="HNSW efSearch sweep (default 10,16,24,32,48,64,96,128,256)")
    add("--M", type=int, default=GRAPH_M, help=f"graph indexes' M (default {GRAPH_M})")
    add("--ef-construction", type=int, default=GRAPH_EF_CONSTRUCTION,
        help=f"graph indexes' ef_construction (default {GRAPH_EF_CONSTRUCTION})")
    add("--systems", type=lambda s: s.split(","), default=list(SYSTEM_NAMES),
        help=f"comma-separated subset of {','.join(SYSTEM_NAMES)}")
    add("--threads", type=int, default=0, help="threads for every system (default 0: all cores)")
    add("--train-size", type=int, default=0,
        help="IVF training sample (default: min(n, 40 x the largest nlist))")
    add("--b1-calls", type=int, default=200, help="timed batch-1 calls per point (default 200)")
    add("--b256-calls", type=int, default=4, help="timed batch-256 calls per point (default 4)")
    add("--seed", type=int, default=0)
    add("--out", type=Path, default=Path("bench/results"), help="output folder (default bench/results)")
    add("--json", action="store_true", help="print the results as JSON on stdout")


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def run(args) -> int:
    unknown = sorted(set(args.systems) - set(SYSTEM_NAMES))
    if unknown:
        raise SystemExit(f"--systems: unknown {', '.join(unknown)}; expected from {', '.join(SYSTEM_NAMES)}")
    threads = args.threads or __import__("os").cpu_count() or 1
    log = sys.stderr if args.json else sys.stdout
    x, queries = _load(args)
    n, d = x.shape
    nlists = args.nlist or sorted({2 ** round(math.log2(f * math.sqrt(n))) for f in (2, 4)})
    print(f"data: {args.data}, n={n}, d={d}, {len(queries)} queries, k={args.k}, "
          f"threads={threads}, nlist={nlists}", file=log, flush=True)
    total_load = CpuLoad()

    t0 = time.perf_counter()
    exact = FlatIndex(d)
    exact.add(x)
    truth = exact.search(queries, args.k, n_threads=threads)
    print(f"ground truth (FlatIndex, exact): {time.perf_counter() - t0:.1f} s", file=log, flush=True)
    del exact

    train_size = args.train_size or min(n, 40 * max(nlists))  # faiss warns below 39
    sample = x[np.random.default_rng(args.seed).permutation(n)[:train_size]]
    systems, missing = make_systems(args.systems, nlists, threads, args.seed, args.M,
                                    args.ef_construction)
    for family in missing:
        print(f"skipped {family}: its library is not installed", file=log, flush=True)

    rows = []
    for system in systems:
        values = ([p for p in args.nprobe if p <= system.nlist] if system.sweep == "nprobe"
                  else args.ef)
        rows += _sweep(system, values, x, sample, queries, truth, args, log)
        system.index = None
        gc.collect()
    payload = {
        "environment": environment(threads),
        "parameters": {"n": n, "d": d, "data": args.data, "queries": len(queries), "k": args.k,
                       "nlist": nlists, "nprobe": args.nprobe, "ef": args.ef,
                       "M": args.M, "ef_construction": args.ef_construction,
                       "train_size": train_size, "b1_calls": args.b1_calls,
                       "b256_calls": args.b256_calls, "seed": args.seed},
        "skipped": missing, "rows": rows, "targets": targets(rows),
        "load_whole_run": total_load.report(),
    }
    _write(payload, args.out, f"n={n}, d={d}, {args.data}", log)
    if args.json:
        print(json.dumps(payload, indent=2))
    return 0


def _load(args):
    if args.data == "clustered":
        return bench_data.clustered(args.n, args.d, args.seed, args.queries)
    if args.data == "random":
        return bench_data.uniform(args.n, args.d, args.seed, args.queries)
    if args.data == "stdlib":
        from .stdlib_vectors import stdlib_embeddings

        return stdlib_embeddings(args.n, args.queries, args.seed)
    if args.data.endswith(".npy"):
        return bench_data.from_file(args.data, args.n, args.seed, args.queries)
    raise SystemExit(f"--data: expected clustered, random, stdlib or a .npy file, got {args.data!r}")


class _AtValue:
    """A system with its knob at one value, as measure_latency times it."""

    def __init__(self, system, value):
        self.system, self.value = system, value

    def search(self, queries, k):
        return self.system.search(queries, k, self.value)

    @property
    def last_stage_seconds(self) -> dict:
        return getattr(self.system, "last_stage_seconds", {})


def _sweep(system, values, x, sample, queries, truth, args, log) -> list[dict]:
    load = CpuLoad()
    t0 = time.perf_counter()
    system.build(x, sample)
    build_s = time.perf_counter() - t0
    memory_mb = system.memory_bytes() / 2**20
    progress = Progress(len(values), f"{system.name} {system.config}".strip(), stream=log,
                        log_lines=True)
    rows = []
    for value in values:
        point = _AtValue(system, value)
        point_load = CpuLoad()
        recall = recall_vs_exact(point.search(queries, args.k), truth, args.k)
        b1 = measure_latency(point, queries, args.k, warmup=5, repeats=args.b1_calls,
                             batch_sizes=(1,))[1]
        b256 = measure_latency(point, queries, args.k, warmup=1, repeats=args.b256_calls,
                               batch_sizes=(256,))[256]
        busy = point_load.report()
        rows.append({
            "system": system.name, "config": system.config, "knob": system.knob,
            "value": value, "recall": round(recall, 4),
            "qps_b1": round(b1["qps"], 1), "p50_ms_b1": round(b1["p50_ms"], 4),
            "p99_ms_b1": round(b1["p99_ms"], 4), "qps_b256": round(b256["qps"], 1),
            "p50_ms_b256": round(b256["p50_ms"], 3), "build_s": round(build_s, 2),
            "memory_mb": round(memory_mb, 1), "other_cores": busy["other_processes_cores"],
            "steal_cores": busy["steal_cores"], "stages_b1": b1["stages"],
        })
        progress.step(f"{system.knob}={value} recall={recall:.3f} qps1={b1['qps']:.0f}")
    print(f"  build {build_s:.1f} s, {memory_mb:.0f} MiB, other load {load.report()}", file=log, flush=True)
    return rows


def targets(rows: list[dict]) -> dict:
    """The issue's targets at recall@10 >= 0.95, from the best QPS of each system there."""
    def best(family, key):
        return best_qps_at(rows, family, key, TARGET_RECALL)

    def ratio(a, b):
        return None if a is None or b is None else round(a / b, 2)

    out = {}
    for key in ("qps_b1", "qps_b256"):
        ours, faiss = best("ragcore IVF float32", key), best("faiss IndexIVFFlat", key)
        out[f"ivf_float32_vs_faiss_ivfflat_{key}"] = {"ragcore": ours, "faiss": faiss,
                                                      "ratio": ratio(ours, faiss), "target": 1.0}
    graph_peers = [p for p in ("hnswlib", "faiss IndexHNSWFlat", "usearch")
                   if any(r["system"] == p for r in rows)]
    if any(r["system"] == "ragcore HNSW" for r in rows):
        for peer, key, recall in itertools.product(graph_peers, ("qps_b1", "qps_b256"), (0.95, 0.99)):
            ours = best_qps_at(rows, "ragcore HNSW", key, recall)
            theirs = best_qps_at(rows, peer, key, recall)
            out[f"hnsw_vs_{peer.split()[0]}_{key}_at_{recall}"] = {
                "ragcore": ours, "peer": theirs, "ratio": ratio(ours, theirs), "target": 1.0}
    sq8, f32 = best("ragcore IVF sq8", "qps_b1"), best("ragcore IVF float32", "qps_b1")
    out["ivf_sq8_vs_float32_qps_b1"] = {"sq8": sq8, "float32": f32, "ratio": ratio(sq8, f32),
                                        "target": 2.0}
    return out


def _write(payload: dict, out: Path, title: str, log) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rows = payload["rows"]
    with open(out / "ann.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    (out / "ann.json").write_text(json.dumps(payload, indent=2) + "\n")
    (out / "ann.md").write_text(markdown(payload) + "\n")
    png = plot(rows, out / "ann.png", title) if rows else None
    written = ["ann.csv", "ann.json", "ann.md"] + (["ann.png"] if png else [])
    print(f"wrote {', '.join(str(out / w) for w in written)}", file=log, flush=True)
    print(markdown(payload), file=log, flush=True)


def markdown(payload: dict) -> str:
    """The result table (best QPS per system at recall >= 0.95, then every point)."""
    rows = payload["rows"]
    lines = [f"Best QPS at recall@{payload['parameters']['k']} >= {TARGET_RECALL}:", "",
             "| system | config | QPS batch 1 | QPS batch 256 | build s | memory MiB |",
             "|---|---|---:|---:|---:|---:|"]
    for system, config in dict.fromkeys((r["system"], r["config"]) for r in rows):
        mine = [r for r in rows if r["system"] == system and r["config"] == config
                and r["recall"] >= TARGET_RECALL]
        if not mine:
            lines.append(f"| {system} | {config} | (recall < {TARGET_RECALL}) | | | |")
            continue
        b1 = max(mine, key=lambda r: r["qps_b1"])
        b256 = max(mine, key=lambda r: r["qps_b256"])
        lines.append(f"| {system} | {config} | {b1['qps_b1']:,.0f} ({b1['knob']}={b1['value']}) "
                     f"| {b256['qps_b256']:,.0f} ({b256['knob']}={b256['value']}) "
                     f"| {b1['build_s']:.1f} | {b1['memory_mb']:,.0f} |")
    lines += ["", "Targets: " + json.dumps(payload["targets"]), "",
              "| system | config | knob | recall | QPS b1 | p50 ms b1 | p99 ms b1 | QPS b256 | other cores |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['system']} | {r['config']} | {r['knob']}={r['value']} | {r['recall']:.3f} "
                     f"| {r['qps_b1']:,.0f} | {r['p50_ms_b1']:.3f} | {r['p99_ms_b1']:.3f} "
                     f"| {r['qps_b256']:,.0f} | {r['other_cores']} |")
    return "\n".join(lines)
