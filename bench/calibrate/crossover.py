"""Crossover of ragcore's two dense search paths: from which batch size blocked wins.

For the scan path (DensePath.Scan, one pass over the corpus scoring each block
against every query) and the blocked path (DensePath.Blocked, register-blocked
query x corpus tiles), N = 200,000 random unit-norm vectors, d = 384, k = 10, inner product:
median time per batch (the two paths timed interleaved, so that a slow phase
of the shared machine hits both) at batch sizes 1 .. 64, on 1 and 2 threads,
with float32 and float16 storage. Prints, per (threads, storage), the smallest batch from
which blocked is faster at every larger batch measured, next to the constant
the automatic path uses (ragcore._core.blocked_path_min_batch, from
kBlockedFromBatch* in cpp/src/dense/flat.cpp). Also checks that both paths
return the same ids.

Run:  .venv/bin/python bench/calibrate/crossover.py            (the full run)
      .venv/bin/python bench/calibrate/crossover.py --simd-level Avx2 --json /tmp/avx2.json  (AVX2 kernels)
      .venv/bin/python bench/calibrate/crossover.py --quick    (smoke run)
Writes bench/calibrate/results/crossover.json.
"""

from __future__ import annotations

import argparse

import _common  # first: re-executes without OPENBLAS_CORETYPE
from _common import RESULTS_DIR, fmt_num, text_table, time_calls, unit_vectors, write_json

import numpy as np

import ragcore
from ragcore.dense._storage import NATIVE_STORAGE
from ragcore import _core
DIM = 384
PATHS = {"scan": _core.DensePath.Scan, "blocked": _core.DensePath.Blocked}


def search_fn(index: ragcore.FlatIndex, options: dict, queries: np.ndarray, k: int,
              threads: int):
    def run():
        index._search_options = options
        return index.search(queries, k, n_threads=threads)
    return run


def measure_batch(index, queries: np.ndarray, k: int, threads: int, target_s: float,
                  simd_level) -> dict:
    """Median seconds per batch of each path (timed interleaved), and whether their ids agree."""
    fns = {name: search_fn(index, {"path": path, "simd_level": simd_level}, queries, k, threads)
           for name, path in PATHS.items()}
    _common.wait_until_quiet()
    load = _common.LoadMeter()
    timings, hits = time_calls(fns, rounds=5, target_s=target_s, min_repeats=5)
    index._search_options = {}
    row = {name: t.median for name, t in timings.items()}
    row["load"] = load.report()
    row["same_ids"] = bool(np.array_equal(hits["scan"].ids, hits["blocked"].ids))
    return row


def busy_note(load: dict) -> str:
    foreign = _common.foreign_cores(load)
    return f"  (other load {foreign:.2f} cores)" if foreign >= _common.BUSY_CORES else ""


def crossover(rows: list[dict]) -> dict:
    """First batch where blocked wins, and smallest batch from which it wins at every larger one."""
    wins = [r["blocked"] < r["scan"] for r in rows]
    first = next((r["batch"] for r, w in zip(rows, wins) if w), None)
    from_all = None
    for i in range(len(rows) - 1, -1, -1):
        if not wins[i]:
            break
        from_all = rows[i]["batch"]
    return {"first_blocked_win": first, "blocked_wins_from": from_all}


def run_series(index, queries, args, threads: int, dtype: str) -> dict:
    rows = []
    for batch in args.batches:
        row = {"batch": batch, **measure_batch(index, queries[:batch], args.k, threads,
                                               args.target, args.simd_level)}
        rows.append(row)
        print(f"  t={threads} {dtype} batch={batch}: scan {row['scan'] * 1e3:.3f} ms, "
              f"blocked {row['blocked'] * 1e3:.3f} ms, blocked/scan "
              f"{row['blocked'] / row['scan']:.2f}{'' if row['same_ids'] else '  IDS DIFFER'}"
              f"{busy_note(row['load'])}",
              flush=True)
    return {"threads": threads, "dtype": dtype, "rows": rows, **crossover(rows)}


def series_table(series: dict) -> str:
    rows = [[r["batch"], fmt_num(r["scan"] * 1e3), fmt_num(r["blocked"] * 1e3),
             f"{r['blocked'] / r['scan']:.2f}", "yes" if r["same_ids"] else "NO",
             busy_note(r["load"]).strip()]
            for r in series["rows"]]
    return text_table(["batch", "scan ms", "blocked ms", "blocked/scan", "same ids", ""], rows)


def summary_table(all_series: list[dict], constants: dict) -> str:
    rows = [[s["threads"], s["dtype"], s["first_blocked_win"] or "none",
             s["blocked_wins_from"] or "none", constants[s["dtype"]]] for s in all_series]
    return text_table(["threads", "storage", "first batch blocked wins",
                       "blocked wins from", "auto path constant"], rows)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--batches", type=int, nargs="+",
                        default=[1, 2, 4, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float16"])
    parser.add_argument("--target", type=float, default=0.4,
                        help="seconds of timed repeats per path and batch (at least 5 repeats)")
    parser.add_argument("--simd-level", choices=list(_core.SimdLevel.__members__),
                        help="ragcore kernel table (default: the best here)")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--quick", action="store_true", help="smoke run: N = 20,000, 5 batches")
    parser.add_argument("--json", default=str(RESULTS_DIR / "crossover.json"))
    args = parser.parse_args()
    if args.quick:
        args.n, args.batches, args.target = 20_000, [1, 4, 8, 16, 32], 0.1
    if args.simd_level is not None:
        args.simd_level = _core.SimdLevel.__members__[args.simd_level]
    return args


def main() -> None:
    args = parse_args()
    load = _common.LoadMeter()
    env = _common.environment()
    corpus = unit_vectors(args.n, DIM, seed=args.seed)
    queries = unit_vectors(max(args.batches), DIM, seed=args.seed + 1)
    all_series = []
    for dtype in args.dtypes:
        index = ragcore.FlatIndex(DIM, metric="ip", dtype=dtype)
        index.add(corpus)
        for threads in args.threads:
            all_series.append(run_series(index, queries, args, threads, dtype))
        del index
    level = _core.best_simd_level() if args.simd_level is None else args.simd_level
    constants = {dtype: _core.blocked_path_min_batch(level, NATIVE_STORAGE[dtype])
                 for dtype in args.dtypes}
    print(f"\n{_common.ragcore_build_line(env['ragcore'])}")
    print(f"N={args.n:,} d={DIM} k={args.k}, SIMD level {_core.simd_level_name(level)}; "
          "median milliseconds per batch")
    for s in all_series:
        print(f"\nthreads={s['threads']} storage={s['dtype']}\n{series_table(s)}")
    print("\n" + summary_table(all_series, constants))
    warnings = [w for w in [_common.ragcore_reinstalled(env["ragcore"])] if w]
    for w in warnings:
        print(f"WARNING: {w}")
    write_json(args.json, {"environment": env, "warnings": warnings,
                           "n": args.n, "dim": DIM, "k": args.k,
                           "simd_level": _core.simd_level_name(level),
                           "auto_path_constant": constants, "series": all_series,
                           "load": load.report()})


if __name__ == "__main__":
    main()
