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
true document lengths, not Lucene's one-byte norms; bm25s uses true lengths too)."""

from __future__ import annotations

import tempfile

from _stdlib_text import stdlib_corpus
from _zipf import zipf_corpus
from peers import adapters, distributions
from results_file import table, write_section
from timing import recall, seconds_per_call, timed


def corpus(name: str, grid) -> tuple[str, list[str], list[str]]:
    if name == "zipf":
        texts, queries = zipf_corpus(grid["n"], grid["vocab"], grid["queries"], seed=0)
        return f"Zipfian, N = {len(texts):,}", texts, queries
    if name == "stdlib":
        texts, queries = stdlib_corpus(grid["queries"], seed=0)
        return f"standard-library text, N = {len(texts):,}", texts, queries
    raise ValueError(f"unknown corpus {name!r} in the bm25 grid")


def measure(label, texts, queries, grid, classes, workdir):
    """(rows, summary rows, systems left out) of one corpus."""
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
    return rows, summary, left_out


def run(grid, out_dir, command, limits):
    classes, missing = adapters("bm25")
    tables, summary, sizes = [], [], []
    columns = [{"key": "peer", "label": "library"}, {"key": "k", "label": "k"},
               {"key": "qps", "label": "QPS", "format": ",.0f"},
               {"key": "ratio", "label": "ragcore x", "format": ".2f"},
               {"key": "overlap", "label": "overlap@k", "format": ".3f"},
               {"key": "build_s", "label": "build s", "format": ".1f"},
               {"key": "detail", "label": "algorithm"}]
    for name in grid["corpora"]:
        label, texts, queries = corpus(name, grid)
        with tempfile.TemporaryDirectory() as workdir:
            rows, rows_summary, left_out = measure(label, texts, queries, grid, classes,
                                                   workdir)
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
        tables=tables, peers=distributions("bm25"),
        plot={"table": 0, "x": "k", "y": "qps", "series": "peer", "logx": True, "logy": True,
              "xlabel": "k", "ylabel": "QPS"},
        summary=summary, notes=notes, limits=limits, out_dir=out_dir)
