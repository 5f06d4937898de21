"""HNSWIndex's int8 dot kernels at each SIMD level this CPU offers (scalar, AVX2, AVX-512
BW or VNNI), on rows gathered from anywhere as a graph walk reads them: nanoseconds per row
(CPU time, one thread, median of the repeats), and the same walk end to end: an int8 HNSW
search at each level against the float32 walk at the same level.

    python bench/int8_kernels.py [--d 384] [--rows 256] [--n 20000] [--ef 64]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import ragcore
from ragcore import _core
from ragcore.cli.bench import data


def kernel_ns(q, rows, level, calls) -> float:
    """The kernel alone: one binding call that runs it `calls` times (the binding's own
    checks, done once, are a negligible share)."""
    _core.int8_dots(q, rows, simd_level=level)
    t0 = time.process_time()
    _core.int8_dots(q, rows, simd_level=level, repeats=calls)
    return (time.process_time() - t0) / calls / len(rows) * 1e9


def graph_at(snap, d, level, int8):
    """The same graph (one build's arrays) searched with the kernels of one level."""
    g = _core.HnswIndex(d, metric=_core.Metric.InnerProduct, storage=_core.Storage.F32, M=16,
                        ef_construction=100, simd_level=level, int8_walk=int8)
    g.restore(snap["vectors"].view(np.float32).reshape(-1, d), None, snap["ids"], snap["levels"],
              snap["links0"], snap["upper"], snap["upper_offsets"], entry=int(snap["entry"]),
              rng_state=int(snap["rng_state"]), borrow_vectors=False)
    return g


def walk_us(graph, q, ef) -> float:
    graph.search(q[:5], 10, ef=ef, n_threads=1)
    t0 = time.process_time()
    for i in range(len(q)):
        graph.search(q[i : i + 1], 10, ef=ef, n_threads=1)
    return (time.process_time() - t0) / len(q) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=384)
    ap.add_argument("--rows", type=int, default=256, help="rows per call")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--n", type=int, default=20000, help="corpus of the end-to-end walk (0: skip)")
    ap.add_argument("--ef", type=int, default=64)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    q = rng.integers(-127, 128, args.d).astype(np.int8)
    rows = rng.integers(-127, 128, (args.rows, args.d)).astype(np.int8)
    levels = [lv for lv in _core.SimdLevel.__members__.values() if _core.simd_level_available(lv)]
    times = {lv: [] for lv in levels}
    for _ in range(args.repeats):  # in turns, so load falls on every level alike
        for lv in levels:
            times[lv].append(kernel_ns(q, rows, lv, args.calls))
    print(f"d={args.d}, {args.rows} rows a call, in cache")
    for lv in levels:
        print(f"  {_core.int8_kernel_name(lv):11s} {np.median(times[lv]):7.2f} ns/row")
    if args.n:
        x, queries = data.clustered(args.n, args.d, 0, 300)
        built = ragcore.HNSWIndex(args.d, "ip", M=16, ef_construction=100)
        built.add(x)
        snap = built._graph.snapshot()
        graphs = {(lv, i8): graph_at(snap, args.d, lv, i8) for lv in levels for i8 in (False, True)}
        us = {key: [] for key in graphs}
        for _ in range(args.repeats):
            for key, g in graphs.items():
                us[key].append(walk_us(g, queries, args.ef))
        print(f"one graph, n={args.n}, ef={args.ef}, CPU us/query (median of {args.repeats}):")
        for lv in levels:
            f32, i8 = np.median(us[(lv, False)]), np.median(us[(lv, True)])
            print(f"  {str(lv):20s} float32 walk {f32:6.1f}  int8 walk ({_core.int8_kernel_name(lv)}) "
                  f"{i8:6.1f}  int8 speed-up {f32 / i8:.2f}x")

if __name__ == "__main__":
    main()
