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
    allow: npt.NDArray[np.uint8] | npt.NDArray[np.bool_] | None = None,
    allow_by_row: bool = False,
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    """Exact top-k of queries against a flat corpus; returns (scores, ids).

    storage: 0 float32, 1 float16, 2 bfloat16 (uint16 bits). metric: 0 inner
    product, 1 minus squared L2 (needs sq_norms). path: 0 auto, 1 scan,
    2 blocked. simd_level: -1 best, 0 scalar, 1 AVX2, 2 AVX-512. allow: one
    byte per key (non-zero: may be returned), keyed by id, or by row when
    allow_by_row.
    """

def simd_level_available(level: int) -> bool: ...
def best_simd_level() -> int: ...
def simd_level_name(level: int) -> str: ...
def blocked_path_min_batch(level: int, storage: int = 0) -> int: ...

class Vocabulary:
    """Surface words of a corpus, ids in order of first appearance (see bm25.py)."""

    def __init__(self) -> None: ...
    def tokenize(
        self, texts: list[str | bytes], n_threads: int = 0, first_doc: int = 0
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
        """Tokenizes texts, adding new words; returns (word ids, offsets [n + 1])."""
    def add_tokens(
        self, docs: list[list[str]], first_doc: int = 0
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
        """Word ids of pre-tokenized documents; returns (word ids, offsets [n + 1])."""
    def words(self, start: int = 0) -> list[str]: ...
    def __len__(self) -> int: ...

def tokenize_texts(texts: list[str | bytes], n_threads: int = 0) -> list[list[str]]:
    """Tokens of each text: re.findall(r"(?u)\\b\\w\\w+\\b", text.lower())."""

class Bm25Index:
    """The native inverted index (see cpp/include/ragcore/bm25_index.h)."""

    def __init__(self, k1: float, b: float, delta: float, variant: int, lucene_norms: bool) -> None: ...
    def add(
        self,
        words: npt.NDArray[np.uint32],
        offsets: npt.NDArray[np.int64],
        word_to_term: npt.NDArray[np.int64],
        ids: npt.NDArray[np.int64],
        n_threads: int = 0,
    ) -> None: ...
    def remove(self, ids: npt.NDArray[np.int64], n_threads: int = 0) -> None: ...
    def has_ids(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]: ...
    def search(
        self,
        terms: npt.NDArray[np.int64],
        weights: npt.NDArray[np.float64],
        offsets: npt.NDArray[np.int64],
        k: int,
        algorithm: int = 0,
        n_threads: int = 0,
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64], npt.NDArray[np.uint8]]:
        """Top-k per query; returns (scores, ids, algorithm code used per query)."""
    def get_scores(
        self, terms: npt.NDArray[np.int64], weights: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float32]: ...
    def impacts(self, n_threads: int = 0) -> dict[str, npt.NDArray]:
        """CSR of every posting's score part: offsets (int64, terms + 1), docs (uint32
        slots), values (float32), slot_ids (int64 per slot, -1 once removed)."""
    def weigh_queries(
        self, terms: npt.NDArray[np.int64], weights: npt.NDArray[np.float64],
        offsets: npt.NDArray[np.int64],
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """(terms with -1 for those no live document holds, weights, base per query)."""
    @property
    def num_docs(self) -> int: ...
    @property
    def total_length(self) -> int: ...
    @property
    def num_terms(self) -> int: ...
    def live_ids(self) -> npt.NDArray[np.int64]: ...
    def doc_freqs(self) -> npt.NDArray[np.int64]: ...
    def memory_bytes(self) -> int: ...
    def postings_bytes(self) -> int: ...
    def to_arrays(self) -> dict[str, np.ndarray]: ...
    @staticmethod
    def from_arrays(
        k1: float, b: float, delta: float, variant: int, lucene_norms: bool, arrays: dict
    ) -> Bm25Index: ...

def kmeans(
    x: npt.NDArray[np.float32], k: int, max_iter: int = 25, tol: float = 1e-4, seed: int = 0,
    init: int = 0, n_threads: int = 0, simd_level: int = -1,
) -> tuple[npt.NDArray[np.float32], list[float], int, int]:
    """k-means (squared L2); init 0 k-means++, 1 random. Returns (centroids,
    objective after each assignment, iterations, clusters re-seeded)."""

def assign_nearest(
    x: npt.NDArray[np.float32], centroids: npt.NDArray[np.float32], n_threads: int = 0,
    simd_level: int = -1,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Nearest centroid of each row and its squared distance."""

def ivf_search(
    centroids: npt.NDArray[np.float32],
    centroid_sq_norms: npt.NDArray[np.float32],
    list_offsets: npt.NDArray[np.int64],
    rows: npt.NDArray[np.float32] | npt.NDArray[np.float16] | npt.NDArray[np.uint16] | npt.NDArray[np.uint8],
    storage: int,
    ids: npt.NDArray[np.int64],
    sq_norms: npt.NDArray[np.float32] | None,
    metric: int,
    queries: npt.NDArray[np.float32],
    k: int,
    nprobe: int,
    code_min: npt.NDArray[np.float32] | None = None,
    code_scale: npt.NDArray[np.float32] | None = None,
    exact_rows: npt.NDArray[np.float32] | None = None,
    rescore: int = 4,
    allow: npt.NDArray[np.uint8] | npt.NDArray[np.bool_] | None = None,
    allow_by_row: bool = False,
    n_threads: int = 0,
    simd_level: int = -1,
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64], dict[str, float]]:
    """Approximate top-k over inverted lists; storage 3 = uint8 codes (needs
    code_min, code_scale and exact_rows). Returns (scores, ids, seconds per
    stage: coarse, scan, rescore)."""
