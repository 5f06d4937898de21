"""Writing a GPU benchmark's report (JSON and markdown); standard library only, as the
GPU machine runs these scripts without the CPU benchmarks' dependencies.

The JSON file carries the ragcore-bench/1 fields (bench/README.md) beside the script's own,
so that, copied to bench/results/, it is rendered as its own section of BENCHMARKS.md."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def section_fields(task: str, title: str, command: str, *, order: int, intro: str, device,
                   tables: list[dict], versions: dict | None = None, limits: dict | None = None,
                   notes: list[str] | None = None) -> dict:
    """The ragcore-bench/1 fields of a GPU run: this host's CPU, the device (None: none was
    used, as in a dry run) and the versions given beside ragcore's and numpy's."""
    from results_file import document

    doc = document(task, title, command, tables=tables, threads=1, order=order, intro=intro,
                   limits=limits, notes=notes)
    doc["machine"]["gpu"] = device
    doc["versions"].update({k: v for k, v in (versions or {}).items() if v})
    return doc


def command_line(argv: list[str] | None = None) -> str:
    """The command that ran this script, as the page shows it."""
    argv = sys.argv if argv is None else argv
    return " ".join(["python", f"bench/{Path(argv[0]).name}", *argv[1:]])


def write_json(path, report: dict) -> None:
    if path:
        with open(path, "w") as f:
            json.dump(report, f, indent=1)


def write_report(report: dict, json_path, markdown_path, markdown: str) -> None:
    """Writes the report where asked and prints its markdown."""
    write_json(json_path, report)
    if markdown_path:
        with open(markdown_path, "w") as f:
            f.write(markdown)
    print(markdown)
