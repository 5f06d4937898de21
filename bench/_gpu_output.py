"""Writing a GPU benchmark's report (JSON and markdown); standard library only, as the
GPU machine runs these scripts without the CPU benchmarks' dependencies."""

from __future__ import annotations

import json


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
