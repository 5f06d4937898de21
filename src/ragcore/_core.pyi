"""Type stub of the private native module ragcore._core (see cpp/bindings/module.cpp), written
by hand; tests/test_stubs.py fails when it and the built module differ.

Metric, storage, path, SIMD level, k-means initialisation, BM25 variant and query algorithm
cross as the enum types below; the Python layer maps each user string to a member in one
place (dense/_metric.py, dense/_storage.py, dense/ivf.py, sparse/bm25.py).
"""

from typing import Any, Callable, ClassVar

import numpy as np
import numpy.typing as npt

from .hits import Hits

class _NativeEnum:
    """A pybind11 enum (not an enum.Enum): int-like members with a name and a value."""
    def __init__(self, value: int) -> None: ...
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...

class Metric(_NativeEnum):
    InnerProduct: ClassVar[Metric]  # 0
    L2: ClassVar[Metric]  # 1, minus the squared L2 distance

class Storage(_NativeEnum):
    F32: ClassVar[Storage]  # 0
    F16: ClassVar[Storage]  # 1
    BF16: ClassVar[Storage]  # 2, bfloat16, as uint16 bits
    SQ8: ClassVar[Storage]  # 3, per-dimension 8-bit scalar-quantised codes (IVF only)

class DensePath(_NativeEnum):
    Auto: ClassVar[DensePath]  # 0
    Scan: ClassVar[DensePath]  # 1
    Blocked: ClassVar[DensePath]  # 2

class SimdLevel(_NativeEnum):
    Scalar: ClassVar[SimdLevel]  # 0
    Avx2: ClassVar[SimdLevel]  # 1
    Avx512: ClassVar[SimdLevel]  # 2

class Bf16Level(_NativeEnum):
    Scalar: ClassVar[Bf16Level]  # 0
    Avx512Bf16: ClassVar[Bf16Level]  # 1
    Amx: ClassVar[Bf16Level]  # 2

class KMeansInit(_NativeEnum):
    KMeansPlusPlus: ClassVar[KMeansInit]  # 0
    Random: ClassVar[KMeansInit]  # 1

class RabitqRescore(_NativeEnum):
    Bound: ClassVar[RabitqRescore]  # 0
    Count: ClassVar[RabitqRescore]  # 1
    All: ClassVar[RabitqRescore]  # 2

class Variant(_NativeEnum):
    Lucene: ClassVar[Variant]  # 0
    LuceneLegacy: ClassVar[Variant]  # 1
    Okapi: ClassVar[Variant]  # 2
    Robertson: ClassVar[Variant]  # 3
    Atire: ClassVar[Variant]  # 4
    Bm25L: ClassVar[Variant]  # 5
    Bm25Plus: ClassVar[Variant]  # 6

class QueryAlgorithm(_NativeEnum):
    Auto: ClassVar[QueryAlgorithm]  # 0
    Exhaustive: ClassVar[QueryAlgorithm]  # 1
    MaxScore: ClassVar[QueryAlgorithm]  # 2
    BlockMaxWand: ClassVar[QueryAlgorithm]  # 3
    BlockMaxPruning: ClassVar[QueryAlgorithm]  # 4, block-max pruning over ranges of 64 documents

def flat_search(
    corpus: npt.NDArray[np.float32] | npt.NDArray[np.float16] | npt.NDArray[np.uint16],
    n: int,
    queries: npt.NDArray[np.float32],
    k: int,
    storage: Storage,
    metric: Metric,
    ids: npt.NDArray[np.int64] | None = None,
    sq_norms: npt.NDArray[np.float32] | None = None,
    n_threads: int = 0,
    allow: npt.NDArray[np.uint8] | npt.NDArray[np.bool_] | None = None,
    allow_by_row: bool = False,
    bf16_compute: bool = False,
    path: DensePath = DensePath.Auto,
    simd_level: SimdLevel | None = None,
    tile_rows: int = 0,
    tile_depth: int = 0,
    bf16_level: Bf16Level | None = None,
) -> Hits:
    """Exact top-k of queries against corpus[:n] (ids, sq_norms: at least n elements);
    returns ragcore.Hits.

    storage: F32, F16 or BF16. metric L2 needs sq_norms. simd_level None: the
    best here. allow: one byte per key (non-zero: may be returned), keyed by id,
    or by row when allow_by_row. Queries: one row (1-D) or one per row (2-D), float32, each finite and of norm <= 1e18
    (checked here; ValueError naming the first bad row). Positional arguments are the
    per-call path (keyword parsing costs more than a small search).
    """

def simd_level_available(level: SimdLevel) -> bool: ...
def bf16_level_available(level: Bf16Level) -> bool: ...
def best_bf16_level() -> Bf16Level: ...
def bf16_level_self_check(level: Bf16Level, corrupt_one_score: bool = False) -> bool: ...
def bf16_dot(
    queries: npt.NDArray[np.float32], rows: npt.NDArray[np.uint16], level: Bf16Level
) -> npt.NDArray[np.float32]: ...
def best_simd_level() -> SimdLevel: ...
def simd_level_name(level: SimdLevel) -> str: ...
def blocked_path_min_batch(level: SimdLevel, storage: Storage = Storage.F32) -> int: ...

class Vocabulary:
    """Surface words of a corpus, ids in order of first appearance (see sparse/bm25.py)."""

    def __init__(self) -> None: ...
    def tokenize(
        self, texts: list[str | bytes], *, n_threads: int = 0, first_doc: int = 0
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
        """Tokenizes texts, adding new words; returns (word ids, offsets [n + 1])."""
    def add_tokens(
        self, docs: list[list[str]], *, first_doc: int = 0
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
        """Word ids of pre-tokenized documents; returns (word ids, offsets [n + 1])."""
    def words(self, start: int = 0) -> list[str]: ...
    def __len__(self) -> int: ...

def tokenize_texts(texts: list[str | bytes], *, n_threads: int = 0) -> list[list[str]]:
    """Tokens of each text: re.findall(r"(?u)\\b\\w\\w+\\b", text.lower())."""

class QueryEncoder:
    """BM25 queries to (term ids, multiplicities, offsets): tokenizing, stopwords, stemming
    through stem_words (called once per word its bounded LRU cache lacks), term look-up and
    counting, with the GIL released (cpp/include/ragcore/sparse/query_encoder.h)."""

    def __init__(
        self, stopwords: list[str], *, stem_words: Callable[[list[str]], list[str]] | None = None,
        cache_words: int = 65536, cache_bytes: int = 16777216,
    ) -> None: ...
    def add_terms(self, terms: list[str]) -> None:
        """Appends index terms (ids continue from num_terms); a known term raises."""
    @property
    def num_terms(self) -> int: ...
    def encode(
        self, queries: list, *, pretokenized: bool = False
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.int64]]: ...
    def search(
        self, index: Bm25Index, queries: str | list, pretokenized: bool, k: int,
        algorithm: QueryAlgorithm, n_threads: int,
        allow: npt.NDArray[np.uint8] | npt.NDArray[np.bool_] | None,
        allow_by_row: bool, algorithms_out: npt.NDArray[np.uint8] | None,
    ) -> Hits:
        """BM25Index.search's one entry: encodes queries (one str, or a list of str / bytes,
        or of token lists when pretokenized) and searches index in one call, allow a byte
        mask by id (by slot when allow_by_row); returns ragcore.Hits, and writes the
        QueryAlgorithm code that ran for each query to algorithms_out (uint8, one per
        query) when given."""
    @property
    def cached_words(self) -> int: ...
    @property
    def cache_bytes(self) -> int: ...

class Bm25Index:
    """The native inverted index (see cpp/include/ragcore/sparse/bm25_index.h)."""

    def __init__(
        self, *, k1: float, b: float, delta: float, variant: Variant, lucene_norms: bool
    ) -> None: ...
    def add(
        self,
        words: npt.NDArray[np.uint32],
        offsets: npt.NDArray[np.int64],
        word_to_term: npt.NDArray[np.int64],
        ids: npt.NDArray[np.int64],
        *,
        n_threads: int = 0,
    ) -> None: ...
    def remove(self, ids: npt.NDArray[np.int64], n_threads: int = 0) -> None: ...
    def has_ids(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]: ...
    def get_scores(
        self, terms: npt.NDArray[np.int64], weights: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float32]: ...
    def search_with_statistics(
        self,
        terms: npt.NDArray[np.int64],
        weights: npt.NDArray[np.float64],
        offsets: npt.NDArray[np.int64],
        doc_freqs: npt.NDArray[np.int64],
        n_docs: int,
        total_length: int,
        k: int,
        *,
        n_threads: int = 0,
        allow: npt.NDArray[np.uint8] | npt.NDArray[np.bool_] | None = None,
        allow_by_row: bool = False,
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """Exhaustive top-k under given statistics (a term id of -1: a term this index
        lacks); returns (scores, ids)."""
    def get_scores_with_statistics(
        self,
        terms: npt.NDArray[np.int64],
        weights: npt.NDArray[np.float64],
        doc_freqs: npt.NDArray[np.int64],
        n_docs: int,
        total_length: int,
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
    def slot_ids(self) -> npt.NDArray[np.int64]: ...
    def doc_freqs(self) -> npt.NDArray[np.int64]: ...
    def memory_bytes(self) -> int: ...
    def postings_bytes(self) -> int: ...
    def to_arrays(self) -> dict[str, np.ndarray]: ...
    @staticmethod
    def from_arrays(
        arrays: dict, *, k1: float, b: float, delta: float, variant: Variant, lucene_norms: bool
    ) -> Bm25Index: ...

def kmeans(
    x: npt.NDArray[np.float32], k: int, *, max_iter: int = 25, tol: float = 1e-4, seed: int = 0,
    init: KMeansInit = KMeansInit.KMeansPlusPlus, n_threads: int = 0,
    simd_level: SimdLevel | None = None, spherical: bool = False,
) -> tuple[npt.NDArray[np.float32], list[float], int, int]:
    """k-means (squared L2; spherical: unit-norm centroids). Returns (centroids, objective
    after each assignment, iterations, clusters re-seeded)."""

def assign_nearest(
    x: npt.NDArray[np.float32], centroids: npt.NDArray[np.float32], *, n_threads: int = 0,
    simd_level: SimdLevel | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Nearest centroid of each row and its squared distance."""

def ivf_search(
    rows: npt.NDArray[np.float32] | npt.NDArray[np.float16] | npt.NDArray[np.uint16] | npt.NDArray[np.uint8],
    queries: npt.NDArray[np.float32],
    k: int,
    centroids: npt.NDArray[np.float32],
    centroid_sq_norms: npt.NDArray[np.float32],
    list_offsets: npt.NDArray[np.int64],
    storage: Storage,
    ids: npt.NDArray[np.int64],
    sq_norms: npt.NDArray[np.float32] | None,
    metric: Metric,
    nprobe: int,
    code_min: npt.NDArray[np.float32] | None = None,
    code_scale: npt.NDArray[np.float32] | None = None,
    exact_rows: npt.NDArray[np.float32] | None = None,
    rescore: int = 4,
    allow: npt.NDArray[np.uint8] | npt.NDArray[np.bool_] | None = None,
    allow_by_row: bool = False,
    n_threads: int = 0,
    simd_level: SimdLevel | None = None,
    owner: int = 0,
    bf16_compute: bool = False,
    bf16_level: Bf16Level | None = None,
) -> Hits:
    """Approximate top-k over inverted lists; storage SQ8 = uint8 codes (needs
    code_min, code_scale and exact_rows). Returns ragcore.Hits; owner != 0 keeps the
    seconds per stage (coarse, scan, rescore) for ivf_last_report(owner). bf16_compute
    (BF16 storage only): queries rounded to bf16, products by the bf16 kernels. Queries: one row (1-D) or one per row (2-D), float32, each finite and of norm <= 1e18
    (checked here; ValueError naming the first bad row). Positional arguments are the
    per-call path (keyword parsing costs more than a small search)."""

def ivf_last_report(owner: int) -> tuple[dict[str, float], dict[str, int]]:
    """(seconds per stage, {"scanned", "rescored"} counts) of this thread's last IVF search
    (ivf_search, ivf_pq4_search, rabitq_ivf_search) given this owner; empty dicts for what
    that search did not report, or when the thread's last search was another owner's."""

def rabitq_encode(rot_residuals: npt.NDArray[np.float32], rot_centroids: npt.NDArray[np.float32],
                  labels: npt.NDArray[np.int64], *, bits: int,
                  n_threads: int = 0) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.float32]]:
    """RaBitQ rows (bit planes + float32 f_add, f_scale, f_err) of rotated residuals
    [n, dp], dp a multiple of 8; returns (rows, cos(code, residual))."""
def rabitq_fht_rotate(x: npt.NDArray[np.float32], signs: npt.NDArray[np.uint8], *,
                      n_threads: int = 0,
                      simd_level: SimdLevel | None = None) -> npt.NDArray[np.float32]:
    """FHT-Kac rotation of float32 rows [n, d] into [n, rabitq padded d] (signs: uint8
    [rounds, padded d / 8] sign bits)."""
def rabitq_ivf_search(
    rows: npt.NDArray[np.uint8], queries: npt.NDArray[np.float32], k: int,
    centroids: npt.NDArray[np.float32], centroid_sq_norms: npt.NDArray[np.float32],
    rotation: npt.NDArray[np.float32], bits: int, list_offsets: npt.NDArray[np.int64],
    ids: npt.NDArray[np.int64], exact_rows: npt.NDArray[np.float32],
    sq_norms: npt.NDArray[np.float32] | None, metric: Metric, nprobe: int,
    rescore: RabitqRescore = ..., rescore_count: int = 4, epsilon: float = 1.9,
    allow: npt.NDArray[np.uint8] | npt.NDArray[np.bool_] | None = None,
    allow_by_row: bool = False, n_threads: int = 0, simd_level: SimdLevel | None = None,
    fast_blocks: npt.NDArray[np.uint8] | None = None, owner: int = 0,
) -> Hits:
    """IVF top-k over RaBitQ codes, re-scored exactly; returns ragcore.Hits; owner != 0
    keeps the {"scanned", "rescored"} row counts for ivf_last_report(owner). fast_blocks: rabitq_fast_pack of 1-bit rows,
    then scanned by the fast-scan kernel. Queries: one row (1-D) or one per row (2-D), float32, each finite and of norm <= 1e18
    (checked here; ValueError naming the first bad row). Positional arguments are the
    per-call path (keyword parsing costs more than a small search)."""
def rabitq_estimates(
    rows: npt.NDArray[np.uint8], query: npt.NDArray[np.float32], list: int, *,
    centroids: npt.NDArray[np.float32], centroid_sq_norms: npt.NDArray[np.float32],
    rotation: npt.NDArray[np.float32], bits: int, list_offsets: npt.NDArray[np.int64],
    ids: npt.NDArray[np.int64], exact_rows: npt.NDArray[np.float32],
    sq_norms: npt.NDArray[np.float32] | None, metric: Metric,
    simd_level: SimdLevel | None = None, fast_blocks: npt.NDArray[np.uint8] | None = None,
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """Estimated scores and one-standard-deviation error bounds of one list's rows (plus
    the fast scan's worst quantisation error with fast_blocks)."""
def rabitq_fast_pack(rows: npt.NDArray[np.uint8], list_offsets: npt.NDArray[np.int64], *,
                     dim: int) -> npt.NDArray[np.uint8]:
    """1-bit RaBitQ rows in list order packed into fast-scan blocks of 32 rows (codes,
    then float32 f_add, f_scale, f_err of each row); uint8 1-D."""
def rabitq_fast_tables(rotated: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.uint8], float, float, float]:
    """The fast scan's quantised tables of one rotated query [padded dim]: (luts uint8
    [padded dim / 4, 16], bias, delta, max_error)."""
def rabitq_fast_sums(blocks: npt.NDArray[np.uint8], *, dim: int, luts: npt.NDArray[np.uint8],
                     simd_level: SimdLevel | None = None) -> npt.NDArray[np.uint16]:
    """uint16 [blocks * 32]: every row's quantised sum under luts, by one SIMD level."""

def quantize_int8(x: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """(codes int8 [n, d], scales float32 [n]): HNSWIndex's int8 codes of each row."""
def int8_dots(q: npt.NDArray[np.int8], rows: npt.NDArray[np.int8], *,
              simd_level: SimdLevel | None = None, repeats: int = 1) -> npt.NDArray[np.int32]:
    """int32 dot products of int8 codes (in [-127, 127]) by the kernel of a SIMD level."""
def int8_kernel_name(simd_level: SimdLevel | None = None) -> str: ...

class HnswIndex:
    """HNSW graph over stored rows (ragcore.HNSWIndex's core)."""

    def __init__(self, d: int, *, metric: Metric, storage: Storage, M: int, ef_construction: int,
                 seed: int = 0, simd_level: SimdLevel | None = None,
                 int8_walk: bool = False) -> None:
        """int8_walk (F32 storage only): searches walk on int8 codes of the vectors, then
        re-score the walk's candidates exactly."""
    def add(self, rows: npt.NDArray[Any], ids: npt.NDArray[np.int64], *,
            sq_norms: npt.NDArray[np.float32] | None = None, n_threads: int = 0) -> None: ...
    def remove(self, ids: npt.NDArray[np.int64], *, n_threads: int = 0) -> int: ...
    def search(self, queries: npt.NDArray[np.float32], k: int, ef: int,
               allow: npt.NDArray[np.uint8] | None = None,
               allow_ids: npt.NDArray[np.int64] | None = None, exact_below: int = 0,
               n_threads: int = 0, filter_out: npt.NDArray[np.int64] | None = None) -> Hits:
        """Returns ragcore.Hits; filter_out (int64 [2]), when given, receives whether the
        allowed set was scored exactly (0 or 1) and the allowed count.
        Queries: one row (1-D) or one per row (2-D), float32, each finite and of norm <= 1e18
        (checked here; ValueError naming the first bad row). Positional arguments are the
        per-call path (keyword parsing costs more than a small search)."""
    def size(self) -> int: ...
    def slots(self) -> int: ...
    def memory_bytes(self) -> int: ...
    def slot_ids(self) -> npt.NDArray[np.int64]: ...
    def snapshot(self) -> dict[str, Any]: ...
    def restore(self, vectors: npt.NDArray[Any], sq_norms: npt.NDArray[np.float32] | None,
                ids: npt.NDArray[np.int64], levels: npt.NDArray[np.int32],
                links0: npt.NDArray[np.uint32], upper: npt.NDArray[np.uint32],
                upper_offsets: npt.NDArray[np.int64], entry: int, rng_state: int,
                borrow_vectors: bool) -> None: ...

def pq4_pack(codes: npt.NDArray[np.uint8], m: int) -> npt.NDArray[np.uint8]:
    """4-bit codes (n x m, each < 16) in the fast-scan block layout."""
def pq4_train(x: npt.NDArray[np.float32], m: int, *, seed: int = 0,
              n_threads: int = 0) -> npt.NDArray[np.float32]:
    """float32 codebooks (m x 16 x d / m): kmeans(part j of x, 16, seed=seed + j) per part,
    the parts in parallel."""
def pq4_encode(x: npt.NDArray[np.float32], by_dim: npt.NDArray[np.float32], m: int,
               n_threads: int = 0) -> npt.NDArray[np.uint8]:
    """uint8 codes (n x m): per part of each row, the nearest of 16 centroids (squared L2,
    ties to the lower code); by_dim: the codebooks by dimension, m x (d / m) x 16."""
def pq4_scan(packed: npt.NDArray[np.uint8], n: int, m: int, luts: npt.NDArray[np.uint8],
             simd_level: SimdLevel) -> npt.NDArray[np.uint16]:
    """16-bit losses of n packed vectors for byte tables luts."""
def pq4_quantize_tables(tables: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.uint8], float]:
    """Byte tables (losses scaled to 0..255) of float tables m x 16; returns (luts, scale)."""
def pq4_search(packed: npt.NDArray[np.uint8], m: int, centroids: npt.NDArray[np.float32],
               exact: npt.NDArray[np.float32], sq_norms: npt.NDArray[np.float32] | None,
               ids: npt.NDArray[np.int64], metric: Metric, queries: npt.NDArray[np.float32],
               k: int, rescore: int = 4, n_threads: int = 0,
               simd_level: SimdLevel | None = None, allow: npt.NDArray[Any] | None = None,
               allow_by_row: bool = False) -> Hits:
    """Fast-scan candidates re-scored exactly; returns ragcore.Hits. centroids: the
    codebooks by dimension, [m, dim / m, 16]. Queries: one row (1-D) or one per row (2-D), float32, each finite and of norm <= 1e18
    (checked here; ValueError naming the first bad row). Positional arguments are the
    per-call path (keyword parsing costs more than a small search)."""
def pq4_select(packed: npt.NDArray[np.uint8], n: int, m: int, luts: npt.NDArray[np.uint8],
               want: int, simd_level: SimdLevel, *, allow: npt.NDArray[Any] | None = None,
               ids: npt.NDArray[np.int64] | None = None,
               allow_by_row: bool = False) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The want smallest (loss, row) of a fast scan with the running threshold; returns
    (losses, rows) best first."""
def pq4_select_many(packed: npt.NDArray[np.uint8], n: int, m: int, luts: npt.NDArray[np.uint8],
                    want: int, simd_level: SimdLevel, *, allow: npt.NDArray[Any] | None = None,
                    ids: npt.NDArray[np.int64] | None = None, allow_by_row: bool = False,
                    ) -> list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]]:
    """pq4_select for several queries sharing one scan (luts: queries x tables x 16); a list
    of (losses, rows) per query, best first."""
def ivf_pq4_search(centroids: npt.NDArray[np.float32], centroid_sq_norms: npt.NDArray[np.float32],
                   list_offsets: npt.NDArray[np.int64], block_offsets: npt.NDArray[np.int64],
                   packed: npt.NDArray[np.uint8], m: int, codebooks: npt.NDArray[np.float32],
                   exact: npt.NDArray[np.float32], sq_norms: npt.NDArray[np.float32] | None,
                   ids: npt.NDArray[np.int64], metric: Metric, queries: npt.NDArray[np.float32],
                   k: int, nprobe: int, rescore: int = 4, allow: npt.NDArray[Any] | None = None,
                   allow_by_row: bool = False, n_threads: int = 0,
                   simd_level: SimdLevel | None = None, owner: int = 0) -> Hits:
    """IVF over 4-bit PQ lists: candidates re-scored exactly; returns ragcore.Hits (owner
    != 0: ivf_last_report(owner) reads empty).
    codebooks: by dimension, [m, dim / m, 16]. Queries: one row (1-D) or one per row (2-D), float32, each finite and of norm <= 1e18
    (checked here; ValueError naming the first bad row). Positional arguments are the
    per-call path (keyword parsing costs more than a small search)."""
# The calling thread's subnormal flush (cpp/include/ragcore/util/fp_state.h).
def denormal_flush_supported() -> bool:
    """Whether this build can flush subnormals (x86-64: MXCSR FTZ+DAZ; aarch64: FPCR.FZ)."""
def denormals_flushed() -> bool:
    """Whether the calling thread flushes subnormal floats to zero now."""
def set_denormal_flush(flush: bool) -> int:
    """Sets the calling thread's flush state; returns the previous bits for restore_denormal_state."""
def restore_denormal_state(previous: int) -> None:
    """Puts back the flush bits saved by set_denormal_flush, on the calling thread."""
