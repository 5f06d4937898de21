"""BM25 query algorithms: exhaustive, MaxScore and Block-Max WAND per query shape.

What BM25Index's algorithm="auto" should run (cpp/src/sparse/bm25_index.cpp,
choose_algorithm) is decided from this measurement; BENCHMARKS.md, section "BM25 query
algorithms: what `auto` runs", holds its figures and the rule.

Corpora (seeded, built in this process):
  - zipf: bench/_zipf.py's corpus of N documents (default 1,000,000; vocabulary 200,000
    words "w<rank>", ranks p ~ 1/rank, 60-200 tokens), no stopwords. Queries of exactly
    m distinct words for each m of --terms, ranks drawn as _zipf.py draws its queries
    (p ~ 1/rank^0.8).
  - stdlib: bench/_stdlib_text.py's corpus (the paragraphs of this Python's standard-library
    sources), stopwords "en". Queries of exactly m distinct non-stopword tokens of a random
    paragraph (paragraphs with fewer are skipped).
Scoring: "lucene", k1 = 1.5, b = 0.75.

Per corpus, number of query terms m and k: one batch of --queries queries, 1 thread, with
each algorithm forced ("exhaustive", "maxscore", "bmw") and with "auto"; CPU-time QPS
(this process's CPU time, so that other processes on a shared machine do not count),
median of --rounds batches after a warm-up batch, the algorithms interleaved round by
round (each round in a rotated order). Every algorithm's hits are checked identical (ids
and scores) to exhaustive's. Reported: QPS per algorithm, the fastest, BMW / MaxScore,
which algorithm auto ran (counts) and auto's QPS against the fastest.

A second table pools each corpus's queries (all numbers of terms) and groups them, per k,
by the statistic auto's rule reads: x = P * N / k^2, where P is the query's postings (the
summed document frequencies of its terms) and N the indexed documents, in bins of a factor
4 (bins with fewer than --min-bin queries are left out); the same timing per bin.

Run:  .venv/bin/python bench/calibrate/bm25_algorithms.py               (~3 minutes on 2 cores)
      .venv/bin/python bench/calibrate/bm25_algorithms.py --n 200000    (~1 minute)
Writes bench/calibrate/results/bm25_algorithms.json and bench/calibrate/results/bm25_algorithms.md.
"""

from __future__ import annotations

import _common  # first: re-executes without OPENBLAS_CORETYPE  # noqa: F401
from _common import (
    RESULTS_DIR, LoadMeter, environment, fmt_num, foreign_cores, markdown_table,
    ragcore_build_line, write_json, write_text,
)

import argparse
import math
import statistics
import time
from collections import Counter

import numpy as np
from _zipf import query_word_weights, zipf_corpus

ALGORITHMS = ("exhaustive", "maxscore", "bmw")
K1, B = 1.5, 0.75


# ---- corpora and queries ---------------------------------------------------------


def zipf_queries(vocab: int, n_terms: int, n_queries: int, seed: int) -> list[list[str]]:
    """n_queries queries of n_terms distinct words, ranks p ~ 1/rank^0.8 (as _zipf.py)."""
    rng = np.random.default_rng(seed)
    q = query_word_weights(vocab)
    return [[f"w{r}" for r in rng.choice(vocab, size=n_terms, replace=False, p=q)]
            for _ in range(n_queries)]


def stdlib_queries(texts: list[str], n_terms: int, n_queries: int, seed: int) -> list[list[str]]:
    """n_queries queries of n_terms distinct non-stopword tokens of a random paragraph."""
    from _stdlib_text import paragraph_tokens

    rng = np.random.default_rng(seed)
    queries = []
    while len(queries) < n_queries:
        tokens = paragraph_tokens(texts, rng)
        if len(tokens) >= n_terms:
            queries.append([str(t) for t in rng.choice(tokens, size=n_terms, replace=False)])
    return queries


def build_corpus(name: str, args):
    """(index, {n_terms: queries}) of one corpus."""
    import ragcore

    t0 = time.perf_counter()
    if name == "zipf":
        texts, _ = zipf_corpus(args.n, args.vocab, 0)
        queries = {m: zipf_queries(args.vocab, m, args.queries, seed=m) for m in args.terms}
        stopwords = None
    else:
        from _stdlib_text import stdlib_paragraphs

        texts = stdlib_paragraphs()
        queries = {m: stdlib_queries(texts, m, args.queries, seed=m) for m in args.terms}
        stopwords = "en"
    index = ragcore.BM25Index(k1=K1, b=B, variant="lucene", stopwords=stopwords)
    index.index(texts, show_progress=False)
    print(f"{name}: {len(texts):,} documents, indexed in {time.perf_counter() - t0:.0f} s",
          flush=True)
    return index, queries


# ---- measuring ------------------------------------------------------------------


def measure(index, queries, k: int, rounds: int) -> dict:
    """CPU-time QPS of each algorithm and of auto on one batch, interleaved round by round;
    checks the hits equal exhaustive's."""
    names = ALGORITHMS + ("auto",)

    def run(name):
        return index._search(queries, k, n_threads=1, algorithm=name)

    results = {name: run(name) for name in names}  # warm-up (and the hits to check)
    want = results["exhaustive"][0]
    for name in names:
        hits = results[name][0]
        if not (np.array_equal(hits.ids, want.ids) and np.array_equal(hits.scores, want.scores)):
            raise SystemExit(f"{name}'s hits differ from exhaustive's at k = {k}")
    times = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:  # no fixed order
            c0 = time.process_time()
            run(name)
            times[name].append(time.process_time() - c0)
    qps = {name: len(queries) / max(statistics.median(t), 1e-9) for name, t in times.items()}
    return {"qps": qps, "auto_used": dict(Counter(results["auto"][1]))}


def rule_bins(index, queries: dict, k: int, min_bin: int) -> dict:
    """{log2 of the bin's lower edge: queries} of x = P * N / k^2 (see the module doc)."""
    df = {}
    bins: dict[int, list] = {}
    for qs in queries.values():
        for q in qs:
            postings = sum(df.setdefault(t, index.doc_freq(t)) for t in set(q))
            x = postings * len(index) / k**2
            edge = 2 * math.floor(math.log2(x) / 2) if x > 0 else -99
            bins.setdefault(edge, []).append(q)
    return {edge: qs for edge, qs in sorted(bins.items()) if len(qs) >= min_bin}


def run_corpus(name: str, args) -> dict:
    index, queries = build_corpus(name, args)
    load = LoadMeter()
    by_x = []
    for k in args.ks:
        for edge, qs in rule_bins(index, queries, k, args.min_bin).items():
            cell = measure(index, qs, k, args.rounds)
            cell.update(k=k, log2_x=edge, n_queries=len(qs))
            by_x.append(cell)
            print(f"  {name} k={k} x in [2^{edge}, 2^{edge + 2}) ({len(qs)} queries): "
                  + ", ".join(f"{a} {fmt_num(v)}" for a, v in cell["qps"].items()), flush=True)
    rows = []
    for m in args.terms:
        for k in args.ks:
            t0 = time.perf_counter()
            cell = measure(index, queries[m], k, args.rounds)
            cell.update(n_terms=m, k=k)
            rows.append(cell)
            q = cell["qps"]
            print(f"  {name} m={m} k={k}: " + ", ".join(f"{a} {fmt_num(q[a])}" for a in q)
                  + f"; auto ran {cell['auto_used']} ({time.perf_counter() - t0:.0f} s)",
                  flush=True)
    return {"n_docs": len(index), "rows": rows, "by_x": by_x,
            "other_load_cores": foreign_cores(load.report())}


# ---- report ---------------------------------------------------------------------


def _algorithm_cells(row: dict):
    """(QPS per algorithm, the fastest forced one, its cells with the fastest in bold, what
    auto ran) of one table row."""
    q = row["qps"]
    best = max(ALGORITHMS, key=lambda a: q[a])
    cells = [f"**{fmt_num(q[a])}**" if a == best else fmt_num(q[a]) for a in ALGORITHMS]
    used = ", ".join(f"{a} {c}" for a, c in sorted(row["auto_used"].items()))
    return q, best, cells, used


def report(results: dict, env: dict) -> str:
    lines = [f"Command: `{env['command']}`", "",
             f"CPU: {env['cpu']}, {env['cores']} cores; {ragcore_build_line(env['ragcore'])}.", "",
             "CPU-time QPS, 1 thread, one batch per cell (fastest in bold); bmw / maxscore = their "
             "QPS ratio; auto ran = which algorithm auto chose (queries); auto / best = auto's "
             "QPS over the fastest forced algorithm's. Cores used by other processes meanwhile: "
             + ", ".join(f"{c} {r['other_load_cores']}" for c, r in results.items()) + ".", ""]
    table = []
    for corpus, res in results.items():
        for row in res["rows"]:
            q, best, cells, used = _algorithm_cells(row)
            table.append([f"{corpus} ({res['n_docs']:,} docs)", row["n_terms"], row["k"], *cells,
                          best, f"{q['bmw'] / q['maxscore']:.2f}", fmt_num(q["auto"]), used,
                          f"{q['auto'] / q[best]:.2f}"])
    lines.append(markdown_table(["corpus", "terms", "k", "exhaustive", "maxscore", "bmw",
                                 "fastest", "bmw / maxscore", "auto", "auto ran", "auto / best"],
                                table))
    lines += ["", ("The same queries pooled over the numbers of terms, grouped per k by "
                   "x = P * N / k^2 (P: the query's postings, N: documents); auto runs exhaustive "
                   "where x < 2^10 (cpp/src/sparse/bm25_index.cpp, choose_algorithm)."), ""]
    table = []
    for corpus, res in results.items():
        for row in res["by_x"]:
            q, best, cells, used = _algorithm_cells(row)
            edge = row["log2_x"]
            span = "0" if edge == -99 else f"[2^{edge}, 2^{edge + 2})"
            table.append([corpus, row["k"], span, row["n_queries"], *cells, best,
                          f"{q['exhaustive'] / q['maxscore']:.2f}", used,
                          f"{q['auto'] / q[best]:.2f}"])
    lines.append(markdown_table(["corpus", "k", "x", "queries", "exhaustive", "maxscore", "bmw",
                                 "fastest", "exhaustive / maxscore", "auto ran", "auto / best"],
                                table))
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="Writes bench/calibrate/results/bm25_algorithms.json and .md (override with --json, "
               "--markdown).")
    parser.add_argument("--n", type=int, default=1_000_000, help="zipf corpus documents")
    parser.add_argument("--vocab", type=int, default=200_000, help="zipf vocabulary")
    parser.add_argument("--corpora", nargs="+", default=["zipf", "stdlib"],
                        choices=["zipf", "stdlib"])
    parser.add_argument("--terms", type=int, nargs="+", default=[1, 2, 3, 4, 5],
                        help="numbers of query terms (one query set each)")
    parser.add_argument("--ks", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--queries", type=int, default=300, help="queries per number of terms")
    parser.add_argument("--rounds", type=int, default=3, help="timed batches per cell")
    parser.add_argument("--min-bin", type=int, default=20,
                        help="fewest queries for a bin of the second table")
    parser.add_argument("--json", default=str(RESULTS_DIR / "bm25_algorithms.json"))
    parser.add_argument("--markdown", default=str(RESULTS_DIR / "bm25_algorithms.md"))
    args = parser.parse_args()

    env = environment()
    t0 = time.perf_counter()
    results = {corpus: run_corpus(corpus, args) for corpus in args.corpora}
    print(f"measured in {time.perf_counter() - t0:.0f} s", flush=True)
    write_json(args.json, {"environment": env, "args": vars(args), "results": results})
    text = report(results, env)
    write_text(args.markdown, text)
    print(text)


if __name__ == "__main__":
    main()
