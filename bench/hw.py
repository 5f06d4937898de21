"""The hardware limits every throughput row is compared with: memory read bandwidth and the
peak arithmetic rates (fp32 FMA; bf16 dot, vdpbf16ps; int8 dot, VNNI vpdpbusd) of this CPU.

  - read bandwidth (GB/s, 1 GB = 1e9 bytes): a float32 array much larger than the caches summed
    by numpy and by bench/hw_peak.c's streaming read (eight loads in flight), on 1 thread and
    on every core (one Python thread per part; both drop the GIL), the best of several repeats;
  - peak rates: bench/hw_peak.c, compiled here with the system C compiler, runs 12 independent
    chains of one instruction, so the loop runs at that instruction's throughput; ops counted
    as 2 per multiply-add (a 512-bit FMA is 32 fp32 flops, a vdpbf16ps 64, a vpdpbusd 128);
    on 1 thread and on every core; a rate the CPU lacks is left out;
  - both timed by each thread's CPU time (time.thread_time), so that other processes on a
    shared machine do not lower the limits: they are what the cores do while they run;
  - sgemm (numpy float32 matmul, the shape of a batched search): what BLAS reaches of the peak.

Run:  python bench/hw.py [--quick]     (writes bench/results/hw.json, a ragcore-bench/1 file)
``limits()`` reads the file for the tasks (measuring first when it is missing).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_file import RESULTS, cpu_flags, write_section  # noqa: E402

HERE = Path(__file__).resolve().parent
CORES = os.cpu_count() or 1
# name: (C function, ops per instruction, flags it needs, restype)
PEAKS = {
    "fp32": [("fma512_loop", 32, ("avx512f",)), ("fma256_loop", 16, ("avx2", "fma"))],
    "bf16": [("bf16dot512_loop", 64, ("avx512f", "avx512_bf16"))],
    "int8": [("vnni512_loop", 128, ("avx512f", "avx512_vnni"))],
}
CHAINS = 12  # hw_peak.c's independent chains per loop step
INTRO = ("The 100% of every 'share of limit' column: a scan's share is the bytes it streams per "
         "second over the read bandwidth, a blocked product's its multiply-adds per second over "
         "the peak of the instruction it uses. The bandwidth is the best of numpy's sum and a "
         "streaming read with eight loads in flight per thread; a kernel whose prefetching "
         "keeps more in flight can still pass it (a share above 100%). The limits are timed by CPU time, the tasks by wall-clock time, so on a loaded "
         "machine the shares are low.")


def _in_threads(fn, args_per_thread) -> float:
    """The longest CPU time of the threads running fn(*args), one Python thread per args
    tuple (fn releases the GIL), all started together."""
    cpu = [0.0] * len(args_per_thread)

    def one(i, args):
        start = time.thread_time()
        fn(*args)
        cpu[i] = time.thread_time() - start

    workers = [threading.Thread(target=one, args=(i, a)) for i, a in enumerate(args_per_thread)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return max(cpu)


def read_bandwidth(nbytes: int, repeats: int) -> dict:
    """GB/s per thread count: the better of numpy's sum and hw_peak.c's streaming read (eight
    loads in flight per thread), each thread over its own part of the array."""
    data = np.ones(nbytes // 4, dtype=np.float32)  # ones: every page touched
    readers = [np.sum]
    lib, flags = _compile(), set(cpu_flags())
    if lib is not None:
        name, step = ("read512_loop", 128) if "avx512f" in flags else ("read256_loop", 64)
        if "avx512f" in flags or "avx2" in flags:
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_int64], ctypes.c_float
            readers.append(lambda part, fn=fn, step=step: fn(part.ctypes.data,
                                                              len(part) // step * step))
    out = {}
    for threads in sorted({1, CORES}):
        parts = [(p,) for p in np.array_split(data, threads)]
        best = min(_in_threads(r, parts) for r in readers for _ in range(repeats))
        out[threads] = data.nbytes / best / 1e9
    return out


def _compile() -> ctypes.CDLL | None:
    out = Path(tempfile.gettempdir()) / f"ragcore_hw_peak_{os.getuid()}.so"
    cc = os.environ.get("CC", "cc")
    try:
        subprocess.run([cc, "-O3", "-shared", "-fPIC", "-o", str(out), str(HERE / "hw_peak.c")],
                       check=True, capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"hw: no peak rates ({cc} failed: {exc})", file=sys.stderr)
        return None
    return ctypes.CDLL(str(out))


def peak_rates(seconds: float) -> dict:
    """{kind: {"instruction", threads: Gop/s}} for the kinds this CPU has."""
    lib, flags, out = _compile(), set(cpu_flags()), {}
    if lib is None:
        return out
    for kind, choices in PEAKS.items():
        for name, ops, needs in choices:
            if not set(needs) <= flags:
                continue
            fn = getattr(lib, name)
            fn.argtypes = [ctypes.c_int64]
            fn.restype = ctypes.c_float if kind != "int8" else ctypes.c_int32
            iters = 1 << 16
            while _in_threads(fn, [(iters,)]) < seconds / 4:
                iters *= 2
            rates = {"instruction": name}
            for threads in sorted({1, CORES}):
                best = min(_in_threads(fn, [(iters,)] * threads) for _ in range(5))
                rates[threads] = threads * iters * CHAINS * ops / best / 1e9
            out[kind] = rates
            break
    return out


def sgemm_gflops(threads: int, n: int = 20_000, nq: int = 1024, d: int = 384) -> float:
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    q = rng.standard_normal((nq, d), dtype=np.float32)
    x = rng.standard_normal((n, d), dtype=np.float32)
    with threadpool_limits(threads, user_api="blas"):
        q @ x[:1000].T
        best = min(_timed(lambda: q @ x.T) for _ in range(3))
    return 2.0 * nq * n * d / best / 1e9


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(quick: bool) -> dict:
    bandwidth = read_bandwidth((256 << 20) if quick else (1 << 30), 3 if quick else 6)
    peaks = peak_rates(0.2 if quick else 1.0)
    sgemm = {t: sgemm_gflops(t) for t in sorted({1, CORES})}
    limits = {"bandwidth_gbps_1t": bandwidth[1], "bandwidth_gbps": bandwidth[CORES],
              "sgemm_gflops": sgemm[CORES]}
    for kind, rates in peaks.items():
        limits[f"{kind}_gops_1t"], limits[f"{kind}_gops"] = rates[1], rates[CORES]
    return {"bandwidth": bandwidth, "peaks": peaks, "sgemm": sgemm, "limits": limits}


def write(hw: dict, command: str, out_dir: Path | None = None) -> Path:
    names = {"fp32": "fp32 FMA peak (GFLOP/s)", "bf16": "bf16 dot peak, vdpbf16ps (GFLOP/s)",
             "int8": "int8 dot peak, VNNI vpdpbusd (GOP/s)"}
    rows = [{"measure": "memory read bandwidth (GB/s)", "one": hw["bandwidth"][1],
             "all": hw["bandwidth"][CORES],
             "how": "numpy sum or bench/hw_peak.c read512_loop, 1 GB = 1e9 bytes"}]
    rows += [{"measure": names[kind], "one": r[1], "all": r[CORES],
              "how": f"bench/hw_peak.c {r['instruction']}"} for kind, r in hw["peaks"].items()]
    rows.append({"measure": "numpy sgemm (GFLOP/s)", "one": hw["sgemm"][1],
                 "all": hw["sgemm"][CORES], "how": "float32 1024x384 @ 384x20000"})
    columns = [{"key": "measure", "label": "limit"},
               {"key": "one", "label": "1 thread", "format": ",.1f"},
               {"key": "all", "label": f"{CORES} threads", "format": ",.1f"},
               {"key": "how", "label": "measured with"}]
    return write_section(
        "hw", "The machine and its limits", command, threads=CORES, order=0,
        intro=INTRO,
        tables=[{"title": "", "columns": columns, "rows": rows, "notes": []}],
        limits=hw["limits"], peers=("threadpoolctl",), out_dir=out_dir)


def limits(path: Path = RESULTS / "hw.json") -> dict:
    """The limits of bench/results/hw.json (measured quickly first when missing)."""
    if not path.exists():
        write(measure(quick=True), "python bench/hw.py --quick")
    return json.loads(path.read_text())["limits"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller arrays, shorter loops")
    args = parser.parse_args()
    hw = measure(args.quick)
    path = write(hw, "python bench/hw.py" + (" --quick" if args.quick else ""))
    print(json.dumps(hw["limits"], indent=1), "\n->", path)


if __name__ == "__main__":
    main()
