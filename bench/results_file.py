"""Writes one bench/results/<name>.json in the schema bench/README.md documents.

    from results_file import write_section
    write_section("exact", "Exact dense top-k", command, tables=[...], summary=[...])

The machine (CPU model, cores, SIMD flags), the versions of the libraries named and the date
and commit are filled in here, so every result file carries them the same way.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
from pathlib import Path

SCHEMA = "ragcore-bench/1"
ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
# The SIMD features a reader needs to place a figure (the kernels choose among them).
FLAGS = ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16",
         "amx_bf16", "amx_int8", "asimd", "sve")


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return platform.processor() or platform.machine()


def cpu_flags() -> list[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                have = set(line.split(":", 1)[1].split())
                return [f for f in FLAGS if f in have]
    except OSError:
        pass
    return []


def machine(threads: int, load: str | None = None) -> dict:
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "threads": threads,
            "flags": cpu_flags(), "load": load or os.environ.get("RAGCORE_BENCH_LOAD"),
            "python": platform.python_version(),
            "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE")}


def versions(*distributions: str) -> dict:
    out = {}
    for name in ("ragcore-engine", "numpy", *distributions):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def commit() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def document(name: str, title: str, command: str, *, tables: list[dict], threads: int,
             order: int = 100, intro: str = "", plot: dict | None = None,
             summary: list[dict] | None = None, notes: list[str] | None = None,
             limits: dict | None = None, peers: tuple[str, ...] = (),
             extra: dict | None = None) -> dict:
    """One result file's contents: the fields given, with this machine, the versions of
    ragcore, numpy and `peers`, the date and the commit filled in."""
    doc = {"schema": SCHEMA, "task": name, "title": title, "order": order, "intro": intro,
           "command": command,
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "commit": commit(), "machine": machine(threads), "versions": versions(*peers),
           "limits": limits or {}, "tables": tables, "plot": plot, "summary": summary or [],
           "notes": notes or []}
    if extra:
        doc.update(extra)
    return doc


def write(doc: dict, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Whole or not at all: a run killed while writing (the fuzz driver rewrites its file
    # after every worker) leaves the previous file, not half of one.
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps(doc, indent=1, default=float) + "\n")
    os.replace(part, path)
    return path


def write_section(name: str, title: str, command: str, *, out_dir: Path | None = None,
                  **fields) -> Path:
    """Writes bench/results/<name>.json (or out_dir/<name>.json) and returns its path; the
    fields are those of document()."""
    return write(document(name, title, command, **fields), (out_dir or RESULTS) / f"{name}.json")


def table(title: str, columns: list, rows: list[dict], notes: list[str] | None = None) -> dict:
    return {"title": title, "columns": columns, "rows": rows, "notes": notes or []}
