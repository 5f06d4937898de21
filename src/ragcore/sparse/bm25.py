"""BM25Index: native sparse retrieval with exact dynamic pruning."""

from __future__ import annotations

import math
import threading

import numpy as np

from .. import _core
from .._util.allow import allow_mask
from .._util.arrays import as_id_array, check_choice, check_positive_int, check_threads, raw_ids
from .._util.devices import to_device
from .._util.file_checks import FileFields
from .._util.fileformat import read_index, write_index
from .._util.ids import auto_ids
from .._util.progress import Progress
from ..errors import IndexFileError
from ..hits import Hits
from .statistics import BM25Statistics, query_terms
from .tokenizer import WordNormalizer
from .variants import VARIANTS

# The native enum member of each variant (variants.REGISTRY) and query algorithm.
_NATIVE_VARIANT = {
    "lucene": _core.Variant.Lucene, "lucene_legacy": _core.Variant.LuceneLegacy,
    "okapi": _core.Variant.Okapi, "robertson": _core.Variant.Robertson,
    "atire": _core.Variant.Atire, "bm25l": _core.Variant.Bm25L, "bm25+": _core.Variant.Bm25Plus,
}
_NATIVE_ALGORITHM = {
    "auto": _core.QueryAlgorithm.Auto, "exhaustive": _core.QueryAlgorithm.Exhaustive,
    "maxscore": _core.QueryAlgorithm.MaxScore, "bmw": _core.QueryAlgorithm.BlockMaxWand,
    "bmp": _core.QueryAlgorithm.BlockMaxPruning,
}
ALGORITHMS = tuple(_NATIVE_ALGORITHM)
_ALGORITHM_NAME = {int(member): name for name, member in _NATIVE_ALGORITHM.items()}
_FILE_KIND = "BM25Index"
_CHUNK_DOCS = 65536  # documents tokenized and indexed per native call
_PROGRESS_MIN_DOCS = 100_000


class BM25Index:
    """A BM25 inverted index over texts, with native tokenizing, scoring and top-k.

    Args:
        k1, b: the BM25 parameters (0 <= k1 <= 1000, 0 <= b <= 1).
        variant: the scoring formula, one of ``VARIANTS`` (ragcore.sparse.variants gives each
            formula and its source): "lucene" (default, Lucene >= 8),
            "lucene_legacy", "okapi", "robertson", "atire", "bm25l", "bm25+".
        delta: the delta of bm25l and bm25+, 0 to 1000 (ignored by the others).
        stopwords: None, "en" (ragcore.tokenizer.STOPWORDS_EN) or a list of words.
        stemmer: None or a Snowball language name ("english", ...; needs PyStemmer).
        lucene_norms: score with document lengths rounded as Lucene stores them (one byte,
            exact up to 39), so scores match Lucene, Anserini and Pyserini.

    Documents are texts (str, or UTF-8 bytes) tokenized as
    ``re.findall(r"(?u)\\b\\w\\w+\\b", text.lower())``, or pre-tokenized lists of str
    (used as given, no lowercasing). Stopwords and the stemmer apply to both, and the same
    settings are applied to queries.

    ``search`` returns the exact top-k of the documents that hold at least one query
    term, ties by id ascending, whatever query algorithm runs; the rest of a row is
    padding (id -1, score -inf). A document without any query term is never a result,
    not even for bm25l and bm25+, whose formulas give it a base score (the absent terms'
    part): ``get_scores`` still returns that base for it, as bm25s does.

    ``search`` may run from several threads at once; ``add``/``remove`` wait for running
    searches and block new ones while they change the index.
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75, variant: str = "lucene",
                 delta: float = 0.5, stopwords="en", stemmer=None, lucene_norms: bool = False):
        self._k1 = _check_number(k1, "k1", 0.0, MAX_K1)
        self._b = _check_number(b, "b", 0.0, 1.0)
        self._delta = _check_number(delta, "delta", 0.0, MAX_DELTA)
        self._variant = check_choice(variant, "variant", VARIANTS)
        if not isinstance(lucene_norms, bool):
            raise TypeError(f"lucene_norms must be True or False, got {type(lucene_norms).__name__}")
        self._lucene_norms = lucene_norms
        if self._variant == "bm25l" and self._k1 + self._delta == 0:
            raise ValueError("variant 'bm25l' needs k1 + delta > 0 (its absent-term score is 0/0)")
        self._normalizer = WordNormalizer(stopwords, stemmer)
        self._lock = threading.Lock()
        self._clear()

    def _clear(self) -> None:
        self._native = _core.Bm25Index(**self._native_params())
        self._words = _core.Vocabulary()  # surface words of added documents (a cache)
        self._word_to_term = np.empty(0, dtype=np.int64)  # word id -> term id, -1 = stopword
        self._term_ids: dict[str, int] = {}
        self._terms: list[str] = []
        self._encoder = self._normalizer.query_encoder()  # queries -> term ids, natively
        self._bind_pair()
        self._next_id = 0

    def _bind_pair(self) -> None:
        """The native encoder and index that searches use (set again whenever either is
        replaced): a search reads ``_pair`` once, so one that runs while index() swaps
        them encodes and scores with the same index, the old or the new."""
        self._pair = (self._encoder, self._native)

    def _native_params(self) -> dict:
        return {"k1": self._k1, "b": self._b, "delta": self._delta,
                "variant": _NATIVE_VARIANT[self._variant], "lucene_norms": self._lucene_norms}

    # ---- properties -----------------------------------------------------

    k1 = property(lambda self: self._k1)
    b = property(lambda self: self._b)
    delta = property(lambda self: self._delta)
    variant = property(lambda self: self._variant)
    lucene_norms = property(lambda self: self._lucene_norms)
    stopwords = property(lambda self: self._normalizer.stopwords)
    stemmer = property(lambda self: self._normalizer.stemmer_name)

    def __len__(self) -> int:
        return self._native.num_docs

    def __repr__(self) -> str:
        return (f"BM25Index(k1={self._k1}, b={self._b}, variant={self._variant!r}, "
                f"n={len(self)}, terms={len(self._terms)})")

    @property
    def ids(self) -> np.ndarray:
        """The ids of the live documents, in the order get_scores uses."""
        return self._native.live_ids()

    @property
    def avgdl(self) -> float:
        """Average document length (tokens after stopwords) of the live documents."""
        n = self._native.num_docs
        return self._native.total_length / n if n else 0.0

    @property
    def vocabulary(self) -> list[str]:
        """The index terms, by term id."""
        return list(self._terms)

    def doc_freq(self, term: str) -> int:
        """How many live documents hold a term (as indexed: after stemming)."""
        tid = self._term_ids.get(term, -1)
        dfs = self._native.doc_freqs()
        return int(dfs[tid]) if 0 <= tid < len(dfs) else 0

    def memory_bytes(self) -> int:
        """Native memory of the index: compressed postings, block metadata, per-document arrays."""
        return int(self._native.memory_bytes())

    def postings_bytes(self) -> int:
        """Compressed posting bytes alone."""
        return int(self._native.postings_bytes())

    # ---- building -------------------------------------------------------

    def index(self, texts, ids=None, n_threads: int = 0, show_progress=None) -> np.ndarray:
        """Replaces the contents with these documents; returns their ids (see add)."""
        fresh = self._empty_like()
        new_ids = fresh.add(texts, ids, n_threads=n_threads, show_progress=show_progress)
        with self._lock:
            for name in ("_native", "_words", "_word_to_term", "_term_ids", "_terms",
                         "_encoder", "_pair", "_next_id"):
                setattr(self, name, getattr(fresh, name))
        return new_ids

    def add(self, texts, ids=None, n_threads: int = 0, show_progress=None) -> np.ndarray:
        """Adds documents without rebuilding the index; returns their ids.

        texts: a str (one document), a list of str / UTF-8 bytes, or a list of token lists.
        ids: int64 ids, one per document, non-negative and new. Default: consecutive ids
        after the largest given so far. show_progress: a progress line on stderr; by
        default for 100,000 documents or more. Nothing is added if any document is
        invalid (e.g. not UTF-8: the error names it).
        """
        docs, pretokenized = _as_documents(texts, "texts")
        n_threads = check_threads(n_threads)
        show = len(docs) >= _PROGRESS_MIN_DOCS if show_progress is None else bool(show_progress)
        progress = Progress(len(docs), "BM25Index", enabled=show)
        with self._lock:
            new_ids = self._check_new_ids(ids, len(docs))
            batches = []
            for start in range(0, len(docs), _CHUNK_DOCS):
                chunk = docs[start : start + _CHUNK_DOCS]
                if pretokenized:
                    batches.append(self._words.add_tokens(chunk, first_doc=start))
                else:
                    batches.append(self._words.tokenize(chunk, n_threads=n_threads,
                                                        first_doc=start))
                progress.update(start + len(chunk), "tokenized")
            self._extend_word_map()
            for i, (words, offsets) in enumerate(batches):
                chunk_ids = new_ids[i * _CHUNK_DOCS : (i + 1) * _CHUNK_DOCS]
                self._native.add(words, offsets, self._word_to_term, chunk_ids,
                                 n_threads=n_threads)
                progress.update(i * _CHUNK_DOCS + len(chunk_ids), "indexed")
            if len(new_ids):
                self._next_id = max(self._next_id, int(new_ids.max()) + 1)
        progress.close()
        return new_ids.copy()

    def _empty_like(self) -> BM25Index:
        return BM25Index(self._k1, self._b, self._variant, self._delta,
                         list(self._normalizer.stopwords) or None, self._normalizer.stemmer_name,
                         self._lucene_norms)

    def _check_new_ids(self, ids, count: int) -> np.ndarray:
        if ids is None:
            return auto_ids(self._next_id, count)
        new_ids = np.ascontiguousarray(as_id_array(ids, "ids", count))
        sorted_new = np.sort(new_ids)
        if count > 1 and (sorted_new[1:] == sorted_new[:-1]).any():
            dup = sorted_new[1:][sorted_new[1:] == sorted_new[:-1]][0]
            raise ValueError(f"ids contains {int(dup)} more than once; ids must be unique")
        clash = self._native.has_ids(new_ids)
        if clash.any():
            raise ValueError(f"ids: {int(new_ids[clash][0])} is already in the index")
        return new_ids

    def _extend_word_map(self) -> None:
        """Maps the surface words seen since the last call to term ids (stemming each once)."""
        new_words = self._words.words(len(self._word_to_term))
        if not new_words:
            return
        ids = np.empty(len(new_words), dtype=np.int64)
        first_new = len(self._terms)
        for i, term in enumerate(self._normalizer.terms(new_words)):
            if term is None:
                ids[i] = -1
                continue
            tid = self._term_ids.get(term)
            if tid is None:
                tid = self._term_ids[term] = len(self._terms)
                self._terms.append(term)
            ids[i] = tid
        self._encoder.add_terms(self._terms[first_new:])
        self._word_to_term = np.concatenate([self._word_to_term, ids])

    def remove(self, ids, n_threads: int = 0) -> None:
        """Removes documents by id, keeping N, avgdl and every df exact; unknown ids are an
        error (nothing is removed). Costs the blocks of the lists that hold them."""
        arr = np.atleast_1d(raw_ids(ids, "ids"))
        if arr.size and arr.dtype.kind not in "iu":
            raise TypeError(f"ids must hold integers, got dtype {arr.dtype}")
        arr = np.ascontiguousarray(arr.astype(np.int64, copy=False).ravel())
        n_threads = check_threads(n_threads)
        with self._lock:
            unknown = arr[~self._native.has_ids(arr)]
            if unknown.size:
                shown = ", ".join(str(int(i)) for i in unknown[:5])
                raise ValueError(
                    f"ids: {unknown.size} id(s) are not in the index (e.g. {shown}); nothing removed"
                )
            self._native.remove(arr, n_threads)

    # ---- search ---------------------------------------------------------

    def search(self, queries, k: int, n_threads: int = 0, algorithm: str = "auto",
               allow=None, statistics: BM25Statistics | None = None) -> Hits:
        """Top-k documents of each query: ``Hits`` [nq, k], best first, ties by id.

        queries: a str (one query), a list of str, or a list of token lists.
        algorithm: "auto" (chosen per query from its lists and k), or force "exhaustive"
        (term-at-a-time), "maxscore", "bmw" (Block-Max WAND) or "bmp" (block-max pruning
        over ranges of 64 documents); all return the same hits.
        allow: only these ids may be returned (an id list or array, or a boolean mask
        indexed by id); applied inside every algorithm, so the hits are exactly the top-k
        of the allowed documents.

        Only documents holding at least one query term are results (as in Lucene, PISA
        and tantivy): rows are padded with id -1 / score -inf past the matching (allowed)
        documents, so a query none of whose words the index holds gets a row of padding.

        statistics: a ``BM25Statistics`` covering every query term (e.g. the sum over the
        shards of a sharded index, see ragcore.sparse.statistics): idf and length norms
        come from it instead of this index, so each shard scores as one index over all
        the shards' documents would. That search is exhaustive (``algorithm`` is checked
        but every algorithm returns the same hits).
        """
        if statistics is not None:
            return self._search_with_statistics(queries, k, n_threads, algorithm, allow,
                                                statistics)
        return self._run(queries, k, n_threads, algorithm, allow, None)

    def _search(self, queries, k, n_threads=0, algorithm="auto",
                allow=None) -> tuple[Hits, list[str]]:
        """search(), plus the algorithm that ran for each query (for benchmarks)."""
        if type(queries) is not str:
            queries = _as_documents(queries, "queries")[0]  # its length is the query count
        used = np.empty(1 if type(queries) is str else len(queries), np.uint8)
        return (self._run(queries, k, n_threads, algorithm, allow, used),
                [_ALGORITHM_NAME[c] for c in used])

    def _run(self, queries, k, n_threads, algorithm, allow, used) -> Hits:
        """The arguments checked, then one native call that encodes the queries and searches
        (one str is passed as it is); used: None, or a uint8 array that receives the
        algorithm code of each query."""
        if type(k) is not int or not 0 < k < 1 << 63:  # the plain case costs one test
            k = check_positive_int(k, "k")
            if k >= 1 << 63:  # past every native size (smaller ones get the native bound's error)
                raise ValueError(f"k: {k} results for each query exceed the bound on padded "
                                 "results")
        if type(n_threads) is not int or not 0 <= n_threads <= 1 << 16:
            n_threads = check_threads(n_threads)
        native_algorithm = _NATIVE_ALGORITHM.get(algorithm) if isinstance(algorithm, str) else None
        if native_algorithm is None:
            check_choice(algorithm, "algorithm", ALGORITHMS)  # raises, naming the choices
        encoder, native = self._pair
        pretokenized = False
        if type(queries) is not str:
            queries, pretokenized = _as_documents(queries, "queries")
        mask, by_row = (None, False) if allow is None else allow_mask(allow, native.slot_ids())
        return encoder.search(native, queries, pretokenized, k, native_algorithm, n_threads,
                              mask, by_row, used)

    def get_scores(self, query, statistics: BM25Statistics | None = None) -> np.ndarray:
        """float32 score of one query (a str or a token list) for every document, in the
        order of ``ids``; under ``statistics`` (see search) when given."""
        if isinstance(query, (str, bytes)):
            batch = [query]
        elif isinstance(query, (list, tuple)) and all(isinstance(t, str) for t in query):
            batch = [list(query)]
        else:
            raise TypeError("query must be a str or a list of str tokens")
        if statistics is not None:
            terms, weights, _, dfs = self._statistics_arrays(batch, statistics)
            return self._pair[1].get_scores_with_statistics(
                terms, weights, dfs, statistics.n_docs, statistics.total_length)
        encoder, native = self._pair
        terms, weights, _ = _encoded(encoder, batch)
        return native.get_scores(terms, weights)

    def statistics(self, queries) -> BM25Statistics:
        """This index's N, total length and the document frequency of every term of the
        queries (0 for a term it lacks): one shard's part of the global statistics."""
        batch, pretokenized = _as_documents(queries, "queries")
        native, term_ids = self._pair[1], self._term_ids
        dfs = native.doc_freqs()
        wanted = {t for query in query_terms(batch, pretokenized, self._normalizer)
                  for t, _ in query}
        freqs = {}
        for term in wanted:
            tid = term_ids.get(term, -1)
            freqs[term] = int(dfs[tid]) if 0 <= tid < len(dfs) else 0
        return BM25Statistics(int(native.num_docs), int(native.total_length), freqs)

    def _statistics_arrays(self, batch, statistics):
        """(local term ids or -1, multiplicities, offsets, global dfs) of the queries."""
        if not isinstance(statistics, BM25Statistics):
            raise TypeError("statistics must be a ragcore.sparse.BM25Statistics, "
                            f"got {type(statistics).__name__}")
        pretokenized = bool(batch) and isinstance(batch[0], list)
        per_query = query_terms(batch, pretokenized, self._normalizer)
        term_ids, freqs = self._term_ids, statistics.doc_freqs
        flat = [pair for query in per_query for pair in query]
        missing = [t for t, _ in flat if t not in freqs]
        if missing:
            raise ValueError(f"statistics: no document frequency for query term {missing[0]!r}; "
                             "gather them with BM25Index.statistics(queries) on every shard")
        terms = np.array([term_ids.get(t, -1) for t, _ in flat], dtype=np.int64)
        weights = np.array([float(c) for _, c in flat], dtype=np.float64)
        offsets = np.cumsum([0] + [len(q) for q in per_query], dtype=np.int64)
        dfs = np.array([freqs[t] for t, _ in flat], dtype=np.int64)
        return terms, weights, offsets, dfs

    def _search_with_statistics(self, queries, k, n_threads, algorithm, allow, statistics):
        k = check_positive_int(k, "k")
        n_threads = check_threads(n_threads)
        check_choice(algorithm, "algorithm", ALGORITHMS)
        batch, _ = _as_documents(queries, "queries")
        native = self._pair[1]
        terms, weights, offsets, dfs = self._statistics_arrays(batch, statistics)
        mask, by_row = allow_mask(allow, native.slot_ids()) if allow is not None else (None, False)
        filtered = {} if mask is None else {"allow": mask, "allow_by_row": by_row}
        scores, ids = native.search_with_statistics(
            terms, weights, offsets, dfs, statistics.n_docs, statistics.total_length, k,
            n_threads=n_threads, **filtered)
        return Hits(scores, ids)

    def _encode_queries(self, queries):
        """_encoded by the current encoder (for tests)."""
        return _encoded(self._pair[0], queries)

    @property
    def query_cache_words(self) -> int:
        """Words in the query stem cache (only with a stemmer): at most
        QUERY_CACHE_WORDS, least recently used out first."""
        return self._encoder.cached_words

    def impacts(self) -> dict:
        """Every posting's score part, as the CPU algorithms read it, in CSR form: "offsets"
        (term -> its postings), "docs" (slots), "values" (float32 parts) and "slot_ids"
        (slot -> document id, -1 if removed). What a GPU copy of the index uploads."""
        return self._native.impacts(0)

    def weighed_queries(self, queries):
        """The queries as the scoring code sees them: (term ids, float64 weights, offsets of
        each query's terms, float64 base score per query), each term once per query."""
        encoder, native = self._pair
        terms, weights, offsets = _encoded(encoder, queries)
        terms, weights, base = native.weigh_queries(terms, weights, offsets)
        return terms, weights, offsets, base

    # ---- copies and devices ---------------------------------------------

    def copy(self) -> BM25Index:
        """An independent copy of the index (same documents, ids and settings)."""
        with self._lock:
            clone = self._empty_like()
            clone._native = _core.Bm25Index.from_arrays(dict(self._native.to_arrays()),
                                                        **self._native_params())
            clone._bind_pair()
            clone._terms = list(self._terms)
            clone._term_ids = dict(self._term_ids)
            clone._encoder.add_terms(clone._terms)
            clone._next_id = self._next_id
        return clone

    def to(self, device):
        """'cpu' gives this index; 'cuda' / 'cuda:N' a GpuBM25Index (a snapshot: later
        changes to this index do not reach it) on that device."""
        return to_device(self, device)

    # ---- persistence ----------------------------------------------------

    def save(self, path) -> None:
        """Writes the index to path (versioned, checksummed; temporary file, then rename)."""
        with self._lock:
            arrays = dict(self._native.to_arrays())
            encoded = [t.encode("utf-8") for t in self._terms]
            arrays["terms"] = np.frombuffer(b"".join(encoded), dtype=np.uint8)
            arrays["term_ends"] = np.cumsum([len(e) for e in encoded], dtype=np.int64)
            params = {"k1": self._k1, "b": self._b, "delta": self._delta,
                      "variant": self._variant, "lucene_norms": self._lucene_norms,
                      "stopwords": list(self._normalizer.stopwords),
                      "stemmer": self._normalizer.stemmer_name, "next_id": self._next_id}
            write_index(path, _FILE_KIND, params, arrays)

    @classmethod
    def load(cls, path, mmap: bool = False) -> BM25Index:
        """Reads an index written by save(); damaged, foreign or crafted files raise
        IndexFileError naming the field that is wrong.

        The postings are checked block by block and decoded into native memory, so
        mmap=True only spares reading the file into a second buffer while loading.
        A file may declare at most ``MAX_POSTINGS_PER_BYTE`` postings per byte of its
        posting payload (the codec's densest case), so a small file cannot make the
        loader allocate or score for a huge one.
        """
        params, arrays = read_index(path, _FILE_KIND, mmap=mmap)
        f = FileFields(path, params, arrays)
        k1 = f.float_param("k1", 0.0, MAX_K1)
        b = f.float_param("b", 0.0, 1.0)
        delta = f.float_param("delta", 0.0, MAX_DELTA)
        variant = f.choice_param("variant", VARIANTS)
        stopwords, stemmer = f.param("stopwords"), f.param("stemmer")
        if not isinstance(stopwords, list) or not all(isinstance(w, str) for w in stopwords):
            f.fail("params.stopwords", "expected a list of str")
        if stemmer is not None and not isinstance(stemmer, str):
            f.fail("params.stemmer", "expected null or a Snowball language name")
        try:
            index = cls(k1, b, variant, delta, stopwords or None, stemmer,
                        f.bool_param("lucene_norms"))
        except (ValueError, TypeError) as err:
            raise IndexFileError(f"{path}: inconsistent index contents: params: {err}") from None
        native_arrays = _checked_posting_arrays(f)
        f.sorted_ids("doc_ids", native_arrays["doc_ids"], allow_removed=True)
        next_id = f.next_id(native_arrays["doc_ids"])
        terms = _checked_terms(f)
        try:
            native = _core.Bm25Index.from_arrays(native_arrays, **index._native_params())
        except ValueError as err:
            raise IndexFileError(f"{path}: inconsistent index contents: postings: {err}") from None
        if native.num_terms > len(terms):
            f.fail("terms", f"{len(terms)} terms for {native.num_terms} posting lists")
        index._native = native
        index._bind_pair()
        index._terms = terms
        index._term_ids = {t: i for i, t in enumerate(terms)}
        index._encoder.add_terms(terms)
        index._next_id = next_id
        return index


# The largest k1 and delta: beyond them no ranking changes (BM25's term-frequency
# saturation is gone long before), and up to them every score and pruning bound is finite.
MAX_K1 = 1000.0
MAX_DELTA = 1000.0
# A posting block of 128 postings takes at least its 2-byte header (all gaps 1, all tf 1).
MAX_POSTINGS_PER_BYTE = 64


def _checked_posting_arrays(f: FileFields) -> dict:
    doc_ids = f.array("doc_ids", np.int64, (None,))
    lengths = f.array("doc_lengths", np.int64, (len(doc_ids),))
    sizes = f.array("list_sizes", np.int64, (None,))
    ends = f.array("list_ends", np.int64, (len(sizes),))
    postings = f.array("postings", np.uint8, (None,))
    if len(doc_ids) and doc_ids.min() < -1:
        f.fail("doc_ids", "ids must be >= 0 (or -1 for a removed document)")
    if len(lengths) and (lengths.min() < 0 or lengths.max() > 0xFFFFFFFF):
        f.fail("doc_lengths", "lengths must be in [0, 2**32)")
    if len(sizes) and (sizes.min() < 0 or sizes.max() > len(doc_ids)):
        f.fail("list_sizes", f"a list size is outside [0, {len(doc_ids)} documents]")
    starts = np.concatenate([[0], ends[:-1]]) if len(ends) else ends
    if len(ends) and ((ends < starts).any() or ends[-1] != len(postings)):
        f.fail("list_ends", f"list ends must rise to the {len(postings)} posting bytes")
    if (sizes > MAX_POSTINGS_PER_BYTE * (ends - starts)).any():
        f.fail("list_sizes", f"a list declares more than {MAX_POSTINGS_PER_BYTE} postings "
                             "per byte of its payload")
    return {"doc_ids": np.ascontiguousarray(doc_ids), "doc_lengths": np.ascontiguousarray(lengths),
            "list_sizes": np.ascontiguousarray(sizes), "list_ends": np.ascontiguousarray(ends),
            "postings": np.ascontiguousarray(postings)}


def _checked_terms(f: FileFields) -> list[str]:
    blob = f.array("terms", np.uint8, (None,)).tobytes()
    ends = f.array("term_ends", np.int64, (None,))
    starts = np.concatenate([[0], ends[:-1]]) if len(ends) else ends
    if len(ends) and ((ends <= starts).any() or ends[-1] != len(blob)):
        f.fail("term_ends", f"term ends must rise strictly to the {len(blob)} bytes of terms")
    try:
        terms = [blob[s:e].decode("utf-8") for s, e in zip(starts.tolist(), ends.tolist())]
    except UnicodeDecodeError as err:
        f.fail("terms", f"not UTF-8 ({err.reason})")
    if len(set(terms)) != len(terms):
        f.fail("terms", "a term occurs twice")
    return terms


def _encoded(encoder, queries):
    """Flattened (term ids, multiplicities, offsets), each term once per query, in order
    of first appearance: tokenized, normalised and counted natively (QueryEncoder)."""
    if isinstance(queries, str):  # one query: nothing to inspect
        return encoder.encode([queries])
    batch, pretokenized = _as_documents(queries, "queries")
    return encoder.encode(batch, pretokenized=pretokenized)


def _check_number(value, name: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    value = float(value)
    if not (low <= value <= high) or math.isnan(value) or math.isinf(value):
        raise ValueError(f"{name} must be a finite number in [{low:g}, {high:g}], got {value}")
    return value


def _as_documents(texts, name: str) -> tuple[list, bool]:
    """(documents, pre-tokenized?) from a str, a list of str/bytes or a list of token lists."""
    if isinstance(texts, (str, bytes)):
        return [texts], False
    if isinstance(texts, np.ndarray) or not hasattr(texts, "__iter__"):
        raise TypeError(f"{name} must be a str, a list of str (or UTF-8 bytes) or a list of "
                        f"token lists, got {type(texts).__name__}")
    docs = list(texts)
    if all(isinstance(d, (str, bytes)) for d in docs):
        return docs, False
    if all(isinstance(d, (list, tuple)) for d in docs):
        return [list(d) if isinstance(d, tuple) else d for d in docs], True
    bad = next((i for i, d in enumerate(docs) if not isinstance(d, (str, bytes, list, tuple))), None)
    if bad is not None:
        raise TypeError(f"{name}[{bad}] must be a str, bytes or a list of str tokens, "
                        f"got {type(docs[bad]).__name__}")
    raise TypeError(f"{name} mixes texts and token lists; pass one kind")
