"""What a result file needs to be read later: machine, libraries, competing load."""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import re
import time
from pathlib import Path

# Result key -> distribution: ragcore's distribution is ragcore-engine (PyPI's "ragcore" is
# another project, whose version this must never report).
_LIBRARIES = {"ragcore": "ragcore-engine", "numpy": "numpy", "faiss-cpu": "faiss-cpu",
              "hnswlib": "hnswlib", "usearch": "usearch"}


def environment(threads: int) -> dict:
    versions = {}
    for name, distribution in _LIBRARIES.items():
        try:
            versions[name] = importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    from ... import _core

    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu": _cpu_model(), "cores": os.cpu_count(), "threads": threads,
        "python": platform.python_version(), "versions": versions,
        "ragcore_simd": _core.simd_level_name(_core.best_simd_level()),
        "openblas_coretype_env": os.environ.get("OPENBLAS_CORETYPE"),
    }


def _cpu_model() -> str:
    info = Path("/proc/cpuinfo")
    found = re.search(r"^model name\s*:\s*(.+)$", info.read_text() if info.exists() else "", re.M)
    return found.group(1).strip() if found else (platform.processor() or "unknown")


class CpuLoad:
    """Cores used by other processes (and stolen by the hypervisor) while it runs.

    The figures say how much a shared machine disturbed a measurement; Linux only
    (elsewhere they are None).
    """

    def __init__(self) -> None:
        self._start = self._sample()

    @staticmethod
    def _sample():
        try:
            fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
        except (OSError, ValueError):
            return None
        busy = sum(fields[0:3]) + fields[5] + fields[6]
        times = os.times()
        return time.perf_counter(), busy, fields[7], times.user + times.system

    def report(self) -> dict:
        end = self._sample()
        if self._start is None or end is None:
            return {"other_processes_cores": None, "steal_cores": None}
        tick = os.sysconf("SC_CLK_TCK")
        wall = max(end[0] - self._start[0], 1e-9)
        others = (end[1] - self._start[1]) / tick - (end[3] - self._start[3])
        return {"other_processes_cores": round(max(0.0, others) / wall, 2),
                "steal_cores": round((end[2] - self._start[2]) / tick / wall, 2)}
