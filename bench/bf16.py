"""bfloat16 compute for exact search against the fp32 peers and torch's bf16 matmul.

Every system answers the same queries (top-10 inner product) over the same corpus, N x d
float32 random normal vectors (bf16 systems hold them rounded to bf16):

- ragcore fp32: FlatIndex(dtype="float32");
- ragcore bf16 storage: FlatIndex(dtype="bfloat16"), float32 compute;
- ragcore bf16 compute: FlatIndex(dtype="bfloat16", compute="bfloat16") at each bf16 level
  this CPU has (amx, avx512_bf16);
- faiss IndexFlatIP (fp32), numpy (fp32 matmul + argpartition, in row chunks), torch fp32 and
  torch bf16 (matmul + topk, in row chunks).

Queries per second are the median of interleaved repeats (bench/_common.time_calls), 1 and 2
threads (ragcore's n_threads, faiss's OpenMP, BLAS's and torch's threads). "share of peak"
divides the 2 * nq * N * d flops of a call by the best fp32 sgemm rate (numpy, this machine,
same thread count) for fp32 systems, and by torch's bf16 matmul rate on the same shape (the
fastest bf16 product on this CPU we can call) for bf16 ones.

Recall: top-10 of bf16 compute against fp32 exact search, on the bundled encoder's
embeddings of standard-library paragraphs (--real N vectors, 500 held-out queries).

    .venv/bin/python bench/bf16.py [--n 200000] [--d 384] [--batches 1 16 256 1024]
        [--threads 1 2] [--real 10000] [--json bench/results/bf16.json]
"""

from __future__ import annotations

import _common  # noqa: F401  (first: re-executes without OPENBLAS_CORETYPE)
from _common import blas_threads, cpu_flags, cpu_model, time_calls, write_json

import argparse
import os
import sys

import numpy as np

K = 10
CHUNK = 32768


def _numpy_search(x, q, k):
    best_s = np.full((len(q), k), -np.inf, np.float32)
    best_i = np.zeros((len(q), k), np.int64)
    for start in range(0, len(x), CHUNK):
        s = q @ x[start:start + CHUNK].T
        part = np.argpartition(-s, k - 1, axis=1)[:, :k] if s.shape[1] > k else np.tile(np.arange(s.shape[1]), (len(q), 1))
        cand_s = np.concatenate([best_s, np.take_along_axis(s, part, 1)], 1)
        cand_i = np.concatenate([best_i, part + start], 1)
        order = np.argsort(-cand_s, axis=1, kind="stable")[:, :k]
        best_s, best_i = np.take_along_axis(cand_s, order, 1), np.take_along_axis(cand_i, order, 1)
    return best_i


def _torch_search(torch, x, q, k):
    best_s = best_i = None
    for start in range(0, x.shape[0], CHUNK):
        s = q @ x[start:start + CHUNK].T
        top = torch.topk(s, min(k, s.shape[1]), dim=1)
        cs, ci = top.values, top.indices + start
        if best_s is not None:
            cs, ci = torch.cat([best_s, cs], 1), torch.cat([best_i, ci], 1)
            top = torch.topk(cs, k, dim=1)
            cs, ci = top.values, torch.gather(ci, 1, top.indices)
        best_s, best_i = cs, ci
    return best_i


def systems(x, threads, faiss, torch):
    from ragcore import FlatIndex, _core

    out = {}
    f32 = FlatIndex(x.shape[1], "ip", "float32")
    f32.add(x)
    out["ragcore fp32"] = ("fp32", lambda q: f32.search(q, K, n_threads=threads).ids)
    b_store = FlatIndex(x.shape[1], "ip", "bfloat16")
    b_store.add(x)
    out["ragcore bf16 storage"] = ("fp32", lambda q: b_store.search(q, K, n_threads=threads).ids)
    for level, name in ((_core.Bf16Level.Amx, "amx"), (_core.Bf16Level.Avx512Bf16, "avx512_bf16")):
        if not _core.bf16_level_available(level):
            continue
        index = FlatIndex(x.shape[1], "ip", "bfloat16", compute="bfloat16")
        index._vectors, index._ids, index._n = b_store._vectors, b_store._ids, len(b_store)
        index._search_options = {"bf16_level": level}
        out[f"ragcore bf16 compute ({name})"] = (
            "bf16", lambda q, index=index: index.search(q, K, n_threads=threads).ids)
    flat = faiss.IndexFlatIP(x.shape[1])
    flat.add(x)
    out["faiss IndexFlatIP"] = ("fp32", lambda q: flat.search(q, K)[1])
    out["numpy fp32"] = ("fp32", lambda q: _numpy_search(x, q, K))
    tx = torch.from_numpy(x)
    out["torch fp32"] = ("fp32", lambda q: _torch_search(torch, tx, torch.from_numpy(q), K).numpy())
    tb = tx.to(torch.bfloat16)
    out["torch bf16"] = ("bf16", lambda q: _torch_search(torch, tb, torch.from_numpy(q).to(torch.bfloat16), K).numpy())
    return out


def peak_gflops(torch, x, threads) -> dict:
    """fp32 (numpy sgemm) and bf16 (torch matmul) rates on a 1024-query product with x."""
    q = np.random.default_rng(1).standard_normal((1024, x.shape[1])).astype(np.float32)
    flops = 2.0 * len(q) * CHUNK * x.shape[1]
    xs = x[:CHUNK]
    tq, txb = torch.from_numpy(q).to(torch.bfloat16), torch.from_numpy(xs).to(torch.bfloat16)
    timings, _ = time_calls({"fp32": lambda: q @ xs.T, "bf16": lambda: tq @ txb.T}, rounds=3)
    return {name: flops / t.median / 1e9 for name, t in timings.items()}


def real_recall(n: int) -> dict:
    from ragcore import FlatIndex
    from ragcore.cli.bench.stdlib_vectors import stdlib_embeddings

    x, q = stdlib_embeddings(n, 500, 0)
    exact = FlatIndex(x.shape[1], "ip", "float32")
    exact.add(x)
    fast = FlatIndex(x.shape[1], "ip", "bfloat16", compute="bfloat16")
    fast.add(x)
    store = FlatIndex(x.shape[1], "ip", "bfloat16")
    store.add(x)
    truth = exact.search(q, K).ids

    def recall(ids):
        return float(np.mean([len(set(a) & set(b)) / K for a, b in zip(ids, truth)]))
    return {"n": n, "queries": len(q), "level": fast.compute_level,
            "bf16 compute": recall(fast.search(q, K).ids),
            "bf16 storage, fp32 compute": recall(store.search(q, K).ids)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 16, 256, 1024])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--real", type=int, default=10_000)
    parser.add_argument("--json", default="bench/results/bf16.json")
    args = parser.parse_args()

    import faiss
    import torch

    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.n, args.d)).astype(np.float32)
    rows, notes = [], []
    for threads in args.threads:
        torch.set_num_threads(threads)
        faiss.omp_set_num_threads(threads)
        with blas_threads(threads):
            peaks = peak_gflops(torch, x, threads)
            table = systems(x, threads, faiss, torch)
            for nq in args.batches:
                q = rng.standard_normal((nq, args.d)).astype(np.float32)
                timings, _ = time_calls({name: (lambda fn=fn: fn(q)) for name, (_, fn) in table.items()},
                                        rounds=3, target_s=1.0)
                qps = {name: nq / t.median for name, t in timings.items()}
                best_fp32_peer = max(v for name, v in qps.items() if not name.startswith("ragcore") and table[name][0] == "fp32")
                for name, (kind, _) in table.items():
                    gflops = 2.0 * nq * args.n * args.d * qps[name] / nq / 1e9
                    rows.append([threads, nq, name, round(qps[name], 1),
                                 round(qps[name] / best_fp32_peer, 2),
                                 round(qps[name] / qps["torch bf16"], 2),
                                 f"{100 * gflops / peaks[kind]:.0f}%"])
                    print(*rows[-1], sep="\t", flush=True)
        notes.append(f"{threads} thread(s): fp32 sgemm {peaks['fp32']:.0f} GFLOP/s (numpy), "
                     f"bf16 matmul {peaks['bf16']:.0f} GFLOP/s (torch), the 100% of 'share of peak'")
    notes.append("load average (1, 5, 15 min) at the end of the run: "
                 + ", ".join(f"{v:.1f}" for v in os.getloadavg()))
    recall = real_recall(args.real) if args.real else None
    if recall:
        notes.append(f"recall@10 against fp32 exact search on {recall['n']} real embeddings "
                     f"(bundled MiniLM, stdlib paragraphs, {recall['queries']} held-out queries): "
                     f"bf16 compute ({recall['level']}) {recall['bf16 compute']:.4f}, bf16 storage "
                     f"with fp32 compute {recall['bf16 storage, fp32 compute']:.4f}")
    import faiss as _f
    payload = {
        "task": "bf16", "title": "Exact search with bfloat16 compute (AMX / AVX512_BF16)",
        "command": "env -u OPENBLAS_CORETYPE " + " ".join([".venv/bin/python", *sys.argv]),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                    "flags": " ".join(f for f in cpu_flags() if "bf16" in f or f.startswith("amx"))},
        "versions": {"faiss": _f.__version__, "torch": torch.__version__, "numpy": np.__version__},
        "tables": [{"caption": f"top-{K} inner product, N = {args.n:,}, d = {args.d}; QPS (median of interleaved repeats)",
                    "columns": ["threads", "batch", "system", "QPS", "x best fp32 peer", "x torch bf16", "share of peak"],
                    "rows": rows}],
        "notes": notes, "recall": recall,
    }
    write_json(args.json, payload)
    print("\n".join(notes))


if __name__ == "__main__":
    main()
