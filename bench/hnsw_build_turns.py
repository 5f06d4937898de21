"""HNSWIndex and hnswlib built in turns in one process on the same vectors (M 16,
ef_construction 200, 2 threads), with wall and CPU time per build: on a shared machine wall
time follows the load, so the builds alternate (order swapped every round) and CPU time is
reported beside it.

    python bench/hnsw_build_turns.py STORE/data.npz --n 150000 --rounds 2
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from ragcore import HNSWIndex


def build(name: str, x: np.ndarray, threads: int) -> None:
    if name == "ragcore":
        HNSWIndex(x.shape[1], "ip", M=16, ef_construction=200, seed=0).add(x, n_threads=threads)
        return
    import hnswlib

    index = hnswlib.Index(space="ip", dim=x.shape[1])
    index.init_index(max_elements=len(x), ef_construction=200, M=16, random_seed=0)
    index.add_items(x, np.arange(len(x)), num_threads=threads)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data", help="an .npz with the corpus as x (bench/hnsw_interleaved.py's store)")
    ap.add_argument("--n", type=int, default=150_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    x = np.ascontiguousarray(np.load(args.data)["x"][: args.n])
    print(f"n={len(x)} d={x.shape[1]} threads={args.threads} load={os.getloadavg()[0]:.1f}", flush=True)
    res: dict[str, list[tuple[float, float]]] = {"ragcore": [], "hnswlib": []}
    for rnd in range(args.rounds):
        for name in ("ragcore", "hnswlib") if rnd % 2 == 0 else ("hnswlib", "ragcore"):
            w0, c0 = time.perf_counter(), time.process_time()
            build(name, x, args.threads)
            res[name].append((time.perf_counter() - w0, time.process_time() - c0))
            print(f"round {rnd} {name:8s} wall {res[name][-1][0]:6.1f} s  cpu {res[name][-1][1]:6.1f} s  "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
    med = {k: (np.median([w for w, _ in v]), np.median([c for _, c in v])) for k, v in res.items()}
    for name, (w, c) in med.items():
        print(f"{name}: median wall {w:.1f} s, cpu {c:.1f} s")
    print(f"ragcore/hnswlib wall {med['ragcore'][0] / med['hnswlib'][0]:.2f}, "
          f"cpu {med['ragcore'][1] / med['hnswlib'][1]:.2f}")


if __name__ == "__main__":
    main()
