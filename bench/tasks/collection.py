"""Embedded vector stores on disk: the ragcore Collection (flat and HNSW dense index) against
Chroma (HNSW, M 16, ef_construction 200, search ef 64), LanceDB (flat scan, filter first) and
Qdrant's local mode, all given the same vectors (no encoding): add throughput, reopening and a
first query, query latency p50 / p99 (one query per call, k = 10) without a filter and with
bucket < 10 (10% of the rows allowed) and < 1 (1%), recall@10 against exact filtered search
(float64 numpy), bytes on disk; the queries go to the stores in turn. Vectors: clustered unit vectors (ragcore.cli.bench.data);
metadata: an integer bucket uniform in 0..99."""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

from peers import adapters, distributions
from results_file import table, write_section
from timing import recall, timed

FILTERS = (None, 10, 1)


def disk_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(path)
               for f in files)


def exact(x, buckets, q, below, k):
    s = q.astype(np.float64) @ x.T.astype(np.float64)
    if below is not None:
        s[:, buckets >= below] = -np.inf
    order = np.argsort(-s, axis=1, kind="stable")[:, :k]
    return np.where(np.isfinite(np.take_along_axis(s, order, 1)), order, -1)


def run(grid, out_dir, command, limits):
    from ragcore.cli.bench.data import clustered

    n, k = grid["n"], 10
    x, q = clustered(n, grid["d"], 0, grid["queries"])
    buckets = np.random.default_rng(1).integers(0, 100, n)
    texts = [f"chunk {i}" for i in range(n)]
    ids = np.arange(n)
    truth = {b: exact(x, buckets, q, b, k) for b in FILTERS}
    classes, missing = adapters("collection")
    rows, stores = [], []
    with tempfile.TemporaryDirectory() as root:
        for cls in classes:
            path = os.path.join(root, cls.name.replace(" ", "_"))
            s = cls(path)
            add_s, _ = timed(lambda: s.add(ids, texts, x, buckets))
            open_s, _ = timed(lambda: (s.reopen(), s.search(q[0], k, None)))
            stores.append(s)
            rows.append({"peer": s.name, "add_s": n / add_s, "open_s": open_s,
                         "disk_mb": disk_bytes(path) / 1e6})
        for below in FILTERS:  # query by query, the stores in turn
            lat = [[] for _ in stores]
            got = [[] for _ in stores]
            for v in q:
                for i, s in enumerate(stores):
                    t0 = time.perf_counter()
                    got[i].append(s.search(v, k, below))
                    lat[i].append(time.perf_counter() - t0)
            tag = "all" if below is None else f"{below}pct"
            for i, row in enumerate(rows):
                row[f"p50_{tag}"] = 1e3 * float(np.percentile(lat[i], 50))
                row[f"p99_{tag}"] = 1e3 * float(np.percentile(lat[i], 99))
                row[f"recall_{tag}"] = recall(got[i], truth[below])
        del stores
    summary = []
    mine = [r for r in rows if r["peer"].startswith("ragcore")]
    peers = [r for r in rows if not r["peer"].startswith("ragcore")]
    for tag, label in (("all", "no filter"), ("1pct", "1% allowed")):
        good = [r for r in peers if r[f"recall_{tag}"] >= 0.9]
        if mine and good:
            me = min(mine, key=lambda r: r[f"p50_{tag}"])
            best = min(good, key=lambda r: r[f"p50_{tag}"])
            summary.append({"row": f"collection query, N = {n:,}, {label}", "measure": "p50 ms",
                            "ragcore": me[f"p50_{tag}"], "best_peer": best["peer"],
                            "best_peer_value": best[f"p50_{tag}"], "higher_is_better": False,
                            "format": ".3f"})
    columns = [{"key": "peer", "label": "store"},
               {"key": "add_s", "label": "adds/s", "format": ",.0f"},
               {"key": "open_s", "label": "open + 1st query s", "format": ".2f"},
               {"key": "p50_all", "label": "p50 ms", "format": ".3f"},
               {"key": "p99_all", "label": "p99 ms", "format": ".3f"},
               {"key": "recall_all", "label": "recall", "format": ".3f"},
               {"key": "p50_10pct", "label": "p50 ms 10%", "format": ".3f"},
               {"key": "recall_10pct", "label": "recall 10%", "format": ".3f"},
               {"key": "p50_1pct", "label": "p50 ms 1%", "format": ".3f"},
               {"key": "recall_1pct", "label": "recall 1%", "format": ".3f"},
               {"key": "disk_mb", "label": "disk MB", "format": ",.1f"}]
    notes = [f"Not installed here: {', '.join(missing)}."] if missing else []
    notes.append("Share of limit: not given; a store's query is bound by its per-call overhead "
                 "(SQL, Python) at these sizes, not by the hardware.")
    return write_section(
        "collection", "Embedded vector stores", command, threads=os.cpu_count() or 1, order=50,
        intro=f"N = {n:,}, d = {grid['d']}, {len(q)} queries. " + " ".join(__doc__.split()),
        tables=[table("", columns, rows, notes)], peers=distributions("collection"),
        summary=summary, limits=limits, out_dir=out_dir)
