"""HNSW graphs side by side, interleaved: ragcore HNSWIndex (float32 and int8), hnswlib,
faiss IndexHNSWFlat and usearch, all built with the same M and ef_construction on the same
data, then measured in turns (every repeat runs each system once at each ef), so a shared
machine's load falls on all of them alike.

Batch 1: CPU microseconds per query (process time, one thread), median of the repeats.
Batch 256: wall-clock QPS with all threads, median of the repeats. Recall@10 against
FlatIndex. Prints the sweep and, at recall >= 0.95 and 0.99, each system's best QPS and its
ratio to ragcore's.

    python bench/hnsw_interleaved.py [--data clustered|stdlib] [--n 50000] [--d 384]

Large corpora (a build of 100k takes minutes per system): build each system once with
``--build-only --store DIR`` (one system per run if need be; build time, memory and the
vectors themselves are kept in DIR), then measure from the saved indexes with ``--store DIR`` (several runs with parts
of the ef sweep keep each one short).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from ragcore import FlatIndex, HNSWIndex
from ragcore.cli.bench import data
from ragcore.cli.bench.peers import RagcoreHNSW, make_systems
from ragcore.cli.bench.stdlib_vectors import stdlib_embeddings

SYSTEMS = ("ragcore-hnsw", "ragcore-hnsw-int8", "hnswlib", "faiss-hnsw", "usearch")
SMALL_PAGES = "ragcore-hnsw-4k"  # also accepted by --systems (see RagcoreSmallPages)


class RagcoreSmallPages(RagcoreHNSW):
    """ragcore HNSW's saved float32 index, loaded without the huge-page advice (as on a
    system whose transparent huge pages are off): what the advice buys, in one run."""
    family = "ragcore HNSW 4k pages"
    stored_as = "ragcore HNSW"

    def build(self, x, sample):
        os.environ["RAGCORE_NO_HUGE_PAGES"] = "1"
        try:
            super().build(x, sample)
        finally:
            del os.environ["RAGCORE_NO_HUGE_PAGES"]


def recall_at(ids, truth):
    return float(np.mean([len(set(a) & set(b)) / truth.shape[1] for a, b in zip(ids, truth)]))


# ---- saving and loading each peer's index (the peers' own file formats) -----------

def _save(system, path: Path) -> None:
    if system.family.startswith("ragcore"):
        system.index.save(path)
    elif system.family == "hnswlib":
        system.index.save_index(str(path))
    elif system.family == "faiss IndexHNSWFlat":
        import faiss

        faiss.write_index(system.index, str(path))
    else:
        system.index.save(str(path))


def _load(system, path: Path, n: int, d: int) -> None:
    if system.family.startswith("ragcore"):
        if isinstance(system, RagcoreSmallPages):
            os.environ["RAGCORE_NO_HUGE_PAGES"] = "1"
        try:
            system.index = HNSWIndex.load(path)
        finally:
            os.environ.pop("RAGCORE_NO_HUGE_PAGES", None)
    elif system.family == "hnswlib":
        import hnswlib

        system.index = hnswlib.Index(space="ip", dim=d)
        system.index.load_index(str(path), max_elements=n)
    elif system.family == "faiss IndexHNSWFlat":
        import faiss

        faiss.omp_set_num_threads(system.threads)
        system.index = faiss.read_index(str(path))
    else:
        from usearch.index import Index

        system.index = Index.restore(str(path))


def _stored(store: Path, system) -> tuple[Path, Path]:
    name = getattr(system, "stored_as", system.family).replace(" ", "_")
    return store / f"{name}.index", store / f"{name}.json"


def build_all(systems, x, store: Path | None) -> None:
    for s in systems:
        t0, c0 = time.perf_counter(), time.process_time()
        s.build(x, None)
        s.build_s = time.perf_counter() - t0
        s.build_cpu_s = time.process_time() - c0  # all of the process's threads
        s.memory = s.memory_bytes()
        print(f"built {s.family}: {s.build_s:.1f} s wall, {s.build_cpu_s:.1f} s CPU, "
              f"{s.memory / 2**20:.0f} MiB, load {os.getloadavg()[0]:.1f}", flush=True)
        if store is not None:
            index_path, meta_path = _stored(store, s)
            _save(s, index_path)
            meta_path.write_text(json.dumps({"build_s": s.build_s, "build_cpu_s": s.build_cpu_s,
                                             "memory": s.memory,
                                             "n": len(x), "load": os.getloadavg()[0]}))
            s.index = None


def huge_pages_mib() -> float:
    """This process's anonymous memory on transparent huge pages (Linux; else nan): ragcore
    asks for them for a graph's arrays, the peers do not (BENCHMARKS.md says what it buys)."""
    try:
        for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
            if line.startswith("AnonHugePages:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def load_all(systems, store: Path, n: int, d: int) -> None:
    for s in systems:
        index_path, meta_path = _stored(store, s)
        meta = json.loads(meta_path.read_text())
        if meta["n"] != n:
            raise SystemExit(f"{index_path}: built on {meta['n']} vectors, not {n}")
        _load(s, index_path, n, d)
        s.build_s, s.memory = meta["build_s"], meta["memory"]


DATA_FILE = "data.npz"


def load_data(args) -> tuple[np.ndarray, np.ndarray]:
    """(corpus, queries): from --store when it holds them, so that every run on a store
    uses the vectors its indexes were built on (the stdlib set depends on the installed
    packages, which may change between runs); else generated or looked up."""
    if args.store is not None and (args.store / DATA_FILE).exists():
        saved = np.load(args.store / DATA_FILE)
        x, q = saved["x"], saved["q"]
        if len(x) != args.n or len(q) < args.queries:
            raise SystemExit(f"{args.store / DATA_FILE}: holds {len(x)} vectors and {len(q)} "
                             f"queries, asked for {args.n} and {args.queries}")
        return x, np.ascontiguousarray(q[: args.queries])
    if args.data == "stdlib":
        return stdlib_embeddings(args.n, args.queries, 0)
    return data.clustered(args.n, args.d, 0, args.queries)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="clustered", choices=("clustered", "stdlib"))
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--d", type=int, default=384)
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--ef", default="16,24,32,48,64,96,128")
    ap.add_argument("--M", type=int, default=16)
    ap.add_argument("--ef-construction", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--b1-queries", type=int, default=200)
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--store", type=Path, default=None,
                    help="folder of saved indexes: written by --build-only, read otherwise")
    ap.add_argument("--build-only", action="store_true",
                    help="build, time and save each system to --store, then stop")
    args = ap.parse_args()
    threads = os.cpu_count() or 1
    efs = [int(v) for v in args.ef.split(",")]
    x, q = load_data(args)
    names = args.systems.split(",")
    systems, missing = make_systems([v for v in names if v != SMALL_PAGES], [], [], efs, threads,
                                    0, args.M, args.ef_construction)
    if SMALL_PAGES in names:
        systems.append(RagcoreSmallPages(efs, threads, 0, args.M, args.ef_construction))
    print(f"data {args.data} n={len(x)} d={x.shape[1]} queries={len(q)} threads={threads} "
          f"M={args.M} efC={args.ef_construction} load={os.getloadavg()[0]:.1f} missing={missing}")
    if args.build_only:
        if SMALL_PAGES in names:
            raise SystemExit(f"{SMALL_PAGES} loads ragcore-hnsw's saved index: build that one")
        if args.store is None:
            raise SystemExit("--build-only needs --store")
        args.store.mkdir(parents=True, exist_ok=True)
        if not (args.store / DATA_FILE).exists():
            np.savez(args.store / DATA_FILE, x=x, q=q)
        build_all(systems, x, args.store)
        return
    exact = FlatIndex(x.shape[1])
    exact.add(x)
    truth = exact.search(q, 10).ids
    del exact
    if args.store is not None:
        load_all(systems, args.store, len(x), x.shape[1])
    else:
        build_all(systems, x, None)
    print(f"anonymous memory on huge pages: {huge_pages_mib():.0f} MiB", flush=True)
    del x
    batch = np.ascontiguousarray(np.resize(q, (256, q.shape[1])))
    rows = []
    for ef in efs:
        b1 = {s.family: [] for s in systems}
        b256 = {s.family: [] for s in systems}
        for s in systems:
            s.set(ef)
            s.search(q[:5], 10)  # warm
        for _ in range(args.repeats):
            for s in systems:
                s.set(ef)
                t0 = time.process_time()
                for i in range(args.b1_queries):
                    s.search(q[i : i + 1], 10)
                b1[s.family].append((time.process_time() - t0) / args.b1_queries * 1e6)
                t0 = time.perf_counter()
                s.search(batch, 10)
                b256[s.family].append(256 / (time.perf_counter() - t0))
        for s in systems:
            s.set(ef)
            r = recall_at(s.search(q, 10), truth)
            us = float(np.median(b1[s.family]))
            rows.append((s.family, ef, r, us, float(np.median(b256[s.family]))))
            print(f"ef={ef:4d} {s.family:22s} recall={r:.3f} b1 {us:7.1f} us/query "
                  f"(QPS {1e6 / us:7.0f})  b256 QPS {rows[-1][4]:7.0f}", flush=True)
    print(f"load after: {os.getloadavg()[0]:.1f}")
    for target in (0.95, 0.99):
        best = {}
        for fam in {r[0] for r in rows}:
            ok = [r for r in rows if r[0] == fam and r[2] >= target]
            if ok:
                best[fam] = (max(ok, key=lambda r: 1 / r[3]), max(ok, key=lambda r: r[4]))
        ours = best.get("ragcore HNSW")
        print(f"recall >= {target}:")
        for fam, (p1, p256) in sorted(best.items()):
            ratio = (f"ragcore/this b1 {(1 / ours[0][3]) / (1 / p1[3]):.2f}x, "
                     f"b256 {ours[1][4] / p256[4]:.2f}x") if ours else ""
            print(f"  {fam:22s} b1 QPS {1e6 / p1[3]:7.0f} (ef={p1[1]})  b256 QPS {p256[4]:7.0f} "
                  f"(ef={p256[1]})  {ratio}")
    for s in systems:
        print(f"build {s.family}: {s.build_s:.1f} s, memory {s.memory / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
