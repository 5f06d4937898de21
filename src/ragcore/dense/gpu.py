"""GpuFlatIndex: exact dense top-k with the corpus resident on a CUDA device.

A separate class rather than ``FlatIndex(device="cuda")``: the GPU index owns
device memory, accepts device arrays (cupy, torch CUDA tensors) without a copy
and can return results on the device, none of which the CPU index should import
or branch on. The interface is the same (add, remove, search, save, load), and
``FlatIndex.to("cuda")`` / ``GpuFlatIndex.to("cpu")`` move between the two.

The index keeps a host copy of its vectors (a CPU FlatIndex): add and remove
are validated and applied there first, save writes it, and it is the answer
``to("cpu")`` gives. The cost is host memory equal to the corpus size.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from .._util.arrays import as_float_matrix, check_positive_int
from .._util.device_arrays import (
    ORDERED_STREAMS,
    as_device_matrix,
    device_pointer,
    empty_like_library,
    is_device_array,
    to_host,
)
from .._util.cuda import HostBackedGpuIndex, cuda_module, parse_device
from ._storage import NATIVE_STORAGE
from .._util.devices import register_gpu_version
from ._metric import NATIVE_METRIC
from .flat import FlatIndex
from ..hits import Hits


@dataclass(frozen=True)
class DeviceHits:
    """Search results left on the device, in the queries' array type (torch or cupy)."""

    scores: object
    ids: object

    def to_hits(self) -> Hits:
        return Hits(np.ascontiguousarray(to_host(self.scores, "scores")),
                    np.ascontiguousarray(to_host(self.ids, "ids")))


class GpuFlatIndex(HostBackedGpuIndex):
    """Exact top-k search with the corpus on a CUDA device; see FlatIndex for the arguments.

    Args:
        dim, metric, dtype: as for FlatIndex ("float32", "float16" or
            "bfloat16" storage on the device).
        device: "cuda", "cuda:N" or a device number.
    """

    def __init__(self, dim: int, metric: str = "ip", dtype: str = "float32", device="cuda"):
        self._host = FlatIndex(dim, metric, dtype)
        self._device = parse_device(device)
        self._corpus = cuda_module().DeviceCorpus(
            self._device, self._host.dim, storage=NATIVE_STORAGE[dtype],
            metric=NATIVE_METRIC[metric])
        self._lock = threading.Lock()
        # Private knobs for tests and benchmarks: path (a _cuda.GpuPath),
        # first_chunk_rows, max_chunk_rows, max_group.
        self._search_options: dict = {}

    @classmethod
    def from_index(cls, index: FlatIndex, device="cuda") -> GpuFlatIndex:
        """A GPU copy of a CPU FlatIndex (same ids, vectors and parameters)."""
        gpu = cls(index.dim, index.metric, index.dtype, device)
        gpu._host = index.copy()
        with gpu._lock:
            gpu._upload_from(0)
        return gpu

    @property
    def dim(self) -> int:
        return self._host.dim

    @property
    def metric(self) -> str:
        return self._host.metric

    @property
    def dtype(self) -> str:
        return self._host.dtype

    @property
    def device_bytes(self) -> int:
        """Device memory held by the corpus (rows padded to 16 elements, ids, norms)."""
        return self._corpus.device_bytes

    def __repr__(self) -> str:
        return (f"GpuFlatIndex(dim={self.dim}, metric={self.metric!r}, dtype={self.dtype!r}, "
                f"device={self.device!r}, n={len(self)})")

    def to(self, device):
        """'cpu' gives a FlatIndex copy; a CUDA device gives a GpuFlatIndex copy there."""
        if device == "cpu":
            return self._host.copy()
        return GpuFlatIndex.from_index(self._host, device)

    # ---- mutation -------------------------------------------------------

    def add(self, vectors, ids=None) -> np.ndarray:
        """Adds vectors (numpy, torch or cupy; device arrays are copied to the host copy)."""
        if is_device_array(vectors):
            vectors = to_host(vectors, "vectors")
        with self._lock:
            start = len(self._host)
            new_ids = self._host.add(vectors, ids)
            self._upload_from(start)
        return new_ids

    def remove(self, ids) -> None:
        """Removes the vectors with these ids (unknown ids: an error, nothing removed)."""
        with self._lock:
            self._host.remove(ids)
            self._corpus.clear()
            self._upload_from(0)

    def _upload_from(self, start: int) -> None:
        """Sends host rows [start, n) and the tie order of all rows to the device."""
        vectors, ids, sq_norms, sorted_ids = self._host.stored_arrays()
        ranks = np.searchsorted(sorted_ids, ids).astype(np.int32)
        self._corpus.append(
            np.ascontiguousarray(vectors[start:]),
            None if sq_norms is None else np.ascontiguousarray(sq_norms[start:]),
            ranks, np.ascontiguousarray(sorted_ids),
        )

    # ---- search ---------------------------------------------------------

    def search(self, queries, k: int, return_device: bool = False):
        """Top-k of each query, best first; ties by id ascending.

        queries: numpy / torch CPU tensors (copied to the device), or cupy
        arrays / torch CUDA tensors on this index's device, read in place when
        contiguous float32. Returns ``Hits`` (numpy); with return_device=True
        (device queries only) a ``DeviceHits`` in the queries' library instead.
        """
        k = check_positive_int(k, "k")
        normalize = self.metric == "cosine"
        opts = self._search_options
        if not is_device_array(queries):
            if return_device:
                raise ValueError("return_device=True needs the queries on the device "
                                 "(a cupy array or a torch CUDA tensor)")
            q = as_float_matrix(queries, "queries", self.dim)
            if not q.flags.c_contiguous:
                q = np.ascontiguousarray(q)
            scores, ids = self._corpus.search_host(q, k, normalize=normalize, **opts)
            return Hits(scores, ids)
        m = as_device_matrix(queries, "queries", self.dim)
        if m.stream not in ORDERED_STREAMS:
            cuda_module().synchronize_stream(m.stream)
        scores = empty_like_library(m.owner, (m.rows, k), "float32")
        ids = empty_like_library(m.owner, (m.rows, k), "int64")
        self._corpus.search_device(m.ptr, m.rows, m.row_stride, k, normalize=normalize,
                                   out_scores=device_pointer(scores), out_ids=device_pointer(ids),
                                   **opts)
        result = DeviceHits(scores, ids)
        return result if return_device else result.to_hits()

    # ---- persistence ----------------------------------------------------

    def save(self, path) -> None:
        """Writes the index in FlatIndex's file format (loadable by either class)."""
        self._host.save(path)

    @classmethod
    def load(cls, path, device="cuda") -> GpuFlatIndex:
        return cls.from_index(FlatIndex.load(path), device)


register_gpu_version(FlatIndex, GpuFlatIndex.from_index)
