"""The CUDA module and device numbers, shared by the GPU indexes."""

from __future__ import annotations

import numpy as np


def cuda_module():
    try:
        from .. import _cuda
    except ImportError:
        raise RuntimeError(
            "ragcore was built without CUDA support (no nvcc at build time); "
            "reinstall on a machine with the CUDA toolkit to use the GPU"
        ) from None
    return _cuda


def cuda_device_count() -> int:
    """Number of CUDA devices ragcore can use (0 without a driver, a GPU or CUDA support)."""
    try:
        return cuda_module().device_count()
    except RuntimeError:
        return 0


def parse_device(device) -> int:
    if isinstance(device, (int, np.integer)) and not isinstance(device, bool):
        index = int(device)
    elif isinstance(device, str) and (device == "cuda" or device.startswith("cuda:")):
        suffix = device[5:]
        if suffix and not suffix.isdigit():
            raise ValueError(f"device must be 'cuda', 'cuda:N' or an integer, got {device!r}")
        index = int(suffix) if suffix else 0
    else:
        raise ValueError(f"device must be 'cuda', 'cuda:N' or an integer, got {device!r}")
    count = cuda_module().device_count()
    if not 0 <= index < count:
        raise RuntimeError(
            f"device: CUDA device {index} is not available ({count} device(s) found)"
        )
    return index


class HostBackedGpuIndex:
    """What the GPU indexes share: a CPU copy of the index (``_host``), which answers
    for the ids and the size, on CUDA device number ``_device``."""

    _host: object
    _device: int

    @property
    def device(self) -> str:
        return f"cuda:{self._device}"

    @property
    def ids(self) -> np.ndarray:
        return self._host.ids

    def __len__(self) -> int:
        return len(self._host)
