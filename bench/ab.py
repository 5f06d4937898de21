"""Two (or more) builds of ragcore measured in turns on the suite's tasks.

    python bench/ab.py --build a=PATH --build b=PATH [--rounds 3] [--mode quick] -- TASK ...

A build is a folder holding an importable ``ragcore`` package (a source tree's src/ with its
compiled _core beside the Python files, or a virtual environment's site-packages), put first
on PYTHONPATH, or a Python interpreter with ragcore installed. Each round runs every task once
per build, each in a fresh process (bench/run.py --no-report, the same hardware limits), the
order of the builds rotated every round, so that a busier minute of a shared machine hits
each build alike. Per table row of ragcore's adapters (same peer and settings), the measure
(--measure, default: the task plot's y, e.g. QPS) is the best over rounds; the table prints
each build's figure and its ratio to the first build's. The merged rows are written to
bench/results/ab/<task>.json (a ragcore-bench/1 file; the page leaves subfolders out).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import builds  # noqa: E402
import hw  # noqa: E402
from results_file import RESULTS, table, write_section  # noqa: E402


def command_for(path: Path, argv: list[str]) -> tuple[list[str], dict]:
    if path.is_file():  # an interpreter with its own ragcore
        return [str(path), str(HERE / "run.py"), *argv], dict(os.environ)
    return [sys.executable, str(HERE / "run.py"), *argv], builds.environment(path)


def row_key(row: dict, measure: str) -> tuple:
    return tuple(sorted((k, v) for k, v in row.items()
                        if k != measure and not isinstance(v, float)))


def merge(docs: list[dict], measure: str) -> dict:
    """{row key: (row, best measure over rounds)} for ragcore's rows."""
    best = {}
    for doc in docs:
        for r in doc["tables"][0]["rows"]:
            if not str(r.get("peer", "ragcore")).startswith("ragcore") or r.get(measure) is None:
                continue
            key = row_key(r, measure)
            if key not in best or r[measure] > best[key][1]:
                best[key] = (r, r[measure])
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", action="append", type=builds.parse, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mode", choices=("smoke", "quick", "full"), default="quick")
    parser.add_argument("--measure", help="the row value compared (default: the plot's y)")
    parser.add_argument("--out", type=Path, default=RESULTS / "ab")
    parser.add_argument("tasks", nargs="+")
    args = parser.parse_args(argv)
    if len(args.build) < 2:
        parser.error("give two builds or more (--build a=PATH --build b=PATH)")
    names = [n for n, _ in args.build]
    if len(set(names)) != len(names):
        parser.error(f"build names repeat: {names}")
    work = Path(tempfile.mkdtemp(prefix="ragcore-ab-"))
    hw.write(hw.measure(quick=True), "python bench/hw.py --quick", out_dir=work)
    docs = {(n, t): [] for n in names for t in args.tasks}
    try:
        for rnd, name, path in builds.in_turns(args.build, args.rounds):
            out = work / name / str(rnd)
            out.mkdir(parents=True)
            shutil.copy(work / "hw.json", out / "hw.json")
            cmd, env = command_for(path, ["--mode", args.mode, "--task", *args.tasks,
                                          "--results", str(out), "--no-report", "--no-hw"])
            print(f"round {rnd + 1}/{args.rounds}: {name}", flush=True)
            if subprocess.run(cmd, env=env).returncode != 0:
                print(f"{name} failed in round {rnd + 1}", file=sys.stderr)
                return 1
            for task in args.tasks:
                docs[(name, task)].append(json.loads((out / f"{task}.json").read_text()))
        for task in args.tasks:
            first = docs[(names[0], task)][0]
            measure = args.measure or (first.get("plot") or {}).get("y") or "qps"
            merged = {n: merge(docs[(n, task)], measure) for n in names}
            rows = []
            for key, (row, base) in merged[names[0]].items():
                out_row = {k: v for k, v in row.items() if not isinstance(v, float)}
                for n in names:
                    value = merged[n].get(key, (None, None))[1]
                    out_row[n] = value
                    if n != names[0]:
                        out_row[f"{n}/{names[0]}"] = value / base if value and base else None
                rows.append(out_row)
            keys = [k for k in rows[0] if k not in names and "/" not in k] if rows else []
            columns = ([{"key": k, "label": k} for k in keys]
                       + [{"key": n, "label": f"{n} {measure}", "format": ",.1f"} for n in names]
                       + [{"key": f"{n}/{names[0]}", "label": f"{n} / {names[0]}",
                           "format": ".3f"} for n in names[1:]])
            build_list = ", ".join(f"{n} = {p}" for n, p in args.build)
            path = write_section(
                task, f"A/B: {first['title']}", "python bench/ab.py " + " ".join(
                    f"--build {n}={p}" for n, p in args.build) + f" --rounds {args.rounds} "
                f"--mode {args.mode} -- {' '.join(args.tasks)}",
                tables=[table("", columns, rows, [f"builds: {build_list}; best of {args.rounds} "
                                                  "rounds, builds in turns"])],
                threads=first["machine"]["threads"], out_dir=args.out)
            from report import markdown_table

            print(f"\n{task} ({measure}):\n" + markdown_table({"columns": columns, "rows": rows}))
            print(f"-> {path}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
