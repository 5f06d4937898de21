"""BM25 query speed: ragcore BM25Index against PISA (pyterrier-pisa), tantivy and bm25s.

Same corpus, same query strings, same BM25 parameters (k1 = 1.2, b = 0.75), no stopwords, no
stemming, 1 thread each, k = 10 and 100:
  ragcore  BM25Index(variant="lucene_legacy", lucene_norms=True, stopwords=None), one batched
           search call (n_threads=1, algorithm "auto"), and one call per query;
  PISA     PisaIndex(stemmer="none", stops="none", threads=1).bm25(k1, b, num_results=k,
           threads=1) over a DataFrame of all queries (one call), with PISA's
           block_max_wand (its default) and maxscore; the faster is PISA's figure;
  tantivy  in-RAM index, default tokenizer; parse_query + search per query (it has no batch
           call); its BM25 is lucene_legacy with Lucene's norms, so the top-k of both is
           checked (overlap of the documents with a positive score, first 200 queries;
           PISA's overlap too, though its BM25 uses true lengths and its own tokenizer);
  bm25s    numba backend, method "lucene", indexed from the corpus's token ids (no Python
           tokenizer: zipf only), query tokens prepared beforehand (not timed); against
           "ragcore lucene", a second BM25Index with bm25s's formula (variant "lucene", true
           document lengths), timed the same way, and the top-k overlap of the two.
QPS is queries / CPU seconds of this process (best of 3 rounds, systems alternating each
round): on a shared machine that is what the work cost, whatever else ran.

Corpora: the Zipfian one of bench/bm25.py (--n documents, vocabulary 200,000) and, with
--stdlib, the paragraphs of the standard library's .py files.

Run:  .venv/bin/python bench/bm25_peers.py --n 200000
      .venv/bin/python bench/bm25_peers.py --cache DIR --build-only ...   (then the same
      without --build-only: builds the ragcore and PISA indexes once into DIR, so that a
      run timed under the benchmark lock only loads them; zipf only)
Writes bench/results/bm25_peers.json and bench/results/bm25_peers.md.
"""

from __future__ import annotations

import _common  # first: re-executes without OPENBLAS_CORETYPE  # noqa: F401
from _common import LoadMeter, environment, markdown_table

import argparse
import math
import tempfile
import time

import numpy as np
from _peers import finish, tantivy_ids, tantivy_index
from _zipf import zipf_corpus

K1, B = 1.2, 0.75


def cpu_seconds(fn, *args) -> float:
    t0 = time.process_time()
    fn(*args)
    return time.process_time() - t0


class Ragcore:
    def __init__(self, texts, path=None, variant="lucene_legacy", lucene_norms=True):
        """path: a saved index to load if it exists, else where to save the one built."""
        import os

        import ragcore

        self.name = "ragcore" if variant == "lucene_legacy" else f"ragcore {variant}"
        if path is not None and os.path.exists(path):
            self.index = ragcore.BM25Index.load(path)
            return
        self.index = ragcore.BM25Index(k1=K1, b=B, variant=variant, lucene_norms=lucene_norms,
                                       stopwords=None)
        self.index.index(texts(), n_threads=2, show_progress=False)
        if path is not None:
            self.index.save(path)

    def batch(self, queries, k):
        return self.index.search(queries, k, n_threads=1)

    def one_by_one(self, queries, k):
        return [self.index.search(q, k, n_threads=1) for q in queries]

    def ids(self, query, k):
        hits = self.index.search(query, k)
        return {int(i) for i, s in zip(hits.ids[0], hits.scores[0]) if s > 0}


class Pisa:
    def __init__(self, texts, directory, algorithm):
        import pandas as pd
        from pyterrier_pisa import PisaIndex, PisaQueryAlgorithm

        self.name = f"PISA {algorithm}"
        self.pd = pd
        self.index = PisaIndex(f"{directory}/pisa", stemmer="none", stops="none", threads=1,
                               overwrite=True)
        if not self.index.built():
            self.index.index({"docno": str(i), "text": t} for i, t in enumerate(texts()))
        self.algorithm = getattr(PisaQueryAlgorithm, algorithm)
        self.retrievers = {}

    def retriever(self, k):
        if k not in self.retrievers:
            self.retrievers[k] = self.index.bm25(k1=K1, b=B, num_results=k, threads=1,
                                                 query_algorithm=self.algorithm)
        return self.retrievers[k]

    def batch(self, queries, k):
        frame = self.pd.DataFrame({"qid": [str(i) for i in range(len(queries))], "query": queries})
        return self.retriever(k).transform(frame)

    def ids(self, query, k):
        rows = self.batch([query], k)
        return {int(d) for d, s in zip(rows["docno"], rows["score"]) if s > 0}


class Tantivy:
    name = "tantivy"

    def __init__(self, texts):
        self.index, self.searcher = tantivy_index(texts())

    def batch(self, queries, k):  # no batch call: one per query
        return [self.searcher.search(self.index.parse_query(q, ["body"]), k) for q in queries]

    def ids(self, query, k):
        return tantivy_ids(self.index, self.searcher, query, k)


class Bm25s:
    name = "bm25s numba"

    def __init__(self, texts, token_ids=None, path=None):
        """token_ids: () -> (documents as int arrays of word ids, {word: id}), indexed
        without bm25s's Python tokenizer; else texts() is tokenized by bm25s. path: a
        saved index (BM25.save) to load if it exists, else where to save the one built."""
        import os

        import bm25s
        import numba

        numba.set_num_threads(1)
        self.bm25s = bm25s
        self.tokens = {}
        if path is not None and os.path.exists(path):
            self.retriever = bm25s.BM25.load(path, backend="numba", show_progress=False)
            return
        self.retriever = bm25s.BM25(method="lucene", k1=K1, b=B, backend="numba")
        corpus = (token_ids() if token_ids is not None
                  else bm25s.tokenize(texts(), stopwords=None, show_progress=False))
        self.retriever.index(corpus, show_progress=False)
        del corpus
        if path is not None:
            self.retriever.save(path)

    def batch(self, queries, k):
        key = id(queries)
        if key not in self.tokens:  # prepared once, not timed (after the warm-up)
            tokens = self.bm25s.tokenize(queries, stopwords=None, return_ids=False,
                                         show_progress=False)
            known = self.retriever.vocab_dict
            self.tokens[key] = [[t for t in q if t in known] or [""] for q in tokens]
        return self.retriever.retrieve(self.tokens[key], k=k, n_threads=1, show_progress=False)

    def ids(self, query, k):
        docs, scores = self.batch_ids([query], k)
        return {int(i) for i, s in zip(docs[0], scores[0]) if s > 0}

    def batch_ids(self, queries, k):
        known = self.retriever.vocab_dict
        tokens = [[t for t in q.split() if t in known] or [""] for q in queries]
        return self.retriever.retrieve(tokens, k=k, n_threads=1, show_progress=False)


def measure(systems, ragcore_system, queries, ks, rounds) -> dict:
    out = {}
    for k in ks:
        best = {s.name: math.inf for s in systems}
        best["ragcore one per call"] = math.inf
        for s in systems:
            s.batch(queries, k)  # warm-up
        for _ in range(rounds):
            for s in systems:
                best[s.name] = min(best[s.name], cpu_seconds(s.batch, queries, k))
            best["ragcore one per call"] = min(best["ragcore one per call"], cpu_seconds(
                ragcore_system.one_by_one, queries, k))
        out[k] = {name: len(queries) / sec for name, sec in best.items()}
    return out


def overlap(a, b, queries, k) -> float:
    shares = []
    for q in queries:
        x, y = a.ids(q, k), b.ids(q, k)
        shares.append(len(x & y) / len(x | y) if x | y else 1.0)
    return float(np.mean(shares))


def run_corpus(texts, queries, ks, rounds, skip, cache=None, token_ids=None,
               build_only=False) -> dict:
    """texts: () -> the documents (called only for what must be built); cache: a directory
    keeping the ragcore and PISA indexes between runs (else a temporary one)."""
    with tempfile.TemporaryDirectory() as scratch:
        directory = cache or scratch
        saved = (lambda name: f"{directory}/{name}.rbm25") if cache else (lambda name: None)
        systems, build = [], {}
        makers = [("ragcore", lambda: Ragcore(texts, saved("ragcore"))),
                  ("PISA block_max_wand", lambda: Pisa(texts, directory, "block_max_wand")),
                  ("PISA maxscore", lambda: Pisa(texts, directory, "maxscore")),
                  ("tantivy", lambda: Tantivy(texts)),
                  ("ragcore lucene", lambda: Ragcore(texts, saved("ragcore_lucene"), "lucene",
                                                     lucene_norms=False)),
                  ("bm25s numba", lambda: Bm25s(texts, token_ids, cache and f"{cache}/bm25s"))]
        for name, make in makers:
            if name in skip or (name == "ragcore lucene" and "bm25s numba" in skip):
                continue
            print(f"  building {name} ...", flush=True)
            t0 = time.perf_counter()
            systems.append(make())
            build[name] = time.perf_counter() - t0
        if build_only:
            return {"build_s": build}
        ours = systems[0]
        result = {"qps": measure(systems, ours, queries, ks, rounds), "build_s": build}
        tv = next((s for s in systems if s.name == "tantivy"), None)
        if tv is not None:
            result["tantivy_overlap"] = {k: overlap(ours, tv, queries[:200], k) for k in ks}
        pisa = next((s for s in systems if s.name.startswith("PISA")), None)
        if pisa is not None:
            result["pisa_overlap"] = {k: overlap(ours, pisa, queries[:200], k) for k in ks}
        bm, twin = (next((s for s in systems if s.name == name), None)
                    for name in ("bm25s numba", "ragcore lucene"))
        if bm is not None:
            result["bm25s_overlap"] = {k: overlap(twin, bm, queries[:200], k) for k in ks}
    return result


def report(results: dict, args) -> str:
    env = environment()
    lines = [f"Command: `{env['command']}`; CPU: {env.get('cpu', '')}; other processes used "
             f"{results['other_load_cores']:.1f} cores on average while it ran (shared machine).",
             ""]
    rows = []
    for corpus, res in results["corpora"].items():
        for k, q in res["qps"].items():
            pisa = max((v for n, v in q.items() if n.startswith("PISA")), default=0)
            cells = [corpus, k, f"{q['ragcore']:,.0f}", f"{q['ragcore one per call']:,.0f}"]
            for name in ("PISA block_max_wand", "PISA maxscore", "tantivy", "bm25s numba"):
                cells.append(f"{q[name]:,.0f}" if name in q else "-")
            cells.append(f"**{q['ragcore'] / pisa:.2f}x**" if pisa else "-")
            cells.append(f"**{q['ragcore'] / q['tantivy']:.2f}x**" if "tantivy" in q else "-")
            cells.append(f"**{q['ragcore lucene'] / q['bm25s numba']:.1f}x**"
                         if "bm25s numba" in q else "-")
            cells.append(f"{res.get('pisa_overlap', {}).get(k, float('nan')):.3f}")
            cells.append(f"{res.get('tantivy_overlap', {}).get(k, float('nan')):.3f}")
            cells.append(f"{q['ragcore lucene']:,.0f}" if "ragcore lucene" in q else "-")
            cells.append(f"{res.get('bm25s_overlap', {}).get(k, float('nan')):.3f}")
            rows.append(cells)
    lines += ["QPS (queries per CPU second, 1 thread; ragcore batched unless marked; ratios are "
              "ragcore batched / the peer, PISA's best algorithm; vs bm25s: ragcore lucene, the "
              "index with bm25s's formula, / bm25s):", "",
              markdown_table(["corpus", "k", "ragcore", "ragcore one per call", "PISA bmw",
                              "PISA maxscore", "tantivy", "bm25s numba", "vs PISA", "vs tantivy",
                              "vs bm25s", "PISA overlap", "tantivy overlap", "ragcore lucene",
                              "bm25s overlap"], rows)]
    return "\n".join(lines) + "\n"


def stdlib_texts(n_queries):
    from bm25 import stdlib_corpus

    return stdlib_corpus(n_queries)


class Lazy:
    """The corpus, made on first use: with --cache, a run whose indexes are all saved
    never makes it. Each document as word ids too, for bm25s (zipf only)."""

    def __init__(self, make, cache, name, token_ids=None):
        self.make, self.cache, self.name, self.made = make, cache, name, None
        self.token_ids = token_ids and (lambda: token_ids(self))

    def texts(self):
        if self.made is None:
            self.made = self.make()
        return self.made[0]

    def queries(self):
        import json
        import os

        path = self.cache and f"{self.cache}/{self.name}_queries.json"
        if path and os.path.exists(path):
            with open(path) as f:
                return json.load(f)
        self.texts()
        if path:
            with open(path, "w") as f:
                json.dump(self.made[1], f)
        return self.made[1]

    def release(self):
        self.made = None


class IterAsLists(list):
    """int arrays that bm25s iterates as lists of Python ints: its per-document Counter
    and set intersection are several times faster on ints than on numpy scalars, and
    the arrays take 4 bytes a token where lists of ints would take 36."""

    def __iter__(self):
        for a in super().__iter__():
            yield a.tolist()


def zipf_token_ids(args):
    from _zipf import zipf_token_ids as ids

    return IterAsLists(ids(args.n, 200_000)), {f"w{r}": r for r in range(200_000)}


def main() -> None:
    import os

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--ks", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--stdlib", action="store_true", help="also the stdlib text corpus")
    parser.add_argument("--skip", nargs="*", default=[], help="systems left out")
    parser.add_argument("--cache", help="a directory keeping the built indexes between runs")
    parser.add_argument("--build-only", action="store_true", help="build into --cache and stop")
    args = parser.parse_args()
    if args.build_only and not args.cache:
        parser.error("--build-only needs --cache")
    if args.cache:
        os.makedirs(args.cache, exist_ok=True)
    load = LoadMeter()
    results = {"corpora": {}}
    corpora = [Lazy(lambda: zipf_corpus(args.n, 200_000, args.queries), args.cache,
                    f"zipf{args.n}", lambda _: zipf_token_ids(args))]
    if args.stdlib:
        corpora.append(Lazy(lambda: stdlib_texts(args.queries), None, "stdlib"))
    for corpus in corpora:
        queries = corpus.queries()
        n_docs = args.n if corpus.name.startswith("zipf") else len(corpus.texts())
        print(f"{corpus.name}: {n_docs:,} documents, {len(queries)} queries", flush=True)
        results["corpora"][f"{corpus.name.rstrip('0123456789')} ({n_docs:,} docs)"] = run_corpus(
            corpus.texts, queries, args.ks, args.rounds, set(args.skip),
            corpus.cache,  # None for stdlib: --cache keeps the zipf indexes only
            corpus.token_ids, args.build_only)
        corpus.release()
    if args.build_only:
        print(results)
        return
    finish("bm25_peers", results, load, args, report)


if __name__ == "__main__":
    main()
