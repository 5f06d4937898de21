"""Type stub of the private native module ragcore._core (see cpp/bindings/module.cpp)."""

import numpy as np
import numpy.typing as npt

def flat_search(
    corpus: npt.NDArray[np.float32] | npt.NDArray[np.float16] | npt.NDArray[np.uint16],
    storage: int,
    ids: npt.NDArray[np.int64] | None,
    sq_norms: npt.NDArray[np.float32] | None,
    metric: int,
    queries: npt.NDArray[np.float32],
    k: int,
    n_threads: int = 0,
    path: int = 0,
    simd_level: int = -1,
    tile_rows: int = 0,
    tile_depth: int = 0,
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    """Exact top-k of queries against a flat corpus; returns (scores, ids).

    storage: 0 float32, 1 float16, 2 bfloat16 (uint16 bits). metric: 0 inner
    product, 1 minus squared L2 (needs sq_norms). path: 0 auto, 1 scan,
    2 blocked. simd_level: -1 best, 0 scalar, 1 AVX2, 2 AVX-512.
    """

def simd_level_available(level: int) -> bool: ...
def best_simd_level() -> int: ...
def simd_level_name(level: int) -> str: ...
def blocked_path_min_batch(level: int, storage: int = 0) -> int: ...
