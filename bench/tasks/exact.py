"""Exact dense top-k: ragcore FlatIndex (float32; bfloat16 storage; bfloat16 storage and
compute) against faiss IndexFlatIP, numpy and torch (float32, and bfloat16 matmul), by batch,
k and threads, on seeded random unit vectors (inner product).

Share of limit: the roofline time of a call, max(bytes streamed / read bandwidth,
multiply-adds / peak of the instruction used), over the measured time; the binding limit is
named. bfloat16 storage streams 2 bytes a value and multiplies in float32 (fp32 peak); bfloat16
compute and torch bf16 multiply with the bf16 dot instructions (bf16 peak). The float32 rows
of the summary compare ragcore's float32 index with the float32 peers; the bf16 compute row
compares it with every peer, torch's bf16 matmul included."""

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
    bf16_products = "bf16 compute" in peer or peer == "torch bf16"
    bytes_ = n * d * (2 if narrow else 4)
    flops = 2.0 * n * d * batch
    peak_key = ("bf16" if bf16_products else "fp32") + "_gops" + suffix
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
            peers = [r for r in cell if not r["peer"].startswith("ragcore")]
            # float32 against the float32 peers; bf16 compute (largest batch) against all
            comparisons = [("ragcore", "", [r for r in peers if "bf16" not in r["peer"]])]
            if batch == max(grid["batches"]):
                comparisons.append(("ragcore bf16 compute", ", bf16 compute", peers))
            for prefix, label, rivals in comparisons:
                mine = next((r for r in cell if r["peer"] == prefix or
                             (prefix != "ragcore" and r["peer"].startswith(prefix))), None)
                if not mine or not rivals:
                    continue
                best = max(rivals, key=lambda r: r["qps"])
                summary.append({"row": f"exact{label}, N = {n:,}, batch {batch}, k = {k}, "
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
    untimed = set()
    truth = np.argsort(-(q_all[:8].astype(np.float64) @ x.T.astype(np.float64)), axis=1)
    rows = []
    for threads in grid["threads"]:
        systems = {}
        for cls in classes:
            s = cls(threads)
            s.build(x)
            if getattr(s, "unavailable", False):
                untimed.add(s.name)
            else:
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
    notes += [f"Not timed here: {', '.join(sorted(untimed))} (its fast level is missing on this "
              "CPU)."] if untimed else []
    return write_section(
        "exact", "Exact dense top-k", command, threads=top_threads, order=10,
        intro=(f"N = {n:,} random unit vectors, d = {d}, inner product; a batch of queries "
               "per call; QPS from the best of interleaved rounds. recall@k: against float64 "
               "numpy on 8 queries (1.000: the same ids). " + " ".join(__doc__.split("\n\n")[1].split())),
        tables=[table("", columns, rows, notes)] + real_recall(grid.get("real", 0)),
        limits=limits, peers=distributions("exact"),
        plot={"table": 0, "x": "batch", "y": "qps", "series": "peer", "logx": True,
              "logy": True, "xlabel": "queries per call", "ylabel": "QPS",
              "where": {"threads": top_threads, "k": min(grid["ks"])}},
        summary=summary, out_dir=out_dir)


def real_recall(n: int) -> list:
    """recall@10 of bfloat16 storage and of bfloat16 compute against float32 exact search, on
    n embeddings of real text (the bundled encoder over standard-library paragraphs; cached)."""
    if not n:
        return []
    import ragcore
    from ragcore.cli.bench.stdlib_vectors import stdlib_embeddings

    x, q = stdlib_embeddings(n, 500, 0)
    exact = ragcore.FlatIndex(x.shape[1], "ip", "float32")
    exact.add(x)
    truth = exact.search(q, 10).ids
    rows = []
    for label, dtype, compute in (("bfloat16 storage, float32 compute", "bfloat16", "float32"),
                                  ("bfloat16 storage and compute", "bfloat16", "bfloat16")):
        index = ragcore.FlatIndex(x.shape[1], "ip", dtype, compute=compute)
        index.add(x)
        level = index.compute_level if compute == "bfloat16" else "float32"
        rows.append({"index": label, "level": level, "recall": recall(index.search(q, 10).ids, truth)})
    columns = [{"key": "index", "label": "FlatIndex"}, {"key": "level", "label": "products on"},
               {"key": "recall", "label": "recall@10 vs float32", "format": ".4f"}]
    return [table(f"recall@10 against float32 exact search on {n:,} real embeddings "
                  f"(the default bundled encoder over standard-library paragraphs, 500 held-out queries)",
                  columns, rows)]

