"""Command line: ``python -m ragcore demo``, ``models export`` and ``bench ann``."""

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
    models = sub.add_parser("models", help="bundled models")
    models_sub = models.add_subparsers(dest="action", required=True)
    export = models_sub.add_parser(
        "export", help="export the bundled all-MiniLM-L6-v2 to ONNX in the cache (needs torch)")
    export.add_argument("--force", action="store_true", help="export again even if cached")
    models_sub.add_parser("list", help="the bundled model names and where their files are")
    bench = sub.add_parser("bench", help="benchmarks")
    bench_sub = bench.add_subparsers(dest="suite", required=True)
    from .bench.ann import add_arguments as add_ann_arguments

    add_ann_arguments(bench_sub.add_parser(
        "ann", help="exhaustive vs approximate search: recall@k vs QPS, peers side by side"))
    args = parser.parse_args(argv)
    if args.command == "bench":
        from .bench.ann import run as run_ann

        return run_ann(args)
    if args.command == "models":
        return _models(args)
    if args.command == "demo":
        from .demo import run_demo

        run_demo(n=args.n, dim=args.dim, n_queries=args.queries, k=args.k)
    return 0


def _models(args) -> int:
    from . import models

    if args.action == "export":
        path = models.export(force=args.force)
        print(f"exported and checked against PyTorch: {path}")
        return 0
    for name in (models.INT8_NAME, models.FP32_NAME):
        try:
            print(f"{name}: {models.resolve(name).onnx_path}")
        except (FileNotFoundError, ModuleNotFoundError) as err:
            print(f"{name}: not available ({err})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
