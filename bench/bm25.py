"""BM25: ragcore BM25Index against bm25s (numpy and numba backends) and rank_bm25.

Corpora (generated once per run, seeded, written to bench/results/bm25_data/):
  - zipf: N synthetic documents (default 1,000,000), vocabulary 200,000 words "w<rank>",
    word ranks drawn from a Zipf law (p ~ 1/rank), lengths uniform in [60, 200] tokens;
    1,000 queries of 2-6 distinct words whose ranks follow a flatter law (p ~ 1/rank^0.8,
    queries favour mid-frequency words). No stopwords, no stemming.
  - stdlib: the paragraphs (blank-line separated, >= 40 characters) of the .py files of this
    Python's standard library (sysconfig "stdlib" path, tests included), as text; 1,000
    queries of 2-5 distinct tokens from random paragraphs. Stopwords "en" for every system.
Both systems see the same texts and the same query strings and use the same tokenizing rule
(Python's re.findall(r"(?u)\\b\\w\\w+\\b", text.lower())); the scoring variant is "lucene"
with k1 = 1.5, b = 0.75.

Per system, in its own process (so that peak memory is its own):
  build     ragcore: BM25Index.index(texts); bm25s: bm25s.tokenize(texts) + BM25.index
            (one index serves both bm25s backends);
  bytes     the saved index on disk (ragcore: save(); bm25s: save() directory);
  memory    peak RSS of the process above its RSS once the texts were loaded;
  QPS       one batch of all queries, k = 10 and 100, 1 and 2 threads; ragcore's time
            includes tokenizing the query strings, bm25s is given its query tokens ready
            (bm25s.tokenize beforehand, not timed); median of 3 batches after a warm-up
            batch (1 batch where a batch takes over 5 s).
            bm25s numpy with 1 thread is n_threads=0 (sequential), with 2 it is a pool of
            2 processes; numba uses numba threads.
  algo      which ragcore query algorithm "auto" ran (counts), plus QPS with each
            algorithm forced, 1 thread;
  agree     ragcore's top-k scores against bm25s's (relative difference <= 1e-4).
rank_bm25 (BM25Okapi, a different idf) only at small N (--rank-bm25-n documents, 100
queries) with ragcore on the same subset.

Run:  .venv/bin/python bench/bm25.py                 (1M documents: the full run)
      .venv/bin/python bench/bm25.py --n 100000      (a shorter run)
Writes bench/results/bm25.json and bench/results/bm25.md.
"""

from __future__ import annotations

import _common  # first: re-executes without OPENBLAS_CORETYPE  # noqa: F401
from _common import (
    RESULTS_DIR, LoadMeter, environment, fmt_num, foreign_cores, markdown_table, write_json,
    write_text,
)

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np
from _zipf import zipf_corpus

DATA_DIR = RESULTS_DIR / "bm25_data"
K1, B = 1.5, 0.75


# ---- corpora -------------------------------------------------------------------


def stdlib_corpus(n_queries: int, seed: int = 0) -> tuple[list[str], list[str]]:
    root = Path(sysconfig.get_paths()["stdlib"])
    texts = []
    for path in sorted(root.rglob("*.py")):
        if "site-packages" in path.parts:
            continue
        try:
            source = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for para in source.split("\n\n"):
            para = " ".join(para.split())
            if len(para) >= 40:
                texts.append(para)
    rng = np.random.default_rng(seed)
    queries = []
    while len(queries) < n_queries:
        tokens = paragraph_tokens(texts, rng)
        if len(tokens) >= 2:
            size = int(rng.integers(2, min(5, len(tokens)) + 1))
            queries.append(" ".join(rng.choice(tokens, size=size, replace=False)))
    return texts, queries


def paragraph_tokens(texts: list[str], rng) -> list[str]:
    """The distinct non-stopword tokens of a random paragraph, in order (query material)."""
    import ragcore

    stop = set(ragcore.sparse.tokenizer.STOPWORDS_EN)
    words = ragcore.tokenize(texts[rng.integers(len(texts))])
    return list(dict.fromkeys(t for t in words if t not in stop))


def write_lines(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


# ---- measuring (worker side) ----------------------------------------------------


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def reset_peak_rss() -> None:
    """Restarts the peak-RSS count here (Linux >= 4.0): a spawned process inherits its
    parent's peak, which is not its own."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def peak_rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def qps(fn, n_queries: int, rounds: int = 3) -> tuple[float, float, object]:
    """(wall-clock QPS, CPU-time QPS, result) of fn (one batch): medians of `rounds` timed
    batches after a warm-up batch, or of one batch when a batch takes over 5 s (slow systems
    at 1M). CPU time is this process's (all its threads): on a shared machine it is what the
    work cost, whatever else ran; it does not see child processes (bm25s numpy's pool)."""
    t0 = time.perf_counter()
    result = fn()  # warm-up (and the result to check)
    if time.perf_counter() - t0 > 5.0:
        rounds = 1
    walls, cpus = [], []
    for _ in range(rounds):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return n_queries / statistics.median(walls), n_queries / statistics.median(cpus), result


def worker_ragcore(texts, queries, stopwords, ks, threads) -> dict:
    import ragcore

    out = {"system": "ragcore"}
    reset_peak_rss()
    base, load = rss_bytes(), LoadMeter()
    index = ragcore.BM25Index(k1=K1, b=B, variant="lucene", stopwords="en" if stopwords else None)
    t0 = time.perf_counter()
    index.index(texts, show_progress=False)
    out["build_s"] = time.perf_counter() - t0
    out["memory_bytes"] = index.memory_bytes()
    out["postings_bytes"] = index.postings_bytes()
    with tempfile.TemporaryDirectory(dir=DATA_DIR) as tmp:
        index.save(Path(tmp) / "index.rc")
        out["index_bytes"] = dir_bytes(tmp)
    out["qps"], out["cpu_qps"], out["algorithms"], out["forced_qps"], out["topk"] = {}, {}, {}, {}, {}
    for k in ks:
        for t in threads:
            rate, cpu_rate, (hits, used) = qps(lambda: index._search(queries, k, n_threads=t),
                                               len(queries))
            out["qps"][f"{k}/{t}"], out["cpu_qps"][f"{k}/{t}"] = rate, cpu_rate
        out["algorithms"][str(k)] = {a: used.count(a) for a in sorted(set(used))}
        out["topk"][str(k)] = hits.scores.tolist()
        for algorithm in ("exhaustive", "maxscore", "bmw"):
            _, cpu_rate, _ = qps(lambda: index.search(queries, k, n_threads=1, algorithm=algorithm),
                                 len(queries), rounds=1)
            out["forced_qps"][f"{k}/{algorithm}"] = cpu_rate
    out["peak_extra_bytes"] = peak_rss_bytes() - base
    out["other_load_cores"] = foreign_cores(load.report())
    return out


def worker_bm25s(texts, queries, stopwords, ks, threads) -> dict:
    import bm25s
    import numba

    out = {"system": "bm25s"}
    reset_peak_rss()
    base, load = rss_bytes(), LoadMeter()
    stop = "en" if stopwords else None
    t0 = time.perf_counter()
    tokens = bm25s.tokenize(texts, stopwords=stop, show_progress=False)
    retriever = bm25s.BM25(method="lucene", k1=K1, b=B)
    retriever.index(tokens, show_progress=False)
    out["build_s"] = time.perf_counter() - t0
    del tokens
    with tempfile.TemporaryDirectory(dir=DATA_DIR) as tmp:
        retriever.save(tmp)
        out["index_bytes"] = dir_bytes(tmp)
    query_tokens = bm25s.tokenize(queries, stopwords=stop, return_ids=False, show_progress=False)
    known = retriever.vocab_dict
    query_tokens = [[t for t in q if t in known] or [""] for q in query_tokens]
    out["qps"], out["cpu_qps"], out["topk"] = {}, {}, {}
    for backend in ("numpy", "numba"):
        retriever.backend = backend
        for k in ks:
            for t in threads:
                n_threads = t if (backend == "numba" or t > 1) else 0
                if backend == "numba":
                    numba.set_num_threads(t)
                run = lambda: retriever.retrieve(query_tokens, k=k, n_threads=n_threads,  # noqa: E731
                                                 show_progress=False)
                rate, cpu_rate, (_, scores) = qps(run, len(queries))
                out["qps"][f"{backend}/{k}/{t}"] = rate
                out["cpu_qps"][f"{backend}/{k}/{t}"] = cpu_rate
            out["topk"][f"{backend}/{k}"] = np.asarray(scores).tolist()
    out["peak_extra_bytes"] = peak_rss_bytes() - base
    out["other_load_cores"] = foreign_cores(load.report())
    return out


def worker_rank_bm25(texts, queries, stopwords, ks, threads) -> dict:
    import ragcore
    from rank_bm25 import BM25Okapi

    tokens = ragcore.tokenize(texts, stopwords="en" if stopwords else None)
    t0 = time.perf_counter()
    model = BM25Okapi(tokens, k1=K1, b=B)
    out = {"system": "rank_bm25", "build_s": time.perf_counter() - t0, "qps": {}}
    query_tokens = ragcore.tokenize(queries, stopwords="en" if stopwords else None)
    t0 = time.perf_counter()
    for q in query_tokens:
        scores = model.get_scores(q)
        np.argpartition(-scores, min(10, len(scores) - 1))[:10]
    out["qps"]["10/1"] = len(queries) / (time.perf_counter() - t0)
    return out


WORKERS = {"ragcore": worker_ragcore, "bm25s": worker_bm25s, "rank_bm25": worker_rank_bm25}


def run_worker(args) -> None:
    texts = read_lines(Path(args.texts))[: args.limit or None]
    queries = read_lines(Path(args.query_file))[: args.limit_queries or None]
    result = WORKERS[args.worker](texts, queries, args.stopwords, args.ks, args.threads)
    result.update(n_docs=len(texts), n_queries=len(queries))
    Path(args.out).write_text(json.dumps(result))


def spawn(system: str, corpus: str, args, limit: int = 0, limit_queries: int = 0) -> dict:
    out = DATA_DIR / f"{corpus}.{system}.{limit or 'all'}.json"
    cmd = [sys.executable, __file__, "--worker", system, "--texts", str(DATA_DIR / f"{corpus}.txt"),
           "--query-file", str(DATA_DIR / f"{corpus}.queries.txt"), "--out", str(out),
           "--limit", str(limit), "--limit-queries", str(limit_queries),
           "--ks", *map(str, args.ks), "--threads", *map(str, args.threads)]
    if corpus == "stdlib":
        cmd.append("--stopwords")
    print(f"  {corpus}: {system}{f' (first {limit} docs)' if limit else ''} ...", flush=True)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    print(f"    done in {time.perf_counter() - t0:.0f} s", flush=True)
    return json.loads(out.read_text())


# ---- report -------------------------------------------------------------------


def agreement(ours: list, theirs: list) -> float:
    a, b = np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    close = np.abs(a - b) <= 1e-4 * np.maximum(np.abs(b), 1e-6)
    return float(close.mean())


def mib(x: float) -> str:
    return f"{x / 2**20:,.0f}"


def corpus_rows(name: str, rc: dict, bs: dict, ks, threads) -> list[list]:
    rows = []
    for k in ks:
        for t in threads:
            ours = rc["qps"][f"{k}/{t}"]
            numpy_, numba_ = bs["qps"][f"numpy/{k}/{t}"], bs["qps"][f"numba/{k}/{t}"]
            best = max(numpy_, numba_)
            cpu = "-"
            if t == 1:  # one thread each: CPU time is comparable, whatever else ran
                best_cpu = max(bs["cpu_qps"][f"numpy/{k}/1"], bs["cpu_qps"][f"numba/{k}/1"])
                cpu = (f"{fmt_num(rc['cpu_qps'][f'{k}/1'])} / {fmt_num(best_cpu)} = "
                       f"**{rc['cpu_qps'][f'{k}/1'] / best_cpu:.1f}x**")
            algos = ", ".join(f"{a} {c}" for a, c in rc["algorithms"][str(k)].items())
            rows.append([name, k, t, fmt_num(ours), fmt_num(numpy_), fmt_num(numba_),
                         f"**{ours / best:.1f}x**", cpu, algos,
                         f"{agreement(rc['topk'][str(k)], bs['topk'][f'numba/{k}']):.3f}"])
    return rows


def report(results: dict, args) -> str:
    lines = [f"Command: `{environment()['command']}`", ""]
    qps_rows, build_rows, forced_rows = [], [], []
    for name, res in results.items():
        if name == "rank_bm25":
            continue
        rc, bs = res["ragcore"], res["bm25s"]
        qps_rows += corpus_rows(f"{name} ({rc['n_docs']:,} docs)", rc, bs, args.ks, args.threads)
        build_rows.append([name, f"{rc['build_s']:.1f}", f"{bs['build_s']:.1f}",
                           f"**{bs['build_s'] / rc['build_s']:.1f}x**",
                           mib(rc["index_bytes"]), mib(bs["index_bytes"]),
                           f"{bs['index_bytes'] / rc['index_bytes']:.1f}x",
                           mib(rc["peak_extra_bytes"]), mib(bs["peak_extra_bytes"])])
        for k in args.ks:
            forced_rows.append([name, k] + [fmt_num(rc["forced_qps"][f"{k}/{a}"])
                                            for a in ("exhaustive", "maxscore", "bmw")])
    loads = ", ".join(f"{c} {s} {r['other_load_cores']}" for c, res in results.items()
                      for s, r in res.items() if "other_load_cores" in r)
    lines += ["QPS (queries per second, one batch of all queries, wall clock; ratio = ragcore / "
              "best bm25s backend; CPU-time QPS at 1 thread: ragcore / best bm25s = ratio; agree "
              "= share of top-k scores equal to bm25s numba's within 1e-4). Cores that other "
              f"processes used on average while each system ran: {loads}.", "",
              markdown_table(["corpus", "k", "threads", "ragcore", "bm25s numpy", "bm25s numba",
                              "ratio", "CPU-time QPS ratio", "ragcore algorithm (auto)", "agree"],
                             qps_rows), "",
              "Build (seconds, 2 threads for ragcore), index size on disk and peak memory (MiB "
              "above the loaded texts):", "",
              markdown_table(["corpus", "ragcore build s", "bm25s build s", "build speed-up",
                              "ragcore MiB", "bm25s MiB", "bm25s / ragcore size",
                              "ragcore peak MiB", "bm25s peak MiB"], build_rows), "",
              "ragcore CPU-time QPS with each query algorithm forced (1 thread):", "",
              markdown_table(["corpus", "k", "exhaustive", "maxscore", "bmw"], forced_rows)]
    if "rank_bm25" in results:
        rk = results["rank_bm25"]
        lines += ["", f"rank_bm25 (BM25Okapi) on the first {rk['rank_bm25']['n_docs']:,} zipf "
                  f"documents, {rk['rank_bm25']['n_queries']} queries, k = 10, 1 thread: "
                  f"{fmt_num(rk['rank_bm25']['qps']['10/1'])} QPS; ragcore on the same: "
                  f"{fmt_num(rk['ragcore']['qps']['10/1'])} QPS "
                  f"({rk['ragcore']['qps']['10/1'] / rk['rank_bm25']['qps']['10/1']:.0f}x)."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="zipf corpus documents")
    parser.add_argument("--vocab", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--corpora", nargs="+", default=["zipf", "stdlib"])
    parser.add_argument("--rank-bm25-n", type=int, default=10_000, help="0 to skip rank_bm25")
    parser.add_argument("--ks", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    # worker mode (internal)
    parser.add_argument("--worker")
    parser.add_argument("--texts")
    parser.add_argument("--query-file")
    parser.add_argument("--out")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--limit-queries", type=int, default=0)
    parser.add_argument("--stopwords", action="store_true")
    args = parser.parse_args()
    if args.worker:
        return run_worker(args)

    results = {}
    for corpus in args.corpora:
        t0 = time.perf_counter()
        texts, queries = (zipf_corpus(args.n, args.vocab, args.queries) if corpus == "zipf"
                          else stdlib_corpus(args.queries))
        write_lines(DATA_DIR / f"{corpus}.txt", texts)
        write_lines(DATA_DIR / f"{corpus}.queries.txt", queries)
        print(f"{corpus}: {len(texts):,} documents, {len(queries)} queries "
              f"({time.perf_counter() - t0:.0f} s to generate)", flush=True)
        del texts
        results[corpus] = {s: spawn(s, corpus, args) for s in ("ragcore", "bm25s")}
        if corpus == "zipf" and args.rank_bm25_n:
            results["rank_bm25"] = {s: spawn(s, corpus, args, args.rank_bm25_n, 100)
                                    for s in ("rank_bm25", "ragcore")}
    payload = {"environment": environment(), "args": vars(args), "results": {
        c: {s: {k: v for k, v in r.items() if k != "topk"} for s, r in res.items()}
        for c, res in results.items()}}
    write_json(RESULTS_DIR / "bm25.json", payload)
    text = report(results, args)
    write_text(RESULTS_DIR / "bm25.md", text)
    print(text)
    shutil.rmtree(DATA_DIR, ignore_errors=True)


if __name__ == "__main__":
    main()
