"""``index.to(device)``: a CPU index finds its GPU version here, so it never imports it.

Each GPU module registers the class it mirrors when it is imported (ragcore's __init__
imports them all), which keeps the imports one way: GPU index -> CPU index.
"""

from __future__ import annotations

_GPU_VERSIONS: dict = {}  # CPU index class -> from_index(index, device)


def register_gpu_version(cpu_class, from_index) -> None:
    _GPU_VERSIONS[cpu_class] = from_index


def to_device(index, device):
    """index itself for "cpu"; for "cuda" / "cuda:N" / a device number, its GPU copy."""
    if isinstance(device, str) and device == "cpu":
        return index
    for cls in type(index).__mro__:
        if cls in _GPU_VERSIONS:
            return _GPU_VERSIONS[cls](index, device)
    raise ValueError(f"device: {type(index).__name__} has no GPU version; use 'cpu'")
