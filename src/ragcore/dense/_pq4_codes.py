"""4-bit product-quantisation codes shared by PQIndex and IVFIndex(dtype="pq4"):
codebooks (16 centroids per sub-quantiser, k-means), encoding, the fast-scan layout
of inverted lists, and the checks of codes and codebooks read from a file."""

from __future__ import annotations

import numpy as np

from .. import _core
from .._util.arrays import MAX_NORM
from ._kmeans_sample import kmeans_sample

CODES = 16  # 4-bit codes: 16 centroids per sub-quantiser
MAX_M = 256  # 16-bit sums of m byte-table entries cannot overflow
BLOCK = 32  # vectors per fast-scan block


def check_m(dim: int, m) -> int:
    """m as an int: 1..256 and a divisor of dim, else a ValueError saying which to pick."""
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise ValueError(f"m must be >= 1 (sub-quantisers), got {m!r}")
    if m > MAX_M:
        raise ValueError(f"m must be between 1 and {MAX_M}, got {m}")
    if dim % m:
        divisors = [v for v in range(1, min(dim, MAX_M) + 1) if dim % v == 0]
        raise ValueError(f"dim={dim} is not divisible by m={m}; pick m among the divisors of "
                         f"dim (e.g. {', '.join(str(v) for v in divisors[-4:])})")
    return int(m)


def train_codebooks(x: np.ndarray, m: int, seed: int, n_threads: int) -> np.ndarray:
    """float32 [m, 16, dim / m]: k-means (squared L2) on each sub-quantiser's part of x,
    or of at most 256 * 16 rows of x drawn by the seed (kmeans_sample), the same rows
    for every sub-quantiser, as faiss's ProductQuantizer trains."""
    if len(x) < CODES:
        raise ValueError(f"sample has {len(x)} vectors; training 4-bit codes needs at least "
                         f"{CODES} (one per code)")
    # One native call: the m k-means (seeds seed + j) run in parallel across sub-spaces.
    return _core.pq4_train(kmeans_sample(x, CODES, seed), m, seed=seed % (1 << 64),
                           n_threads=n_threads)


def by_dimension(books: np.ndarray) -> np.ndarray:
    """The codebooks as the native table builder reads them: [m, dim / m, 16], per
    dimension of a part the 16 centroids' values side by side (made once, not per search)."""
    return np.ascontiguousarray(books.transpose(0, 2, 1))


def encode(x: np.ndarray, books: np.ndarray, n_threads: int) -> np.ndarray:
    """uint8 [n, m]: per sub-quantiser, the nearest centroid (squared L2, ties to the
    lower code), all sub-quantisers in one native pass over the rows."""
    return _core.pq4_encode(np.ascontiguousarray(x, dtype=np.float32), by_dimension(books),
                            books.shape[0], n_threads=n_threads)


def pack_lists(codes: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(packed, block_offsets): each list's codes (rows offsets[l]:offsets[l+1] of codes)
    in fast-scan blocks of its own, list l in blocks block_offsets[l]:block_offsets[l+1]."""
    m = codes.shape[1]
    sizes = np.diff(offsets)
    block_offsets = np.zeros(len(offsets), dtype=np.int64)
    np.cumsum((sizes + BLOCK - 1) // BLOCK, out=block_offsets[1:])
    labels = np.repeat(np.arange(len(sizes)), sizes)
    slot = block_offsets[labels] * BLOCK + (np.arange(len(codes)) - offsets[:-1][labels])
    padded = np.zeros((int(block_offsets[-1]) * BLOCK, m), dtype=np.uint8)
    padded[slot] = codes
    return _core.pq4_pack(padded, m), block_offsets


def checked_codes(f, n: int, m: int, name: str = "codes") -> np.ndarray:
    """The file's codes array: uint8 [n, m], every code < 16."""
    codes = f.array(name, np.uint8, (n, m))
    if n and int(codes.max()) >= CODES:
        f.fail(name, f"a code is {int(codes.max())}; 4-bit codes are < {CODES}")
    return codes


def checked_codebooks(f, dim: int, m: int) -> np.ndarray:
    """The file's codebooks, stored 2-D as [m * 16, dim / m]: finite, of bounded norm."""
    books = f.array("codebooks", np.float32, (m * CODES, dim // m))
    f.finite("codebooks", books)
    if float(np.sqrt(np.sum(books.astype(np.float64) ** 2))) > MAX_NORM:
        f.fail("codebooks", f"centroids of norm above {MAX_NORM:g}")
    return np.ascontiguousarray(books).reshape(m, CODES, dim // m)
