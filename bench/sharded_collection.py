"""ShardedCollection on one machine: what 2 and 4 shards cost against one Collection.

On one small machine this measures the overhead of sharding (Ray calls, moving candidates
and their rows through Ray, the global merge, BM25's statistics round), not scale-out: the
shards share the same cores. Corpus: the standard library's docstrings (stdlib_docs, no
download), chunked by the default chunker; queries: its held questions. Dense vectors come
from a word-hash encoder (deterministic, fast) and query vectors are computed once up
front (query_vector=), so encoding is left out for every system: what is timed is the
search. Systems: one Collection in this process; ShardedCollection with 2 and 4 shards,
replicas=1, with its statistics cache (a query seen since the last write skips the BM25
statistics round: the timed calls repeat their queries, so they all hit it) and without it
(statistics_cache=0: every sparse or hybrid search makes two rounds), each replica an
actor on a local Ray started here with num_cpus = cores (actors reserve num_cpus=0). Before timing, every sharded answer is checked against the single
Collection's (same documents, chunk offsets and scores). Cells are timed interleaved per
(mode, batch), so machine drifts hit every system; per-call latency p50 / p95, and QPS =
queries / total time. The statistics round: the mean of each search's `first_phase` time
(the round that gathers the BM25 statistics, with the dense candidates in hybrid mode) and
of its `sparse` round, over the sparse-mode calls.

Run:  .venv/bin/python bench/sharded_collection.py                       (the full run)
      .venv/bin/python bench/sharded_collection.py --docs 300 --seconds 0.3   (smoke run)
Writes bench/results/sharded_collection.json (rendered in BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "distributed"))
import _sharded_data  # noqa: E402  (the tests' word-hash encoder: one copy)
from _sharded_data import WordHashEncoder  # noqa: E402
from results_file import table, write_section  # noqa: E402

import numpy as np  # noqa: E402

COLUMNS = [{"key": "mode", "label": "mode"}, {"key": "batch", "label": "batch"},
           {"key": "system", "label": "system"},
           {"key": "p50_ms", "label": "p50 ms", "format": ".2f"},
           {"key": "p95_ms", "label": "p95 ms", "format": ".2f"},
           {"key": "qps", "label": "QPS", "format": ",.0f"},
           {"key": "p50_vs_collection", "label": "p50 / Collection", "format": ".1f"},
           {"key": "qps_vs_collection", "label": "QPS / Collection", "format": ".2f"},
           {"key": "first_phase_ms", "label": "first round ms", "format": ".2f"},
           {"key": "sparse_round_ms", "label": "BM25 round ms", "format": ".2f"}]


# What the figures mean beyond one machine (rendered under the table).
PAPER_MODEL = [
    ("Paper model, S shards on S nodes of C cores, R replicas, N chunks: latency ≈ r·(round "
     "trip + slowest shard's work) + S·d, where r = 1 round for dense or cached BM25 "
     "statistics and 2 for a new BM25 query, a shard's work ≈ w·N/S (the scan) + f (reading "
     "k0 candidate rows, statistics), and d ≈ 0.7 ms is the driver's cost per shard call "
     "here (both ends, shared cores)."),
    ("Cluster throughput ≈ R·S·C / (S·f + w·N): what grows with shards is the fixed per-"
     "shard cost f, the driver's S·d per query and the S·k0 candidates moved and merged per "
     "modality; what does not is the scan work w·N in total (it divides), the statistics "
     "(one small dictionary per shard) and the fusion. Throughput rises almost linearly "
     "while w·N ≫ S·f, then levels off near R·C/f; one driver is bounded by 1/(S·d)."),
    ("Sharding lowers latency only when one Collection's own search time T₁ satisfies T₁·(1 "
     "− 1/S) > r·round trip + S·d: here T₁ is 0.09–0.31 ms, so it cannot pay on one machine;"
     " with a ~1 ms round trip and 4 shards, T₁ must be about 3 ms or more."),
]


def write(rows: list, command: str, setup: str, notes=()) -> Path:
    """bench/results/sharded_collection.json, a ragcore-bench/1 section."""
    return write_section(
        "sharded_collection", "Sharded collections on Ray: what 2 and 4 shards cost on one machine",
        command, threads=__import__("os").cpu_count() or 1, order=80,
        intro=" ".join(__doc__.split("\n\nRun:")[0].split()) + " " + setup,
        tables=[table("", COLUMNS, rows, list(notes) + PAPER_MODEL)], peers=("ray",))


def timed(fn, seconds: float) -> tuple[list, object]:
    result = fn()  # warm-up
    times, start = [], time.perf_counter()
    while len(times) < 5 or time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return times, result


def same(got, want, tol: float = 1e-5) -> bool:
    """The same matches: scores within tol in order, the same chunks above the last score
    (chunks tied at the last place may differ: shards order ties by their own chunk ids)."""
    key = lambda m: (m.id, m.position, m.start, m.end)
    for g, w in zip(got, want):
        g_s, w_s = [m.score for m in g], [m.score for m in w]
        if len(g) != len(w) or not np.allclose(g_s, w_s, rtol=tol, atol=tol):
            return False
        last = w_s[-1] if w_s else 0.0
        if sorted(key(m) for m in g if m.score > last + tol) != \
                sorted(key(m) for m in w if m.score > last + tol):
            return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=3000, help="stdlib_docs documents")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--shards", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--modes", nargs="+", default=["dense", "sparse", "hybrid"])
    parser.add_argument("--seconds", type=float, default=2.0, help="timed seconds per cell")
    args = parser.parse_args()

    import ray

    ray.cloudpickle.register_pickle_by_value(_sharded_data)  # the actors cannot import tests/

    from ragcore import Collection
    from ragcore.cli.datasets import stdlib_docs
    from ragcore.distributed import ShardedCollection
    from ragcore.distributed.statistics_cache import MAX_QUERIES

    data = stdlib_docs(max_docs=args.docs)
    texts, ids = [d.text for d in data.documents], [d.doc_id for d in data.documents]
    questions = list(data.questions)
    reps = -(-max(args.batches) // len(questions))
    queries = (questions * reps)[: max(args.batches)]
    encoder = WordHashEncoder(dim=64)
    vectors = encoder.encode(queries)
    cores = __import__("os").cpu_count() or 1
    ray.init(num_cpus=cores, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    tmp = tempfile.TemporaryDirectory()
    single = Collection.create(Path(tmp.name) / "one", encoder=encoder)
    single.add(texts, ids=ids)
    systems = {"Collection": single}
    for n in args.shards:
        for cache in (MAX_QUERIES, 0):
            sc = ShardedCollection.create(Path(tmp.name) / f"s{n}-{cache}", n_shards=n,
                                          encoder=encoder, statistics_cache=cache)
            sc.add(texts, ids=ids)
            systems[f"{n} shards" + ("" if cache else ", no cache")] = sc
    n_chunks = len(single.indexes.bm25)
    print(f"{len(texts)} documents, {n_chunks} chunks; systems: {', '.join(systems)}")

    rows = []
    for mode in args.modes:
        for batch in args.batches:
            q, v = queries[:batch], vectors[:batch]
            fns = {name: (lambda c=c: c.search(q, k=args.k, mode=mode, query_vector=v))
                   for name, c in systems.items()}
            want = fns["Collection"]()
            for name, fn in fns.items():
                if not same(fn(), want):
                    raise SystemExit(f"{name} does not answer as one Collection ({mode})")
            times = {name: [] for name in fns}
            stages = {name: [] for name in fns}
            for _ in range(3):  # rounds, interleaved
                for name, fn in fns.items():
                    t, result = timed(fn, args.seconds / 3)
                    times[name] += t
                    stages[name].append(result[0].timings)
            base_qps = batch * len(times["Collection"]) / sum(times["Collection"])
            base_p50 = float(np.median(times["Collection"])) * 1e3
            for name in fns:
                ms = np.array(times[name]) * 1e3
                qps = batch * len(ms) / (ms.sum() / 1e3)
                row = {"system": name, "mode": mode, "batch": batch, "calls": len(ms),
                       "p50_ms": float(np.median(ms)), "p95_ms": float(np.percentile(ms, 95)),
                       "qps": qps, "p50_vs_collection": float(np.median(ms)) / base_p50,
                       "qps_vs_collection": qps / base_qps}
                if name != "Collection":
                    row["first_phase_ms"] = 1e3 * float(np.mean([s["first_phase"]
                                                                 for s in stages[name]]))
                    row["sparse_round_ms"] = 1e3 * float(np.mean([s["sparse"]
                                                                  for s in stages[name]]))
                rows.append(row)
                print(f"{mode:6s} batch {batch:3d} {name:20s} p50 {row['p50_ms']:8.2f} ms "
                      f"({row['p50_vs_collection']:5.2f}x)  QPS {qps:8.1f} "
                      f"({row['qps_vs_collection']:4.2f}x)"
                      + (f"  first round {row['first_phase_ms']:.2f} ms, BM25 round "
                         f"{row['sparse_round_ms']:.2f} ms" if name != "Collection" else ""))
    for c in systems.values():
        c.close()
    ray.shutdown()
    tmp.cleanup()
    path = write(rows, " ".join(["python", "bench/sharded_collection.py", *sys.argv[1:]]),
                 f"{len(texts):,} documents, {n_chunks:,} chunks, k = {args.k}.")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
