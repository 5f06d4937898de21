"""BM25 batched query speed of several builds of ragcore, in turns, on one saved index.

Each build runs in a fresh process: it loads the index and the queries that bench/bm25_peers.py
keeps in --cache DIR (ragcore.rbm25, zipf1000000_queries.json), searches the whole batch once
to warm the term caches, then --repeats times at each k (1 thread, algorithm "auto"); its
figure is the best QPS by the process's CPU time. The builds take turns, the order rotated
every round, so a busier minute hits each alike. Every build must return the same ids and
scores as the first (bit for bit); the run stops otherwise.

    python bench/bm25_build_turns.py --cache DIR --build before=/pkg/a --build after=/pkg/b [--rounds 3]

A build is a folder holding an importable ``ragcore`` package (a site-packages, or a source
tree's ``src/`` with its compiled ``_core`` beside the Python files); it goes first on
PYTHONPATH.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

WORKER = r"""
import hashlib, json, sys, time
import numpy as np
import ragcore
index = ragcore.BM25Index.load(sys.argv[1])
queries = json.load(open(sys.argv[2]))
out = {}
for k in json.loads(sys.argv[4]):
    hits = index.search(queries, k, n_threads=1)
    digest = hashlib.sha256(np.ascontiguousarray(hits.ids).tobytes()
                            + np.ascontiguousarray(hits.scores).tobytes()).hexdigest()
    best = float("inf")
    for _ in range(int(sys.argv[3])):
        t0 = time.process_time()
        index.search(queries, k, n_threads=1)
        best = min(best, time.process_time() - t0)
    out[k] = {"qps": len(queries) / best, "hits_sha256": digest}
print(json.dumps(out))
"""


def run_build(pkg: str, cache: Path, repeats: int, ks: list[int]) -> dict:
    env = dict(os.environ, PYTHONPATH=pkg)
    proc = subprocess.run([sys.executable, "-c", WORKER, str(cache / "ragcore.rbm25"),
                           str(cache / "zipf1000000_queries.json"), str(repeats), json.dumps(ks)],
                          env=env, capture_output=True, text=True, check=True)
    return {int(k): v for k, v in json.loads(proc.stdout.strip().splitlines()[-1]).items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", type=Path, required=True, help="bench/bm25_peers.py's --cache DIR")
    ap.add_argument("--build", action="append", required=True, metavar="NAME=PKG_DIR")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--ks", type=int, nargs="+", default=[10, 100])
    args = ap.parse_args()
    builds = dict(b.split("=", 1) for b in args.build)
    names = list(builds)
    reference: dict[int, str] = {}
    rows = []
    for rnd in range(args.rounds):
        for name in names[rnd % len(names):] + names[: rnd % len(names)]:
            result = run_build(builds[name], args.cache, args.repeats, args.ks)
            for k, r in result.items():
                if reference.setdefault(k, r["hits_sha256"]) != r["hits_sha256"]:
                    sys.exit(f"{name}: hits at k = {k} differ from the first build's")
            rows.append((rnd + 1, name, result))
            print(f"round {rnd + 1} {name}: "
                  + ", ".join(f"k = {k} {r['qps']:,.0f} QPS" for k, r in result.items()), flush=True)
    print("\n| round | build | " + " | ".join(f"k = {k} QPS" for k in args.ks) + " |")
    print("| ---: | --- | " + " | ".join("---:" for _ in args.ks) + " |")
    for rnd, name, result in rows:
        print(f"| {rnd} | {name} | " + " | ".join(f"{result[k]['qps']:,.0f}" for k in args.ks) + " |")
    print("\nhits identical across builds (sha256 of ids and scores at each k)")


if __name__ == "__main__":
    main()
