"""Exact dense top-k: ragcore FlatIndex (float32, bfloat16) against faiss IndexFlatIP, numpy
and torch, by batch, k and threads, on seeded random unit vectors (inner product).

Share of limit: the roofline time of a call, max(bytes streamed / read bandwidth,
multiply-adds / peak of the instruction used), over the measured time; the binding limit is
named. ragcore bf16 streams 2 bytes a value and multiplies with vdpbf16ps (bf16 peak)."""

from __future__ import annotations

import numpy as np

from peers import adapters, distributions
from results_file import table, write_section
from timing import recall, seconds_per_call


def unit(n, d, seed):
    x = np.random.default_rng(seed).standard_normal((n, d), dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def share(peer, n, d, batch, seconds, threads, limits):
    suffix = "_1t" if threads == 1 else ""
    narrow = "bf16" in peer
    bytes_ = n * d * (2 if narrow else 4)
    flops = 2.0 * n * d * batch
    peak_key = ("bf16" if narrow else "fp32") + "_gops" + suffix
    bw = limits.get("bandwidth_gbps" + suffix)
    peak = limits.get(peak_key)
    if not bw or not peak:
        return None, None
    t_mem, t_ops = bytes_ / (bw * 1e9), flops / (peak * 1e9)
    name = "read bandwidth" if t_mem >= t_ops else f"{peak_key.split('_')[0]} peak"
    return max(t_mem, t_ops) / seconds, name


def summarize(rows, n, grid):
    """The summary rows: ragcore against the best peer at the smallest and largest batch, the
    first k, each thread count."""
    summary, k = [], min(grid["ks"])
    for threads in grid["threads"]:
        for batch in (min(grid["batches"]), max(grid["batches"])):
            cell = [r for r in rows if r["threads"] == threads and r["batch"] == batch
                    and r["k"] == k]
            mine = next((r for r in cell if r["peer"] == "ragcore"), None)
            peers = [r for r in cell if not r["peer"].startswith("ragcore")]
            if mine and peers:
                best = max(peers, key=lambda r: r["qps"])
                summary.append({"row": f"exact, N = {n:,}, batch {batch}, k = {k}, "
                                       f"{threads} thread{'s' if threads > 1 else ''}",
                                "measure": "QPS", "ragcore": mine["qps"],
                                "best_peer": best["peer"], "best_peer_value": best["qps"],
                                "share": mine["share"], "limit": mine["limit"],
                                "format": ",.0f"})
    return summary


def run(grid, out_dir, command, limits):
    n, d = grid["n"], grid["d"]
    x, q_all = unit(n, d, 0), unit(max(grid["batches"]), d, 1)
    classes, missing = adapters("exact")
    truth = np.argsort(-(q_all[:8].astype(np.float64) @ x.T.astype(np.float64)), axis=1)
    rows = []
    for threads in grid["threads"]:
        systems = {}
        for cls in classes:
            s = cls(threads)
            s.build(x)
            systems[s.name] = s
        for batch in grid["batches"]:
            q = np.ascontiguousarray(q_all[:batch])
            for k in grid["ks"]:
                fns = {name: (lambda s=s, q=q, k=k: s.search(q, k)) for name, s in systems.items()}
                secs = seconds_per_call(fns, grid["rounds"], grid["min_seconds"])
                for name, s in systems.items():
                    got = s.search(q_all[:8], k)
                    part, limit = share(name, n, d, batch, secs[name], threads, limits)
                    rows.append({"peer": name, "threads": threads, "batch": batch, "k": k,
                                 "qps": batch / secs[name], "share": part, "limit": limit,
                                 "recall": recall(got, truth[:, :k])})
    top_threads = max(grid["threads"])
    summary = summarize(rows, n, grid)
    columns = [{"key": "peer", "label": "library"}, {"key": "threads", "label": "threads"},
               {"key": "batch", "label": "batch"}, {"key": "k", "label": "k"},
               {"key": "qps", "label": "QPS", "format": ",.0f"},
               {"key": "share", "label": "share of limit", "format": ".0%"},
               {"key": "limit", "label": "binding limit"},
               {"key": "recall", "label": "recall@k", "format": ".3f"}]
    notes = [f"Not installed here: {', '.join(missing)}."] if missing else []
    return write_section(
        "exact", "Exact dense top-k", command, threads=top_threads, order=10,
        intro=(f"N = {n:,} random unit vectors, d = {d}, inner product; a batch of queries "
               "per call; QPS from the best of interleaved rounds. recall@k: against float64 "
               "numpy on 8 queries (1.000: the same ids). " + " ".join(__doc__.split("\n\n")[1].split())),
        tables=[table("", columns, rows, notes)], limits=limits, peers=distributions("exact"),
        plot={"table": 0, "x": "batch", "y": "qps", "series": "peer", "logx": True,
              "logy": True, "xlabel": "queries per call", "ylabel": "QPS",
              "where": {"threads": top_threads, "k": min(grid["ks"])}},
        summary=summary, out_dir=out_dir)
