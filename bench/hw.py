"""Hardware reference figures for the dense benchmarks: memory read bandwidth and sgemm.

Measures, with OPENBLAS_CORETYPE unset (see _common.py):
  - memory read bandwidth (GB/s, 1 GB = 1e9 bytes) over a 1 GiB float32 array:
    numpy sum on 1 thread, numpy sum on 2 Python threads (numpy releases the
    GIL in reductions) and BLAS sgemv (matrix @ vector, the access pattern of
    a batch-1 flat search) at 1 and 2 BLAS threads. Best of repeats in 4
    rounds per method (the bandwidth of a shared host drifts); the figure per
    thread count is the best method.
  - sgemm GFLOP/s: numpy float32 matmul, 2048 x 384 queries against a
    100,000 x 384 corpus in chunks of 8,192 rows (the shape of a batched
    search), at 1 and 2 BLAS threads.
  - the BLAS libraries loaded and the kernel each picked (threadpoolctl).

Run:  .venv/bin/python bench/hw.py [--quick] [--json bench/results/hw.json]
``measure()`` returns the same dict for bench/dense.py.
"""

from __future__ import annotations

import argparse
import threading

import _common  # first: re-executes without OPENBLAS_CORETYPE
from _common import RESULTS_DIR, blas_threads, fmt_num, text_table, time_best, write_json

import numpy as np

THREAD_COUNTS = (1, 2)
ROW = 384  # sgemv rows have the dimension of the benchmarked vectors


def _sum_threads(parts: list[np.ndarray]) -> None:
    """Sums each part on its own Python thread (numpy drops the GIL while reducing)."""
    workers = [threading.Thread(target=np.sum, args=(p,)) for p in parts]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def blas_read(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """matrix @ vector: BLAS sgemv streams the whole matrix once (a batch-1 flat search)."""
    return matrix @ vector


def read_bandwidth(nbytes: int, repeats: int, rounds: int = 3) -> dict:
    """GB/s per method and the best per thread count.

    The memory bandwidth of a shared host drifts by tens of percent over
    seconds, so the methods are measured in several rounds and the best is kept.
    """
    rows = nbytes // (4 * ROW)
    data = np.ones(rows * ROW, dtype=np.float32)  # ones: every page is touched
    gb = data.nbytes / 1e9
    matrix = data.reshape(-1, ROW)
    vector = np.ones(ROW, dtype=np.float32)
    halves = np.array_split(data, 2)
    methods = {  # name: (BLAS threads, function)
        "numpy_sum_1t": (1, data.sum),
        "sgemv_1t": (1, lambda: blas_read(matrix, vector)),
        "numpy_sum_2t": (1, lambda: _sum_threads(halves)),
        "sgemv_2t": (2, lambda: blas_read(matrix, vector)),
    }
    best = {name: 0.0 for name in methods}
    for _ in range(rounds):
        for name, (threads, fn) in methods.items():
            with blas_threads(threads):
                best[name] = max(best[name], gb / time_best(fn, repeats))
    per_threads = {t: max(v for m, v in best.items() if m.endswith(f"_{t}t"))
                   for t in THREAD_COUNTS}
    return {"array_bytes": data.nbytes, "methods_gbps": best,
            "gbps_by_threads": per_threads, "gbps_best": max(per_threads.values())}


def sgemm_gflops(n_corpus: int, repeats: int, nq: int = 2048, d: int = 384,
                 chunk: int = 8192) -> dict:
    """GFLOP/s of queries @ corpus.T over row chunks, per BLAS thread count."""
    rng = np.random.default_rng(0)
    queries = rng.standard_normal((nq, d), dtype=np.float32)
    corpus = rng.standard_normal((n_corpus, d), dtype=np.float32)
    out = np.empty((nq, chunk), dtype=np.float32)

    def one_pass() -> None:
        for start in range(0, n_corpus, chunk):
            block = corpus[start : start + chunk]
            np.matmul(queries, block.T, out=out[:, : len(block)])

    flops = 2.0 * nq * d * n_corpus
    by_threads = {}
    for t in THREAD_COUNTS:
        with blas_threads(t):
            by_threads[t] = flops / time_best(one_pass, repeats) / 1e9
    return {"shape": f"{nq}x{d} @ {d}x{n_corpus} in chunks of {chunk}",
            "gflops_by_threads": by_threads}


def measure(quick: bool = False, attempts: int = 3) -> dict:
    """Bandwidth, sgemm and BLAS info of this machine (about 15 s; 2 s with quick).

    Measured again (up to `attempts` times) when other processes took a share
    of the CPUs meanwhile: the figures are the 100% of dense.py's efficiencies.
    """
    env = _common.environment()
    for attempt in range(1, attempts + 1):
        _common.wait_until_quiet()
        meter = _common.LoadMeter()
        bw = read_bandwidth(nbytes=(256 << 20) if quick else (1 << 30),
                            repeats=3 if quick else 5, rounds=1 if quick else 4)
        gemm = sgemm_gflops(n_corpus=20_000 if quick else 100_000, repeats=2 if quick else 5)
        load = meter.report()
        if _common.foreign_cores(load) < _common.BUSY_CORES:
            break
        print(f"hw: other load while measuring ({load}); attempt {attempt} of {attempts}")
    return {"environment": env, "quick": quick, "bandwidth": bw,
            "sgemm": gemm, "load": load, "attempts": attempt}


def report(hw: dict) -> str:
    bw, gemm = hw["bandwidth"], hw["sgemm"]
    rows = [[f"read bandwidth, {t} thread(s)", f"{fmt_num(bw['gbps_by_threads'][t])} GB/s"]
            for t in THREAD_COUNTS]
    rows += [[f"  {m}", f"{fmt_num(v)} GB/s"] for m, v in bw["methods_gbps"].items()]
    rows += [[f"sgemm, {t} thread(s)", f"{fmt_num(gemm['gflops_by_threads'][t])} GFLOP/s"]
             for t in THREAD_COUNTS]
    env = hw["environment"]
    lines = [text_table(["measure", "value"], rows), f"sgemm shape: {gemm['shape']}",
             f"CPU: {env['cpu']} ({env['cores']} cores; {' '.join(env['cpu_flags'])})",
             f"other load during the run (cores): {hw['load']}"]
    lines += [f"{r['user_api']}: {r['internal_api']} {r['version'] or ''} "
              f"kernel={r['architecture']} threads={r['num_threads']} ({r['file']})"
              for r in env["blas"]]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller arrays, fewer repeats")
    parser.add_argument("--json", default=str(RESULTS_DIR / "hw.json"))
    args = parser.parse_args()
    hw = measure(quick=args.quick)
    print(report(hw))
    write_json(args.json, hw)


if __name__ == "__main__":
    main()
