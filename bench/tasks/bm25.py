"""BM25 query speed by k: ragcore BM25Index (lucene_legacy with Lucene's norms, k1 = 1.2,
b = 0.75, no stopwords or stemming) against bm25s, rank_bm25, tantivy and PISA, 1 thread each,
the same query strings for all. Corpora: the seeded Zipfian one (bench/_zipf.py: word ranks
p ~ 1/rank, 60-200 words a document; queries of 2-6 words) and, in the full grid, real text:
the paragraphs of the standard library's .py files (bench/_stdlib_text.py) written as words
every library's tokenizer splits alike, queries of 2-5 words of a random paragraph. What is
timed, per system: the call a user makes from Python to get the top k of all queries, query
strings in, ids out, tokenizing the queries included. ragcore and bm25s: one call for all
queries. tantivy: per query (no batch call) parse_query, search(count=False) and the ids read
from a fast field. PISA: its native batch call under pyterrier-pisa's transform (the
DataFrames left out), block-max WAND or MaxScore, whichever was faster on these queries;
its hits are its docnos (str). rank_bm25: all scores in Python, then a sort. ragcore x: ragcore's
QPS / the peer's. overlap@k: the share of ragcore's top k the peer also returns (PISA uses
true document lengths, not Lucene's one-byte norms; bm25s uses true lengths too). Then, on the
first corpus, the cost of one query per call at k = 10, as a service sends them, each library
through the same call as above with a list of one query (ragcore's per-call overhead against
its own batch call: BENCHMARKS.md, "Per-call cost of each search entry")."""

from __future__ import annotations

import tempfile

from _stdlib_text import stdlib_corpus
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


def corpus(name: str, grid) -> tuple[str, list[str], list[str]]:
    if name == "zipf":
        texts, queries = zipf_corpus(grid["n"], grid["vocab"], grid["queries"], seed=0)
        return f"Zipfian, N = {len(texts):,}", texts, queries
    if name == "stdlib":
        texts, queries = stdlib_corpus(grid["queries"], seed=0)
        return f"standard-library text, N = {len(texts):,}", texts, queries
    raise ValueError(f"unknown corpus {name!r} in the bm25 grid")


def measure(label, texts, queries, grid, classes, workdir, one_query=0):
    """(rows, summary rows, systems left out, one-query rows) of one corpus; the one-query
    table (one_query_per_call) over its first one_query queries, none where 0."""
    rows, systems, left_out = [], {}, []
    for cls in classes:
        if len(texts) > getattr(cls, "max_docs", len(texts)):
            left_out.append(f"{cls.name} (scores every document in Python; run up to "
                            f"{cls.max_docs:,} documents)")
            continue
        s = cls(grid["threads"], workdir)
        build_s, _ = timed(lambda: s.build(texts))
        systems[s.name] = (s, build_s)
    for k in grid["ks"]:
        fns = {name: (lambda s=s: s.search(queries, k)) for name, (s, _) in systems.items()}
        secs = seconds_per_call(fns, grid["rounds"], grid["min_seconds"])
        mine = systems["ragcore"][0].search(queries, k) if "ragcore" in systems else None
        for name, (s, build_s) in systems.items():
            found = s.search(queries, k)
            found = s.ids(found) if hasattr(s, "ids") else found
            detail = s.detail(k) if hasattr(s, "detail") else None
            rows.append({"peer": name, "k": k, "qps": len(queries) / secs[name],
                         "ratio": secs[name] / secs["ragcore"] if mine is not None else None,
                         "overlap": None if mine is None else recall(found, mine),
                         "build_s": build_s, "detail": detail})
    one_rows = one_query_per_call(systems, queries[:one_query], grid) if one_query else []
    summary = []
    for k in grid["ks"]:
        cell = [r for r in rows if r["k"] == k]
        mine = next((r for r in cell if r["peer"] == "ragcore"), None)
        peers = [r for r in cell if r["peer"] != "ragcore"]
        if mine and peers:
            best = max(peers, key=lambda r: r["qps"])
            summary.append({"row": f"BM25, {label}, k = {k}", "measure": "QPS",
                            "ragcore": mine["qps"], "best_peer": best["peer"],
                            "best_peer_value": best["qps"], "format": ",.0f"})
    mine = next((r for r in one_rows if r["peer"] == "ragcore"), None)
    peers = [r for r in one_rows if r["peer"] != "ragcore"]
    if mine and peers:
        best = min(peers, key=lambda r: r["us"])
        summary.append({"row": f"BM25 one query per call, {label}, k = {ONE_K}",
                        "measure": "µs per query", "ragcore": mine["us"],
                        "best_peer": best["peer"], "best_peer_value": best["us"],
                        "higher_is_better": False, "format": ",.0f"})
    return rows, summary, left_out, one_rows


def run(grid, out_dir, command, limits):
    classes, missing = adapters("bm25")
    tables, summary, sizes, one_tables = [], [], [], []
    columns = [{"key": "peer", "label": "library"}, {"key": "k", "label": "k"},
               {"key": "qps", "label": "QPS", "format": ",.0f"},
               {"key": "ratio", "label": "ragcore x", "format": ".2f"},
               {"key": "overlap", "label": "overlap@k", "format": ".3f"},
               {"key": "build_s", "label": "build s", "format": ".1f"},
               {"key": "detail", "label": "algorithm"}]
    for i, name in enumerate(grid["corpora"]):
        label, texts, queries = corpus(name, grid)
        one_query = grid["one_query"] if i == 0 else 0
        with tempfile.TemporaryDirectory() as workdir:
            rows, rows_summary, left_out, one_rows = measure(label, texts, queries, grid,
                                                             classes, workdir, one_query)
        if one_rows:
            one_tables.append(table(
                f"One query per call, {label}, k = {ONE_K}", ONE_COLUMNS, one_rows,
                [f"{one_query:,} queries, each its own call (a list of one string), as a "
                 "service sends them; the mean over the calls, best of interleaved rounds."]))
        notes = [f"Not installed here: {', '.join(missing)}."] if missing else []
        notes += [f"Left out at this size: {', '.join(left_out)}."] if left_out else []
        tables.append(table(f"{label} documents, {len(queries):,} queries", columns, rows,
                            notes))
        summary += rows_summary
        sizes.append(label)
    notes = ["Share of limit: not given; a pruned posting-list walk is bound by branches and "
             "memory latency rather than by bandwidth or arithmetic rate.",
             "algorithm: the query algorithm PISA ran (the faster of its two on these queries)."]
    return write_section(
        "bm25", "BM25 query speed", command, threads=grid["threads"], order=30,
        intro=f"{'; '.join(sizes)} documents; {grid['threads']} thread(s). "
              + " ".join(__doc__.split()),
        tables=tables + one_tables, peers=distributions("bm25"),
        plot={"table": 0, "x": "k", "y": "qps", "series": "peer", "logx": True, "logy": True,
              "xlabel": "k", "ylabel": "QPS"},
        summary=summary, notes=notes, limits=limits, out_dir=out_dir)
