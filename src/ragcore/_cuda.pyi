"""Type stub of the private CUDA module ragcore._cuda (see cpp/bindings/cuda_bindings.cpp),
written by hand; tests/test_stubs.py fails when it and the built module differ.

Built only when nvcc is found at build time; use it through ragcore.dense.gpu and
ragcore.sparse.gpu. Metric and Storage are ragcore._core's enum types (the same objects).
"""

from typing import ClassVar

import numpy as np
import numpy.typing as npt

from ragcore._core import Metric as Metric
from ragcore._core import Storage as Storage
from ragcore._core import _NativeEnum

class GpuPath(_NativeEnum):
    Auto: ClassVar[GpuPath]  # 0
    Scan: ClassVar[GpuPath]  # 1
    Tiled: ClassVar[GpuPath]  # 2
    TensorCores: ClassVar[GpuPath]  # 3, fp16 / bf16 storage only

def device_count() -> int: ...
def device_name(device: int) -> str: ...
def device_memory(device: int) -> tuple[int, int]: ...
def synchronize_stream(stream: int) -> None: ...

class DeviceCorpus:
    @property
    def device_bytes(self) -> int: ...
    def __init__(self, device: int, dim: int, *, storage: Storage, metric: Metric) -> None: ...
    def append(
        self,
        rows: npt.NDArray[np.float32] | npt.NDArray[np.float16] | npt.NDArray[np.uint16],
        sq_norms: npt.NDArray[np.float32] | None,
        rank_of_row: npt.NDArray[np.int32],
        sorted_ids: npt.NDArray[np.int64],
    ) -> None: ...
    def clear(self) -> None: ...
    def __len__(self) -> int: ...
    def search_host(
        self, queries: npt.NDArray[np.float32], k: int, *, normalize: bool,
        path: GpuPath = GpuPath.Auto, first_chunk_rows: int = 0, max_chunk_rows: int = 0,
        max_group: int = 0,
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]: ...
    def search_device(
        self, queries: int, nq: int, stride: int, k: int, *, normalize: bool, out_scores: int,
        out_ids: int, path: GpuPath = GpuPath.Auto, first_chunk_rows: int = 0,
        max_chunk_rows: int = 0, max_group: int = 0,
    ) -> None: ...

class DeviceBm25:
    @property
    def device_bytes(self) -> int: ...
    @property
    def num_terms(self) -> int: ...
    @property
    def dense_min_df(self) -> int: ...
    def __init__(
        self, device: int, *, offsets: npt.NDArray[np.int64], docs: npt.NDArray[np.uint32],
        values: npt.NDArray[np.float32], rank_of_slot: npt.NDArray[np.int32],
        sorted_ids: npt.NDArray[np.int64], dense_min_df: int = 0,
    ) -> None: ...
    def search(
        self, terms: npt.NDArray[np.int64], weights: npt.NDArray[np.float64],
        offsets: npt.NDArray[np.int64], base: npt.NDArray[np.float64], k: int, *,
        exhaustive: bool = False, first_chunk_rows: int = 0, max_chunk_rows: int = 0,
        max_group: int = 0,
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        """(scores, ids, whether each query was scored exhaustively)."""
