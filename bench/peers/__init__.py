"""One module per library; each offers one small class per task it takes part in.

The interfaces (every adapter has a `name`; ids are int64 row numbers of the corpus given):
  exact       Cls(threads); build(x); search(q, k) -> ids[nq, k]
  ann         ragcore.cli.bench.peers.System (the adapters `ragcore bench ann` runs, one copy):
              Cls(threads, params); build(x); sweep (the grid's list it takes: "ef" or
              "nprobe"), knob (the library's name for it); search(q, k, value) -> ids[nq, k]
  bm25        Cls(threads, workdir); build(texts); search(queries: list[str], k) -> ids per query
  encode      Cls(threads); encode(texts, batch) -> float32[n, d]
  collection  Cls(path); add(ids, texts, vectors, buckets); reopen();
              search(vector, k, below: int | None) -> ids   (filter: bucket < below)
A module lists its classes in TASKS = {task: [classes]} and names the import it needs in
LIBRARY and its distribution in DISTRIBUTION; `adapters(task)` gives the classes of every
module whose library is installed, ragcore's first.
"""

from __future__ import annotations

import importlib
import importlib.util

MODULES = ("ragcore", "faiss", "numpy_matmul", "torch_matmul", "hnswlib", "usearch", "bm25s",
           "rank_bm25", "tantivy", "pisa", "sentence_transformers", "chroma", "lancedb",
           "qdrant")


def modules() -> list:
    return [importlib.import_module(f"peers.{name}") for name in MODULES]


def installed(module) -> bool:
    return importlib.util.find_spec(module.LIBRARY) is not None


def adapters(task: str, names: list[str] | None = None) -> tuple[list, list[str]]:
    """(classes for task whose library is installed, the distributions that are missing)."""
    found, missing = [], []
    for module in modules():
        classes = module.TASKS.get(task, [])
        if not classes:
            continue
        if not installed(module):
            missing.append(module.DISTRIBUTION)
            continue
        found += [c for c in classes if names is None or c.name in names]
    return found, missing


def distributions(task: str) -> tuple[str, ...]:
    return tuple(m.DISTRIBUTION for m in modules() if m.TASKS.get(task) and installed(m))
