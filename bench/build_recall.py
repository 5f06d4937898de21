"""Recall@10 of IVFIndex pq4 and rabitq at fixed nprobe, for comparing two builds of
ragcore (e.g. before and after a change to training or assignment) on the same data:

    python bench/build_recall.py [--data stdlib|clustered] [--n 100000] [--nlist 256]
                                 [--nprobe 16,32,64] [--cache clustered.npy] [--max-iter 25]

Trains on the same max(20,000, 40 x nlist) rows bench/pq4.py draws, adds all, and prints
per storage the final k-means objective, the largest list and recall@10 against
FlatIndex (pq4: rescore 8; rabitq, 1 bit: rescore "bound"). Not timed.
"""

from __future__ import annotations

import argparse

import numpy as np

from ragcore import FlatIndex, IVFIndex


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="stdlib")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--nlist", type=int, default=256)
    parser.add_argument("--nprobe", default="16,32,64")
    parser.add_argument("--cache")
    parser.add_argument("--max-iter", type=int, help="coarse k-means iterations (default: IVFIndex's)")
    args = parser.parse_args()
    if args.data == "stdlib":
        from ragcore.cli.bench.stdlib_vectors import stdlib_embeddings

        x, q = stdlib_embeddings(args.n, 300, 0)
    else:
        rows = np.load(args.cache, mmap_mode="r")
        x, q = np.array(rows[: args.n]), np.array(rows[-300:])
    truth = FlatIndex(x.shape[1])
    truth.add(x)
    truth = truth.search(q, 10).ids
    sample = x[np.random.default_rng(0).permutation(len(x))[:max(20_000, 40 * args.nlist)]]
    for dtype, kw, search_kw in (("pq4", {"m": 96}, {"rescore": 8}), ("rabitq", {"bits": 1}, {})):
        if args.max_iter is not None:
            kw = {**kw, "max_iter": args.max_iter}
        ivf = IVFIndex(x.shape[1], args.nlist, "ip", dtype, **kw)
        ivf.train(sample)
        ivf.add(x)
        recalls = []
        for nprobe in (int(v) for v in args.nprobe.split(",")):
            ids = ivf.search(q, 10, nprobe=nprobe, **search_kw).ids
            recalls.append(f"nprobe {nprobe}: {np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids.tolist(), truth.tolist())]):.4f}")
        print(f"{dtype}: objective {ivf.training['objective'][-1]:.2f} after "
              f"{ivf.training['iterations']} iterations, largest list {int(ivf.list_sizes().max())}; "
              + ", ".join(recalls), flush=True)


if __name__ == "__main__":
    main()
