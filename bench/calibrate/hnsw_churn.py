"""HNSWIndex.remove: recall after deleting and re-adding half of a corpus, against a fresh
build of the same vectors, at several ef (the issue's test: "delete and re-add 50%, recall
stays within 0.01 of a fresh build").

For each seed: a fresh build; the same build after removing a random half (against a fresh
build of the kept half); then with the half added back (churned). Also the level-0 out-degree
and the share of nodes with at most 2 in-edges, which say how the repair changed the graph.
One thread, so every graph depends only on its seed. Recall@10 against exact search.

    python bench/calibrate/hnsw_churn.py [--n 6000] [--d 32] [--M 16] [--ef-construction 100]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from ragcore import FlatIndex, HNSWIndex

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "dense"))
from _hnsw_data import clustered, recall  # noqa: E402  (the test's data, so seed 0 is the test)


def degrees(index: HNSWIndex) -> tuple[float, float]:
    """(mean level-0 out-degree, share of live nodes with <= 2 level-0 in-edges)."""
    snap = index._graph.snapshot()
    live = snap["levels"] >= 0
    lists = snap["links0"].reshape(len(live), -1)
    counts = lists[:, 0]
    inbound = np.zeros(len(live), np.int64)
    for s in np.flatnonzero(live):
        np.add.at(inbound, lists[s, 1 : 1 + counts[s]], 1)
    return float(counts[live].mean()), float(np.mean(inbound[live] <= 2))


def cpu_us(index, q, ef) -> float:
    """CPU microseconds per query, one thread, one query per call."""
    t0 = time.process_time()
    for row in q:
        index.search(row, 10, ef=ef, n_threads=1)
    return (time.process_time() - t0) / len(q) * 1e6


def truth_of(x, ids, q):
    flat = FlatIndex(x.shape[1])
    flat.add(x, ids=ids)
    return flat.search(q, 10).ids


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=6000)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--M", type=int, default=16)
    ap.add_argument("--ef-construction", type=int, default=100)
    ap.add_argument("--ef", default="16,32,64,128")
    ap.add_argument("--seeds", default="0,1,2")
    args = ap.parse_args()
    efs = [int(v) for v in args.ef.split(",")]
    params = dict(M=args.M, ef_construction=args.ef_construction, seed=0)
    sums = {}
    for seed in (int(v) for v in args.seeds.split(",")):
        x = clustered(args.n, args.d, seed=2 * seed + 1)
        q = clustered(args.queries, args.d, seed=2 * seed + 2)
        ids = np.arange(args.n)
        half = np.random.default_rng(seed + 3).permutation(args.n)[: args.n // 2]
        kept = np.setdiff1d(ids, half)
        truth, truth_kept = truth_of(x, ids, q), truth_of(x[kept], kept, q)
        fresh = HNSWIndex(args.d, "ip", **params)
        fresh.add(x, n_threads=1)
        fresh_kept = HNSWIndex(args.d, "ip", **params)
        fresh_kept.add(x[kept], ids=kept, n_threads=1)
        churned = HNSWIndex(args.d, "ip", **params)
        churned.add(x, n_threads=1)
        t0 = time.process_time()
        churned.remove(half, n_threads=1)
        remove_s = time.process_time() - t0
        removed = {ef: recall(churned.search(q, 10, ef=ef).ids, truth_kept) for ef in efs}
        deg_removed = degrees(churned)
        churned.add(x[half], ids=half, n_threads=1)
        print(f"seed {seed}: remove {remove_s:.2f} s CPU; level-0 out-degree / share with <= 2 "
              f"in-edges: fresh {degrees(fresh)}, kept-half fresh {degrees(fresh_kept)}, "
              f"after remove {deg_removed}, churned {degrees(churned)}")
        for ef in efs:
            row = (recall(fresh.search(q, 10, ef=ef).ids, truth),
                   recall(churned.search(q, 10, ef=ef).ids, truth),
                   recall(fresh_kept.search(q, 10, ef=ef).ids, truth_kept), removed[ef])
            row += (cpu_us(fresh, q, ef), cpu_us(churned, q, ef))
            sums.setdefault(ef, []).append(row)
            print(f"  ef={ef:4d} fresh {row[0]:.4f} churned {row[1]:.4f} (gap {row[0] - row[1]:+.4f})"
                  f"  kept half: fresh {row[2]:.4f} after remove {row[3]:.4f}  CPU us/query "
                  f"fresh {row[4]:.0f} churned {row[5]:.0f}", flush=True)
    print("mean over seeds:")
    for ef, rows in sums.items():
        m = np.mean(rows, axis=0)
        print(f"  ef={ef:4d} fresh {m[0]:.4f} churned {m[1]:.4f} gap {m[0] - m[1]:+.4f}  "
              f"kept half fresh {m[2]:.4f} after remove {m[3]:.4f}  CPU us/query fresh {m[4]:.0f} "
              f"churned {m[5]:.0f}")


if __name__ == "__main__":
    main()
