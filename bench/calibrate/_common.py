"""Shared helpers of the calibration scripts: BLAS environment, timing, data, reporting.

Importing this module first matters: if OPENBLAS_CORETYPE is set (the test
machines set it to Haswell), the process re-executes itself without it, before
numpy loads OpenBLAS, so that every BLAS picks its own kernel for this CPU. The
kernel each BLAS actually picked is recorded by ``blas_info()``.
"""

from __future__ import annotations

import os
import sys

_CORETYPE = "OPENBLAS_CORETYPE"


def _reexec_without_coretype() -> None:
    if _CORETYPE not in os.environ:
        return
    if "numpy" in sys.modules:
        raise RuntimeError("bench/_common.py must be imported before numpy")
    if sys.argv[0] in ("", "-"):  # interactive or stdin: nothing to re-execute
        raise RuntimeError(f"unset {_CORETYPE} before running benchmark code this way")
    env = {k: v for k, v in os.environ.items() if k != _CORETYPE}
    argv = list(getattr(sys, "orig_argv", [sys.executable, *sys.argv]))
    os.execve(sys.executable, [sys.executable, *argv[1:]], env)


_reexec_without_coretype()

import contextlib  # noqa: E402
import datetime  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import shlex  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict, dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import threadpoolctl  # noqa: E402

# The calibration figures: printed, and kept here (not on the results page).
RESULTS_DIR = Path(__file__).resolve().parent / "results"
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # bench/: _zipf


# ---- environment -------------------------------------------------------------


def blas_info() -> list[dict]:
    """The BLAS / OpenMP libraries loaded in this process and what they picked."""
    keys = ("user_api", "internal_api", "prefix", "version", "architecture",
            "threading_layer", "num_threads")
    out = []
    for lib in threadpoolctl.threadpool_info():
        row = {key: lib.get(key) for key in keys}
        row["file"] = os.path.basename(lib.get("filepath", ""))
        out.append(row)
    return out


def blas_summary(info: list[dict]) -> str:
    """One line: 'openblas 0.3.31 SkylakeX (libscipy_openblas...so), ...'."""
    parts = [f"{r['internal_api']} {r['version']} kernel={r['architecture']} ({r['file']})"
             for r in info if r["user_api"] == "blas"]
    return "; ".join(parts) or "none loaded"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_flags() -> list[str]:
    wanted = ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_bf16", "avx512_fp16",
              "amx_tile", "amx_bf16")
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                have = set(line.split(":", 1)[1].split())
                return [f for f in wanted if f in have]
    except OSError:
        pass
    return []


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=Path(__file__).resolve().parent,
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def ragcore_info() -> dict:
    """Version, SIMD level and which build: the installed native module's hash and
    time, and the repository's commit (with whether the native sources differ from it)."""
    import ragcore
    from ragcore import _core
    from ragcore.dense._storage import NATIVE_STORAGE, STORAGE_DTYPES

    level = _core.best_simd_level()
    so = Path(_core.__file__)
    dirty = _git("status", "--porcelain", "--", "cpp", "src", "CMakeLists.txt", "pyproject.toml")
    return {
        "version": ragcore.__version__,
        "simd_level": _core.simd_level_name(level),
        "blocked_path_min_batch": {
            dtype: _core.blocked_path_min_batch(level, NATIVE_STORAGE[dtype])
            for dtype in STORAGE_DTYPES},
        "native_module_sha256": _native_module_sha256(),
        "native_module_mtime": datetime.datetime.fromtimestamp(
            so.stat().st_mtime).astimezone().isoformat(timespec="seconds"),
        "git_head": _git("rev-parse", "--short", "HEAD"),
        "git_native_sources_modified": None if dirty is None else bool(dirty),
    }


def _native_module_sha256() -> str:
    from ragcore import _core

    return hashlib.sha256(Path(_core.__file__).read_bytes()).hexdigest()[:16]


def ragcore_reinstalled(info: dict) -> str | None:
    """A warning if the installed native module is no longer the one hashed in info
    (take info at start-up, when the module was loaded, and call this at the end)."""
    now = _native_module_sha256()
    if now == info["native_module_sha256"]:
        return None
    return (f"ragcore was reinstalled during the run (native module now {now}); the results "
            f"are for the module loaded at start-up, {info['native_module_sha256']}")


def ragcore_build_line(info: dict) -> str:
    """'ragcore 0.1.0 (module a1b2..., built 2026-..., repo at abc123[, modified])'."""
    modified = ", sources modified since" if info.get("git_native_sources_modified") else ""
    return (f"ragcore {info['version']} (native module sha256 {info['native_module_sha256']}, "
            f"installed {info['native_module_mtime']}; repository at {info['git_head']}"
            f"{modified})")


def environment() -> dict:
    """What a result file needs to be read later: machine, libraries, command."""
    argv = list(getattr(sys, "orig_argv", [sys.executable, *sys.argv]))
    return {
        "command": shlex.join(["python", *argv[1:]]),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu": cpu_model(),
        "cpu_flags": cpu_flags(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "openblas_coretype_env": os.environ.get(_CORETYPE),
        "blas": blas_info(),
        "ragcore": ragcore_info(),
    }


def _proc_stat_cpu() -> tuple[float, float]:
    """(busy, steal) CPU seconds of all CPUs since boot, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    tick = os.sysconf("SC_CLK_TCK")
    return (user + nice + system + irq + softirq) / tick, steal / tick


def _own_cpu() -> float:
    t = os.times()
    return t.user + t.system


class LoadMeter:
    """What else used the CPUs since creation: other processes and the hypervisor.

    The machine is a small shared VM; other processes (builds, tests) or a busy
    neighbour (steal) slow the benchmarks down, 2-thread figures most of all.
    """

    def __init__(self) -> None:
        self._t0, self._own0 = time.perf_counter(), _own_cpu()
        self._busy0, self._steal0 = _proc_stat_cpu()

    def report(self) -> dict:
        wall = max(time.perf_counter() - self._t0, 1e-9)
        busy, steal = _proc_stat_cpu()
        others = max(0.0, (busy - self._busy0) - (_own_cpu() - self._own0))
        return {"wall_s": round(wall, 2),
                "other_processes_cores": round(others / wall, 2),
                "steal_cores": round((steal - self._steal0) / wall, 2)}


# Other processes + steal above this many cores during a measurement: it is
# flagged (crossover.py).
BUSY_CORES = 0.2


def foreign_cores(load: dict) -> float:
    """Cores taken by other processes and the hypervisor, from LoadMeter.report()."""
    return round(load["other_processes_cores"] + load["steal_cores"], 2)


def wait_until_quiet(max_wait_s: float = 120.0, sample_s: float = 0.3,
                     busy_cores: float = 0.15) -> float:
    """Sleeps until other processes use < busy_cores for a sample; returns seconds waited."""
    t0 = time.perf_counter()
    while True:
        meter = LoadMeter()
        time.sleep(sample_s)
        load = meter.report()
        quiet = load["other_processes_cores"] + load["steal_cores"] < busy_cores
        waited = time.perf_counter() - t0
        if quiet or waited >= max_wait_s:
            if not quiet:
                print(f"  (machine still busy after {waited:.0f} s: {load}; measuring anyway)")
            return waited


@contextlib.contextmanager
def blas_threads(n: int):
    """Limits every BLAS and OpenMP pool in the process to n threads."""
    with threadpoolctl.threadpool_limits(limits=n):
        yield


# ---- data --------------------------------------------------------------------


def unit_vectors(n: int, d: int, seed: int, chunk: int = 65536) -> np.ndarray:
    """n random unit-norm float32 rows (seeded; built in chunks, no float64 copy)."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, d), dtype=np.float32)
    for start in range(0, n, chunk):
        block = out[start : start + chunk]
        rng.standard_normal(out=block, dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
    return out


def recall_at_k(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean over queries of |found ∩ truth| / k (ids arrays of shape [nq, k])."""
    k = truth.shape[1]
    hits = [len(np.intersect1d(f, t)) for f, t in zip(found, truth)]
    return float(np.mean(hits)) / k


# ---- timing ------------------------------------------------------------------


@dataclass
class Timing:
    """Median of timed repeats after one warm-up call (seconds per call)."""

    median: float
    warmup: float
    times: list[float] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _timed(fn):
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def repeats_for(warm_s: float, target_s: float = 0.5, min_repeats: int = 3,
                max_repeats: int = 200, slow_call_s: float = 1.5,
                slow_budget_s: float = 4.0) -> int:
    """Timed calls after a warm-up of warm_s: enough for >= target_s and >= min_repeats.

    Calls slower than slow_call_s get fewer repeats (at least 1), so that one
    cell costs about slow_budget_s: this bounds the runtime of big cells.
    """
    if warm_s >= slow_call_s:
        return max(1, min(min_repeats, int(slow_budget_s // warm_s)))
    return min(max_repeats, max(min_repeats, math.ceil(target_s / max(warm_s, 1e-9))))


def time_calls(fns: dict, rounds: int = 3, settle_s: float = 0.0,
               **repeat_args) -> tuple[dict, dict]:
    """Times several functions interleaved: one warm-up each, then `rounds` rounds
    in which each function runs its share of its repeats back to back.

    On a shared VM the machine slows down for seconds at a time; interleaving
    puts every function into the same slow and fast phases, so their ratios
    stay honest. settle_s: a pause before each function's turn, so that the
    worker threads of the previous library (OpenBLAS and OpenMP spin for a
    while after a call) are asleep and do not compete for the cores.
    Returns ({name: Timing}, {name: last result}).
    """
    warm, results, times = {}, {}, {name: [] for name in fns}
    for name, fn in fns.items():
        time.sleep(settle_s)
        warm[name], results[name] = _timed(fn)
    plan = {name: repeats_for(warm[name], **repeat_args) for name in fns}
    for r in range(max(1, min(rounds, max(plan.values())))):
        for name, fn in fns.items():
            share = math.ceil(plan[name] / rounds) if r < plan[name] else 0
            if share:
                time.sleep(settle_s)
            for _ in range(share):
                dt, results[name] = _timed(fn)
                times[name].append(dt)
    timings = {name: Timing(statistics.median(times[name]), warm[name], times[name])
               for name in fns}
    return timings, results


def time_call(fn, **repeat_args):
    """Times fn() (see time_calls); returns (Timing, the last result of fn)."""
    timings, results = time_calls({"fn": fn}, rounds=1, **repeat_args)
    return timings["fn"], results["fn"]


def time_best(fn, repeats: int) -> float:
    """Best of repeats calls after one warm-up (for hardware peaks)."""
    fn()
    return min(_timed(fn)[0] for _ in range(repeats))


# ---- output ------------------------------------------------------------------


def write_json(path: Path, payload: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {path}")


def write_text(path: Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    print(f"wrote {path}")


def json_roundtrip(payload: dict) -> dict:
    """payload as it reads back from JSON (int keys become strings)."""
    return json.loads(json.dumps(payload))


def read_json(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def markdown_table(headers: list[str], rows: list[list], align: str | None = None) -> str:
    """A GitHub Markdown table; align is one char per column: 'l' or 'r' (default r)."""
    align = align or "l" + "r" * (len(headers) - 1)
    rule = ["---" if a == "l" else "---:" for a in align]
    lines = [headers, rule, *[[str(c) for c in r] for r in rows]]
    return "\n".join("| " + " | ".join(line) + " |" for line in lines)


def text_table(headers: list[str], rows: list[list]) -> str:
    """A plain fixed-width table for the terminal."""
    cells = [headers, *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    fmt = "  ".join(f"{{:>{w}}}" for w in widths)
    return "\n".join(fmt.format(*r) for r in cells)


def fmt_num(x: float | None, digits: int = 3) -> str:
    """Three significant figures, no exponent for everyday magnitudes."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if x == 0:
        return "0"
    mag = math.floor(math.log10(abs(x)))
    decimals = max(0, digits - 1 - mag)
    return f"{x:,.{decimals}f}"
