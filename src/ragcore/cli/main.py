"""Command line: ``python -m ragcore demo``, ``models export``, ``bench ann``, ``index``,
``search`` and ``serve``."""

from __future__ import annotations

import argparse


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="ragcore", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="hybrid retrieval on the stdlib documentation corpus: "
                                        "quality and latency of BM25, dense, hybrid, reranked")
    _pipeline_options(demo)
    demo.add_argument("--docs", type=int, default=3000, help="documents sampled (default 3000)")
    demo.add_argument("--synthetic", action="store_true",
                      help="instead: exact dense search on synthetic vectors (FlatIndex dtypes)")
    evaluate = sub.add_parser("eval", help="the demo's evaluation on a BEIR-format folder or a "
                                           "built-in corpus")
    evaluate.add_argument("path", help="folder with corpus.jsonl, queries.jsonl, "
                                       "qrels/<split>.tsv, or a built-in corpus: debian_packages "
                                       "(this machine's package descriptions), man_pages (its "
                                       "manual pages) or stdlib_docs")
    evaluate.add_argument("--split", default="test")
    evaluate.add_argument("--docs", type=int, default=None,
                          help="built-in corpora: documents sampled (default all)")
    _pipeline_options(evaluate)
    models = sub.add_parser("models", help="bundled models")
    models_sub = models.add_subparsers(dest="action", required=True)
    export = models_sub.add_parser(
        "export", help="export the bundled all-MiniLM-L6-v2 to ONNX in the cache (needs torch)")
    export.add_argument("--force", action="store_true", help="export again even if cached")
    export.add_argument("--precision", choices=("fp32", "fp16"), default="fp32",
                        help="fp32 (default) or fp16 (the fp32 export converted, for GPUs)")
    models_sub.add_parser("derive", help="make (once) and check the fused fp32 and int8 models "
                          "derived from the bundled all-MiniLM-L6-v2 (no torch needed)")
    models_sub.add_parser("list", help="the bundled model names and where their files are")
    bench = sub.add_parser("bench", help="benchmarks")
    bench_sub = bench.add_subparsers(dest="suite", required=True)
    from .bench.ann import add_arguments as add_ann_arguments

    add_ann_arguments(bench_sub.add_parser(
        "ann", help="exhaustive vs approximate search: recall@k vs QPS, peers side by side"))
    from .collection_commands import add_arguments as add_collection_arguments

    add_collection_arguments(sub)
    from .serve_command import add_arguments as add_serve_arguments

    add_serve_arguments(sub)
    args = parser.parse_args(argv)
    if args.command == "serve":
        from .serve_command import run as run_serve

        return run_serve(args)
    if args.command in ("index", "search"):
        from .collection_commands import run as run_collection_command

        return run_collection_command(args)
    if args.command == "bench":
        from .bench.ann import run as run_ann

        return run_ann(args)
    if args.command == "models":
        return _models(args)
    if args.command == "demo" and args.synthetic:
        from .demo_synthetic import run_demo

        run_demo()
    elif args.command in ("demo", "eval"):
        from .demo_hybrid import main as run_pipeline

        return run_pipeline(args)
    return 0


def _pipeline_options(parser) -> None:
    from ..encoders.defaults import PRECISION_CHOICES

    parser.add_argument("--questions", type=int, default=300, help="questions (default 300)")
    parser.add_argument("--k0", type=int, default=50, help="first-stage candidates (default 50)")
    parser.add_argument("--k", type=int, default=10, help="results per question (default 10)")
    parser.add_argument("--chunk-size", type=int, default=200, help="tokens per chunk (default 200)")
    parser.add_argument("--overlap", type=int, default=40, help="tokens of overlap (default 40)")
    parser.add_argument("--latency-queries", type=int, default=100,
                        help="questions timed one at a time (default 100)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--precision", default="fp32", choices=PRECISION_CHOICES,
                        help="the bundled encoder's precision (encoders.default_encoder): fp32 "
                             "(default; the bundled int8 file where the fused fp32 cannot be "
                             "derived), auto, int8, int8-ffn-fp32, fp16 or int8-bundled (that int8 "
                             "file always)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def _models(args) -> int:
    from ..encoders import models
    from ..encoders.build import export

    if args.action == "export":
        path = export.export(force=args.force, precision=args.precision)
        print(f"exported and checked against PyTorch: {path}")
        return 0
    if args.action == "derive":
        from ..encoders.build import derived

        for name in models.DERIVED_RECIPES:
            print(f"{name}: derived and checked: {derived.ensure(name)}")
        return 0
    for name in (models.INT8_NAME, models.FP32_NAME, models.FP16_NAME, *models.DERIVED_RECIPES):
        try:
            print(f"{name}: {models.resolve(name).onnx_path}")
        except (FileNotFoundError, ModuleNotFoundError) as err:
            print(f"{name}: not available ({err})")
    return 0

