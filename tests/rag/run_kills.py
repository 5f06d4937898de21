"""Kills a Collection writer with SIGKILL at random points of add / upsert / delete /
compact (default 250 times) and checks the collection after each reopen; prints the counts.

    .venv/bin/python tests/rag/run_kills.py [--kills 250] [--seed 0] [--dense hnsw]

The harness is tests/rag/_kill_harness.py (test_collection_kill.py runs 30 kills of it).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _kill_harness  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=250)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-delay", type=float, default=0.25,
                        help="seconds: each kill comes uniformly within this after the writer starts")
    parser.add_argument("--dense", default="flat", choices=("flat", "ivf", "hnsw"),
                        help="the collection's dense index")
    args = parser.parse_args()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as directory:
        counts = _kill_harness.run(directory, args.kills, args.seed, args.max_delay,
                                   log=lambda line: print(line, file=sys.stderr, flush=True),
                                   dense=args.dense)
    for name, value in counts.items():
        print(f"{name:36s} {value}")
    print(f"{'seconds':36s} {time.perf_counter() - start:.1f}")
    print("every check passed: no acknowledged write lost, no partial document, searches equal "
          "a fresh build after every kill")


if __name__ == "__main__":
    main()
