"""BM25 query speed by k: ragcore BM25Index (lucene_legacy with Lucene's norms, k1 = 1.2,
b = 0.75, no stopwords or stemming) against bm25s, rank_bm25, tantivy and PISA, on the
seeded Zipfian corpus (bench/_zipf.py: word ranks p ~ 1/rank, 60-200 words a document;
queries of 2-6 words). One call for all queries where the library has a batch call (tantivy
and rank_bm25: one per query). overlap@k: the share of ragcore's top k the peer also returns
(tokenizers and length norms differ slightly between libraries). Then the cost of one query
per call at k = 10, as a service sends them (ragcore's per-call overhead against its own batch
call: BENCHMARKS.md, "Per-call cost of each search entry")."""

from __future__ import annotations

import tempfile

from _zipf import zipf_corpus
from peers import adapters, distributions
from results_file import table, write_section
from timing import recall, seconds_per_call, timed


ONE_K = 10
ONE_COLUMNS = [{"key": "peer", "label": "library"},
               {"key": "us", "label": "µs per query", "format": ",.0f"},
               {"key": "qps", "label": "QPS", "format": ",.0f"}]


def one_query_per_call(systems: dict, queries: list[str], grid) -> list[dict]:
    """Each library's cost of one query per call (k = ONE_K), the libraries in turns."""
    fns = {name: (lambda s=s: [s.search([text], ONE_K) for text in queries])
           for name, (s, _) in systems.items()}
    secs = seconds_per_call(fns, grid["rounds"], grid["min_seconds"])
    return [{"peer": name, "us": 1e6 * secs[name] / len(queries),
             "qps": len(queries) / secs[name]} for name in systems]


def run(grid, out_dir, command, limits):
    n, threads = grid["n"], grid["threads"]
    texts, queries = zipf_corpus(n, grid["vocab"], grid["queries"], seed=0)
    classes, missing = adapters("bm25")
    rows, systems, left_out = [], {}, []
    with tempfile.TemporaryDirectory() as workdir:
        for cls in classes:
            if n > getattr(cls, "max_docs", n):
                left_out.append(f"{cls.name} (scores every document in Python; run up to "
                                f"{cls.max_docs:,} documents)")
                continue
            s = cls(threads, workdir)
            build_s, _ = timed(lambda: s.build(texts))
            systems[s.name] = (s, build_s)
        for k in grid["ks"]:
            fns = {name: (lambda s=s: s.search(queries, k)) for name, (s, _) in systems.items()}
            secs = seconds_per_call(fns, grid["rounds"], grid["min_seconds"])
            mine = systems["ragcore"][0].search(queries, k) if "ragcore" in systems else None
            for name, (s, build_s) in systems.items():
                rows.append({"peer": name, "k": k, "qps": len(queries) / secs[name],
                             "overlap": None if mine is None else recall(s.search(queries, k),
                                                                         mine),
                             "build_s": build_s})
        one_rows = one_query_per_call(systems, queries[:grid["one_query"]], grid)
    summary = []
    for k in grid["ks"]:
        cell = [r for r in rows if r["k"] == k]
        mine = next((r for r in cell if r["peer"] == "ragcore"), None)
        peers = [r for r in cell if r["peer"] != "ragcore"]
        if mine and peers:
            best = max(peers, key=lambda r: r["qps"])
            summary.append({"row": f"BM25, N = {n:,}, k = {k}", "measure": "QPS",
                            "ragcore": mine["qps"], "best_peer": best["peer"],
                            "best_peer_value": best["qps"], "format": ",.0f"})
    mine = next((r for r in one_rows if r["peer"] == "ragcore"), None)
    peers = [r for r in one_rows if r["peer"] != "ragcore"]
    if mine and peers:
        best = min(peers, key=lambda r: r["us"])
        summary.append({"row": f"BM25 one query per call, N = {n:,}, k = {ONE_K}",
                        "measure": "µs per query", "ragcore": mine["us"],
                        "best_peer": best["peer"], "best_peer_value": best["us"],
                        "higher_is_better": False, "format": ",.0f"})
    columns = [{"key": "peer", "label": "library"}, {"key": "k", "label": "k"},
               {"key": "qps", "label": "QPS", "format": ",.0f"},
               {"key": "overlap", "label": "overlap@k", "format": ".3f"},
               {"key": "build_s", "label": "build s", "format": ".1f"}]
    notes = [f"Not installed here: {', '.join(missing)}."] if missing else []
    notes += [f"Left out at this size: {', '.join(left_out)}."] if left_out else []
    notes.append("Share of limit: not given; a pruned posting-list walk is bound by branches "
                 "and memory latency rather than by bandwidth or arithmetic rate.")
    return write_section(
        "bm25", "BM25 query speed", command, threads=threads, order=30,
        intro=f"N = {n:,} documents, {len(queries):,} queries, {threads} thread(s). "
              + " ".join(__doc__.split()),
        tables=[table("", columns, rows, notes),
                table(f"One query per call, k = {ONE_K}", ONE_COLUMNS, one_rows,
                      [f"{grid['one_query']:,} queries, each its own call (a list of one "
                       "string), as a service sends them; the mean over the calls, best of "
                       "interleaved rounds."])],
        peers=distributions("bm25"),
        plot={"table": 0, "x": "k", "y": "qps", "series": "peer", "logx": True, "logy": True,
              "xlabel": "k", "ylabel": "QPS"},
        summary=summary, limits=limits, out_dir=out_dir)
