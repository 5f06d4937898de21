"""What the processor offers for int8 and bf16 matrix products, read at run time.

onnxruntime picks its own kernels from the same features (its MLAS library has
AMX, AVX-512 VNNI, AVX-VNNI and plain AVX2 paths for int8 products); this module
says which of them this CPU has, so that ragcore can choose a precision and
report which kernels a precision runs on. A platform where the flags cannot be
read reports none of them, and the int8 choice falls back to fp32.
"""

from __future__ import annotations

import functools
from pathlib import Path

INT8_FEATURES = ("amx_int8", "avx512_vnni", "avx_vnni")  # fastest first
BF16_FEATURES = ("amx_bf16", "avx512_bf16")


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset:
    """The CPU's feature flags (Linux /proc/cpuinfo); empty where unreadable."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def int8_kernels(flags=None) -> list[str]:
    """The int8 dot-product features present, fastest first ([] if none)."""
    flags = cpu_flags() if flags is None else flags
    return [f for f in INT8_FEATURES if f in flags]


def bf16_features(flags=None) -> list[str]:
    flags = cpu_flags() if flags is None else flags
    return [f for f in BF16_FEATURES if f in flags]


def fast_int8(flags=None) -> bool:
    """True where int8 products have a dot-product instruction (VNNI or AMX);
    without one, int8 saves little over fp32 and loses accuracy."""
    return bool(int8_kernels(flags))
