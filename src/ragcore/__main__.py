"""Command line: ``python -m ragcore demo``."""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="ragcore", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="exact dense search on bundled synthetic data")
    demo.add_argument("--n", type=int, default=100_000, help="corpus vectors (default 100000)")
    demo.add_argument("--dim", type=int, default=384, help="dimensions (default 384)")
    demo.add_argument("--queries", type=int, default=256, help="queries (default 256)")
    demo.add_argument("--k", type=int, default=10, help="results per query (default 10)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from .demo import run_demo

        run_demo(n=args.n, dim=args.dim, n_queries=args.queries, k=args.k)
    return 0


if __name__ == "__main__":
    sys.exit(main())
