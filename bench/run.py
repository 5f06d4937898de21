"""The benchmark suite: runs the tasks on this machine, then renders BENCHMARKS.md.

    python bench/run.py --mode smoke|quick|full [--task exact ann ...] [--results DIR]
                        [--page BENCHMARKS.md] [--no-report]

Each task reads its grid from bench/grids/<task>.toml (the table named by --mode), measures
every adapter of bench/peers/ whose library is installed, and writes bench/results/<task>.json
(bench/README.md: the schema). The hardware limits (bench/hw.py) are measured first.
"""

from __future__ import annotations

import os


def _blas_kernel() -> None:
    """Every OpenBLAS in the process on its AVX-512 kernel where the CPU has it: faiss-cpu's
    bundled OpenBLAS is older than this CPU and would fall back to a slow generic kernel, and a
    machine-wide OPENBLAS_CORETYPE (Haswell on the test machines) would hold every BLAS peer
    to AVX2. Set before numpy loads; RAGCORE_BENCH_CORETYPE overrides it."""
    try:
        flags = next((line for line in open("/proc/cpuinfo") if line.startswith("flags")), "")
    except OSError:
        flags = ""
    wanted = os.environ.get("RAGCORE_BENCH_CORETYPE") or ("SkylakeX" if " avx512f" in flags
                                                          else None)
    if wanted:
        os.environ["OPENBLAS_CORETYPE"] = wanted
    else:
        os.environ.pop("OPENBLAS_CORETYPE", None)


_blas_kernel()

import argparse  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tomllib  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import hw  # noqa: E402
import report  # noqa: E402
from tasks import TASKS  # noqa: E402


def grid(task: str, mode: str) -> dict:
    with open(HERE / "grids" / f"{task}.toml", "rb") as f:
        return tomllib.load(f)[mode]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=("smoke", "quick", "full"), default="quick")
    parser.add_argument("--task", nargs="+", choices=TASKS, default=list(TASKS))
    parser.add_argument("--results", type=Path, default=HERE / "results")
    parser.add_argument("--page", type=Path, default=HERE.parent / "BENCHMARKS.md")
    parser.add_argument("--plots", type=Path, default=HERE / "plots")
    parser.add_argument("--no-report", action="store_true", help="do not render the page")
    parser.add_argument("--no-hw", action="store_true",
                        help="use the limits already in the results folder")
    args = parser.parse_args(argv)
    args.results.mkdir(parents=True, exist_ok=True)
    hw_file = args.results / "hw.json"
    if not (args.no_hw and hw_file.exists()):
        quick = args.mode != "full"
        hw.write(hw.measure(quick), "python bench/hw.py" + (" --quick" if quick else ""),
                 out_dir=args.results)
    limits = hw.limits(hw_file)
    failed = []
    for task in args.task:
        command = f"python bench/run.py --mode {args.mode} --task {task}"
        start = time.perf_counter()
        try:
            module = importlib.import_module(f"tasks.{task}")
            path = module.run(grid(task, args.mode), args.results, command, limits)
            elapsed = time.perf_counter() - start
            doc = json.loads(Path(path).read_text())
            doc["elapsed_s"] = round(elapsed, 1)
            Path(path).write_text(json.dumps(doc, indent=1) + "\n")
            print(f"{task}: {path} ({elapsed:.0f} s)", flush=True)
        except Exception:  # one task's failure must not hide the others' results
            traceback.print_exc()
            failed.append(task)
    if not args.no_report:
        text = report.render(args.results, args.page, args.plots)
        args.page.write_text(text.rstrip() + "\n")
        print(f"{args.page}: {len(text.encode()):,} bytes")
    if failed:
        print(f"failed: {' '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
