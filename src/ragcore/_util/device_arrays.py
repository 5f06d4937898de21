"""CUDA arrays (cupy, torch, numba, ...) read through ``__cuda_array_interface__``.

A device array is passed to the kernels as a raw pointer, without a copy, when
it is float32 with contiguous rows; other float dtypes or layouts are converted
by the array's own library, with a CopyWarning (the same rule as on the CPU).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import CopyWarning

# Stream values of the interface that need no synchronisation with our work on
# the legacy default stream: none given, the legacy and the per-thread default.
ORDERED_STREAMS = (None, 1, 2)


@dataclass(frozen=True)
class DeviceMatrix:
    """A 2-D float32 matrix in device memory: pointer, shape, row stride (elements)."""

    owner: object  # keeps the memory alive while the pointer is in use
    ptr: int
    rows: int
    cols: int
    row_stride: int
    stream: int | None


def is_device_array(x) -> bool:
    return hasattr(x, "__cuda_array_interface__")


def library_of(x) -> str:
    """'torch', 'cupy' or the module name of another device array type."""
    return type(x).__module__.split(".")[0]


def as_device_matrix(x, name: str, dim: int) -> DeviceMatrix:
    """x as a DeviceMatrix of `dim` columns; a 1-D x is one row."""
    cai = x.__cuda_array_interface__
    shape = tuple(cai["shape"])
    if len(shape) == 1:
        shape = (1, shape[0])
    elif len(shape) != 2:
        raise ValueError(f"{name} must be 1-D (one vector) or 2-D (one vector per row), "
                         f"got {len(shape)}-D with shape {shape}")
    if shape[1] != dim:
        raise ValueError(f"{name} has {shape[1]} dimensions per vector, expected dim={dim}")
    dtype = np.dtype(cai["typestr"])
    if dtype != np.float32 or not _rows_contiguous(cai, shape, dtype.itemsize):
        if dtype.kind != "f":
            raise TypeError(f"{name} must hold floating-point numbers (float32 preferred), "
                            f"got dtype {dtype}")
        warnings.warn(f"{name}: converting a {dtype} device array with this layout to "
                      "contiguous float32 (a copy); pass contiguous float32 to avoid it",
                      CopyWarning, stacklevel=3)
        return as_device_matrix(_to_contiguous_float32(x, name), name, dim)
    strides = cai.get("strides")
    row_stride = shape[1] if strides is None or shape[0] <= 1 else strides[0] // dtype.itemsize
    ptr = int(cai["data"][0])
    return DeviceMatrix(x, ptr, shape[0], shape[1], row_stride, cai.get("stream"))


def _rows_contiguous(cai: dict, shape: tuple, item: int) -> bool:
    strides = cai.get("strides")
    if strides is None or shape[0] == 0:
        return True
    if len(strides) == 1:
        return strides[0] == item
    inner_ok = shape[1] <= 1 or strides[1] == item
    outer_ok = shape[0] <= 1 or (strides[0] >= item * shape[1] and strides[0] % item == 0)
    return inner_ok and outer_ok


def _to_contiguous_float32(x, name: str):
    lib = library_of(x)
    if lib == "torch":
        return x.detach().float().contiguous()
    if lib == "cupy":
        import cupy

        return cupy.ascontiguousarray(x, dtype=cupy.float32)
    raise TypeError(f"{name}: cannot convert a {type(x).__name__} device array; "
                    "pass contiguous float32 (e.g. a cupy array or a torch CUDA tensor)")


def empty_like_library(x, shape: tuple, dtype: str):
    """An uninitialised device array of x's library on x's device."""
    lib = library_of(x)
    if lib == "torch":
        import torch

        return torch.empty(shape, dtype=getattr(torch, dtype), device=x.device)
    if lib == "cupy":
        import cupy

        with cupy.cuda.Device(x.device.id):
            return cupy.empty(shape, dtype=dtype)
    raise TypeError(f"return_device=True supports torch and cupy queries, got {type(x).__name__}")


def device_pointer(x) -> int:
    return int(x.__cuda_array_interface__["data"][0])


def to_host(x, name: str) -> np.ndarray:
    """A numpy copy of a device array (used where a copy is needed anyway)."""
    lib = library_of(x)
    if lib == "torch":
        return x.detach().cpu().numpy()
    if lib == "cupy":
        return x.get()
    raise TypeError(f"{name}: cannot copy a {type(x).__name__} device array to the host; "
                    "pass a numpy array, a cupy array or a torch tensor")
