"""The clustered benchmark set, generated once and kept in a .npy file.

At N = 1M, d = 384 the generator takes about a minute and its chunked einsum gathers a
(65536, 48, 384) float32 block of bases (4.8 GB) on top of the 1.5 GB set; a benchmark
run under a time lock reads the same rows back from the file in about a second instead.
"""

from __future__ import annotations

import os

import numpy as np

from ragcore.cli.bench import data


def clustered(n: int, d: int, n_queries: int, path: str | None) -> tuple[np.ndarray, np.ndarray]:
    """data.clustered(n, d, 0, n_queries), read from path when it holds exactly that
    (n + n_queries rows of d float32: corpus then queries), else generated and written
    there (temporary file, then renamed)."""
    if path is None:
        return data.clustered(n, d, 0, n_queries)
    if os.path.exists(path):
        rows = np.load(path, mmap_mode="r")
        if rows.shape != (n + n_queries, d) or rows.dtype != np.float32:
            raise ValueError(f"--cache {path}: holds {rows.dtype} {rows.shape}, expected float32 "
                             f"({n + n_queries}, {d}); remove it or name another file")
        rows = np.array(rows)  # in memory: the timings must not page the file in
        return rows[:n], rows[n:]
    x, q = data.clustered(n, d, 0, n_queries)
    tmp = f"{path}.tmp{os.getpid()}.npy"
    out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(n + n_queries, d))
    out[:n], out[n:] = x, q
    out.flush()
    del out
    os.replace(tmp, path)
    return x, q
