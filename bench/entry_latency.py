"""Per-call cost of each index's search entry, two builds side by side in one run.

For every index: one query per call (a contiguous float32 row, or one str for BM25), 1 thread,
microseconds of this thread's CPU time per call (median over interleaved blocks), and the
per-query cost of one batched call of the same queries. FlatIndex at 1,000 vectors is put
next to faiss IndexFlatIP on the same queries; BM25Index (20,000 Zipfian documents) is given
as one-str-per-call QPS over batched QPS (the target: >= 0.9).

Two builds (package directories holding ragcore/ with its _core extension) run in separate
processes, alternating, so that load on the shared machine hits both alike:

    python bench/entry_latency.py --build before=/tmp/before --build after=src [--rounds 3]

Writes bench/results/entry_latency.json (a ragcore-bench/1 section: the medians, and every
round's rows) and prints the medians. Not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

DIM, K = 384, 10
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import builds as builds_module  # noqa: E402
from results_file import table as results_table, write_section  # noqa: E402


def per_call_us(fn, queries, calls: int, block: int = 50) -> float:
    """Median over blocks of CPU microseconds per call of fn(query)."""
    clock = time.thread_time_ns
    for i in range(min(block, calls)):
        fn(queries[i % len(queries)])
    blocks = []
    for start in range(0, calls, block):
        t0 = clock()
        for i in range(start, start + block):
            fn(queries[i % len(queries)])
        blocks.append((clock() - t0) / block / 1e3)
    return statistics.median(blocks)


def batched_us(fn, queries, repeats: int = 5) -> float:
    """Best CPU microseconds per query of one call for all queries."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.thread_time_ns()
        fn(queries)
        best = min(best, (time.thread_time_ns() - t0) / len(queries) / 1e3)
    return best


def dense_rows(calls: int) -> list[dict]:
    import faiss
    import ragcore

    faiss.omp_set_num_threads(1)
    rng = np.random.default_rng(0)
    q = rng.standard_normal((200, DIM)).astype(np.float32)
    rows = []
    x1k = rng.standard_normal((1000, DIM)).astype(np.float32)
    flat = ragcore.FlatIndex(DIM, "ip")
    flat.add(x1k)
    ref = faiss.IndexFlatIP(DIM)
    ref.add(x1k)
    one = [q[i] for i in range(len(q))]
    rows.append({"index": "FlatIndex n=1000",
                 "per_call_us": per_call_us(lambda v: flat.search(v, K, n_threads=1), one, calls),
                 "batched_us": batched_us(lambda b: flat.search(b, K, n_threads=1), q),
                 "faiss_per_call_us": per_call_us(lambda v: ref.search(v[None, :], K), one, calls)})
    x = rng.standard_normal((10_000, DIM)).astype(np.float32)
    m = DIM // 8
    cases = {
        "IVFIndex float32 n=10000 nprobe=8": (ragcore.IVFIndex(DIM, 100), {"nprobe": 8}),
        "IVFIndex sq8 n=10000 nprobe=8": (ragcore.IVFIndex(DIM, 100, dtype="sq8"), {"nprobe": 8}),
        "IVFIndex pq4 n=10000 nprobe=4": (ragcore.IVFIndex(DIM, 100, dtype="pq4", m=m),
                                          {"nprobe": 4}),
        "IVFIndex rabitq n=10000 nprobe=4": (ragcore.IVFIndex(DIM, 100, dtype="rabitq"),
                                             {"nprobe": 4}),
        "PQIndex n=10000": (ragcore.PQIndex(DIM, m), {}),
        "HNSWIndex n=10000 ef=64": (ragcore.HNSWIndex(DIM, ef=64), {}),
    }
    for name, (index, kw) in cases.items():
        if hasattr(index, "train"):
            index.train(x)
        index.add(x, n_threads=2) if "HNSW" in name else index.add(x)
        rows.append({"index": name,
                     "per_call_us": per_call_us(
                         lambda v: index.search(v, K, n_threads=1, **kw), one, calls),
                     "batched_us": batched_us(lambda b: index.search(b, K, n_threads=1, **kw), q)})
    return rows


def fixed_cost_rows(calls: int) -> list[dict]:
    """Each entry's fixed cost: one query per call on an index of 16 rows (2 documents for
    BM25), where the search itself is a small part of the call."""
    import ragcore

    d = 8
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, d)).astype(np.float32)
    one = [rng.standard_normal(d).astype(np.float32) for _ in range(64)]
    cases = {"FlatIndex": (ragcore.FlatIndex(d), {}),
             "IVFIndex float32": (ragcore.IVFIndex(d, 1), {"nprobe": 1}),
             "IVFIndex pq4": (ragcore.IVFIndex(d, 1, dtype="pq4", m=4), {"nprobe": 1}),
             "IVFIndex rabitq": (ragcore.IVFIndex(d, 1, dtype="rabitq"), {"nprobe": 1}),
             "PQIndex": (ragcore.PQIndex(d, 4), {}),
             "HNSWIndex": (ragcore.HNSWIndex(d), {})}
    rows = []
    for name, (index, kw) in cases.items():
        if hasattr(index, "train"):
            index.train(x)
        index.add(x)
        rows.append({"index": f"{name} n=16 d=8 (fixed cost)",
                     "per_call_us": per_call_us(
                         lambda v: index.search(v, 4, n_threads=1, **kw), one, calls * 5),
                     "batched_us": batched_us(
                         lambda b: index.search(b, 4, n_threads=1, **kw), np.stack(one))})
    bm25 = ragcore.BM25Index(stopwords=None)
    bm25.add(["bb cc", "cc dd"])
    texts = ["bb cc"] * 64
    rows.append({"index": "BM25Index 2 docs (fixed cost)",
                 "per_call_us": per_call_us(lambda t: bm25.search(t, 2, n_threads=1), texts,
                                            calls * 5),
                 "batched_us": batched_us(lambda b: bm25.search(b, 2, n_threads=1), texts)})
    return rows


def bm25_rows(n_docs: int, n_queries: int) -> list[dict]:
    import ragcore
    from _zipf import zipf_corpus

    texts, queries = zipf_corpus(n_docs, 200_000, n_queries)
    index = ragcore.BM25Index(k1=1.2, b=0.75, stopwords=None)
    index.index(texts, n_threads=2, show_progress=False)
    rows = []
    for k in (10, 100):
        single, batch = float("inf"), float("inf")
        for _ in range(5):  # best of 5, alternating
            t0 = time.thread_time_ns()
            index.search(queries, k, n_threads=1)
            batch = min(batch, (time.thread_time_ns() - t0) / n_queries / 1e3)
            t0 = time.thread_time_ns()
            for text in queries:
                index.search(text, k, n_threads=1)
            single = min(single, (time.thread_time_ns() - t0) / n_queries / 1e3)
        rows.append({"index": f"BM25Index n={n_docs} k={k}", "per_call_us": single,
                     "batched_us": batch})
    return rows


def worker(args) -> None:
    import ragcore

    rows = (fixed_cost_rows(args.calls) + dense_rows(args.calls)
            + bm25_rows(args.bm25_docs, args.bm25_queries))
    print(json.dumps({"ragcore_file": ragcore.__file__, "rows": rows}))


def run_build(path: Path, args) -> dict:
    env = builds_module.environment(path, HERE)
    cmd = [sys.executable, str(HERE / "entry_latency.py"), "--worker", "--calls", str(args.calls),
           "--bm25-docs", str(args.bm25_docs), "--bm25-queries", str(args.bm25_queries)]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True,
                         cwd=HERE.parent / "bench").stdout
    return json.loads(out.strip().splitlines()[-1])


def summary(rounds: list[dict], builds: list[str]) -> tuple[list[dict], list[dict]]:
    """(columns, rows): the median per build of each index's per-call us, batched us per
    query, and the ratio (batched / per call, or faiss / ours next to faiss)."""
    names = [r["index"] for r in rounds[0][builds[0]]["rows"]]
    columns = [{"key": "index", "label": "index"}]
    for b in builds:
        columns += [{"key": f"{b}_call", "label": f"{b}: per call µs", "format": ".2f"},
                    {"key": f"{b}_batched", "label": f"{b}: batched µs / query", "format": ".2f"},
                    {"key": f"{b}_ratio", "label": f"{b}: ratio"}]
    rows = []
    for i, name in enumerate(names):
        row = {"index": name}
        for b in builds:
            got = [r[b]["rows"][i] for r in rounds]
            if "faiss_per_call_us" in got[0]:
                ratio = statistics.median(g["faiss_per_call_us"] / g["per_call_us"] for g in got)
                text = f"faiss / ours {ratio:.2f}x"
            else:
                ratio = statistics.median(g["batched_us"] / g["per_call_us"] for g in got)
                text = f"batched / per call {ratio:.2f}x"
            row.update({f"{b}_call": statistics.median(g["per_call_us"] for g in got),
                        f"{b}_batched": statistics.median(g["batched_us"] for g in got),
                        f"{b}_ratio": text})
        rows.append(row)
    return columns, rows


def write(rounds: list[dict], builds: dict, command: str, notes=()) -> Path:
    columns, rows = summary(rounds, list(builds))
    return write_section(
        "entry_latency", "Per-call cost of each search entry", command, threads=1, order=60,
        intro=" ".join(__doc__.split("\n\n")[0].split()) + " " + " ".join(__doc__.split("\n\n")[1].split()),
        tables=[results_table("medians over the rounds", columns, rows, list(notes))],
        peers=("faiss-cpu",), extra={"builds": builds, "rounds": rounds})


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", action="append", default=[], metavar="NAME=DIR",
                   type=builds_module.parse,
                   help="a directory holding the ragcore package of one build (repeatable)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--bm25-docs", type=int, default=20_000)
    p.add_argument("--bm25-queries", type=int, default=1000)
    p.add_argument("--note", action="append", default=[],
                   help="a line for the results table's notes (what the builds are, the load)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args)
        return
    given = args.build or [("this", HERE.parent / "src")]
    builds = {name: str(path) for name, path in given}
    names = list(builds)
    rounds = [{} for _ in range(args.rounds)]
    for r, name, path in builds_module.in_turns(given, args.rounds):
        rounds[r][name] = run_build(path, args)
    command = " ".join(["python", "bench/entry_latency.py", *sys.argv[1:]])
    print(write(rounds, builds, command, args.note))
    columns, rows = summary(rounds, names)
    for row in rows:
        print("  ".join(str(row[c["key"]]) for c in columns))

if __name__ == "__main__":
    main()
