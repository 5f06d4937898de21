"""What Collection.open costs, for two source trees in turns (the checks at open: schema,
meta values, one document and embedding, and the digest of every chunk id).

    python bench/collection_open.py --n 100000 --trees /path/to/other/src src

Builds one collection (chunker="none", random vectors of 32 dimensions given as embeddings=, flat dense
index) with this process's ragcore, then opens and closes it --rounds times with each tree
in turns, each open in a fresh process (the page cache is warm for both); and times reading
and digesting every chunk id and SQLite's summary of them (the parts of the checks that grow
with the collection).
Writes bench/results/collection_open.json (ragcore-bench/1).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from results_file import write_section  # noqa: E402

_OPEN = """
import sys, time
from ragcore import Collection
t = time.perf_counter()
col = Collection.open(sys.argv[1], readonly=True)
opened = time.perf_counter() - t
col.close()
print(opened)
"""


class _Given:
    """An encoder that only declares what made the vectors given as embeddings=."""

    fingerprint = {"model": "random vectors", "dim": 32}

    def encode(self, texts):
        raise AssertionError("the vectors are given")


def build(path: str, n: int) -> None:
    from ragcore import Collection

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(2000)]
    with Collection.create(path, encoder=_Given(), chunker="none") as col:
        for start in range(0, n, 10_000):
            m = min(10_000, n - start)
            texts = [" ".join(rng.choice(words, 12)) for _ in range(m)]
            vectors = rng.standard_normal((m, 32)).astype(np.float32)
            col.add(texts, ids=list(range(start, start + m)), embeddings=vectors)


def _check_times(path: str, rounds: int) -> dict:
    """Seconds of each way open compares the database's chunk ids with the manifest's, with
    this process's ragcore: the summary SQLite computes, and (a manifest without one) reading
    every id and digesting them."""
    from ragcore.rag.collection import manifest, store

    conn = store.connect(os.path.join(path, store.DB_NAME), readonly=True)
    ways = {"the summary of every chunk id, in SQL": lambda: store.chunk_ids_summary(conn),
            "reading and digesting every chunk id": lambda: manifest.ids_digest(
                store.live_chunk_ids(conn))}
    out = {what: [] for what in ways}
    for _ in range(rounds):
        for what, way in ways.items():
            t = time.perf_counter()
            way()
            out[what].append(time.perf_counter() - t)
    conn.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--trees", nargs="+", required=True, help="src directories to compare")
    parser.add_argument("--results", default=None, help="the folder the result goes to")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "c")
        build(path, args.n)
        times = {tree: [] for tree in args.trees}
        for _ in range(args.rounds):
            for tree in args.trees:
                env = {**os.environ, "PYTHONPATH": os.path.abspath(tree)}
                out = subprocess.run([sys.executable, "-c", _OPEN, path], env=env, check=True,
                                     capture_output=True, text=True)
                times[tree].append(float(out.stdout))
        checks = _check_times(path, args.rounds)
    rows = [{"what": f"Collection.open, source tree {tree}", "median_ms": np.median(s) * 1000,
             "all_ms": ", ".join(f"{x * 1000:.0f}" for x in s)} for tree, s in times.items()]
    rows += [{"what": what, "median_ms": np.median(s) * 1000,
              "all_ms": ", ".join(f"{x * 1000:.0f}" for x in s)} for what, s in checks.items()]
    for row in rows:
        print(f"{row['what']}: median {row['median_ms']:.1f} ms ({row['all_ms']})")
    columns = [{"key": "what", "label": "step"}, {"key": "median_ms", "label": "median ms",
                                                   "format": ".1f"}, {"key": "all_ms", "label": "each ms"}]
    write_section("collection_open", "Collection.open: what the checks at open cost",
                  " ".join(["python", "bench/collection_open.py", *sys.argv[1:]]), threads=1,
                  order=55, intro=" ".join(__doc__.split("\n\n")[1].split()),
                  tables=[{"title": f"{args.n:,} chunks", "columns": columns, "rows": rows,
                           "notes": ["Opens alternate between the trees; the machine is shared, "
                                     "so the figures move with its load."]}],
                  out_dir=None if args.results is None else Path(args.results))


if __name__ == "__main__":
    main()
