"""Tokenizing text the way the BM25 index does (``ragcore.tokenize``).

The default rule is Python's ``re.findall(r"(?u)\\b\\w\\w+\\b", text.lower())`` (the
scikit-learn and bm25s default), run natively on any Unicode text. Then, optionally,
stopwords are dropped and the remaining words are stemmed with a Snowball stemmer
from PyStemmer (``pip install PyStemmer``; the ``stem`` extra), once per distinct word.
"""

from __future__ import annotations

from .. import _core
from .._util.arrays import check_threads

# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET (also bm25s's "en" list).
STOPWORDS_EN = (
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
    "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
    "these", "they", "this", "to", "was", "will", "with",
)
_NAMED_STOPWORDS = {"en": STOPWORDS_EN, "english": STOPWORDS_EN}

# The query stem cache of a BM25Index with a stemmer: at most this many words and about this
# many bytes (each entry counted as its two strings plus 128 bytes of bookkeeping), least
# recently used out first; a word it lacks costs one call to the stemmer.
QUERY_CACHE_WORDS = 65536
QUERY_CACHE_BYTES = 16 << 20


def resolve_stopwords(stopwords) -> tuple[str, ...]:
    """None, "en" (STOPWORDS_EN) or an iterable of str, as a sorted tuple."""
    if stopwords is None:
        return ()
    if isinstance(stopwords, str):
        if stopwords not in _NAMED_STOPWORDS:
            raise ValueError(
                f"unknown stopwords {stopwords!r}; expected None, one of "
                f"{', '.join(map(repr, _NAMED_STOPWORDS))} or a list of words"
            )
        return tuple(sorted(_NAMED_STOPWORDS[stopwords]))
    words = list(stopwords) if hasattr(stopwords, "__iter__") else [None]
    if not all(isinstance(w, str) for w in words):
        raise TypeError("stopwords must be None, 'en' or an iterable of str")
    return tuple(sorted(set(words)))


def load_stemmer(stemmer):
    """A PyStemmer Snowball stemmer for a language name ("english", "porter", ...), or None."""
    if stemmer is None:
        return None
    if not isinstance(stemmer, str):
        raise TypeError(f"stemmer must be None or a Snowball language name, got {type(stemmer).__name__}")
    try:
        import Stemmer  # PyStemmer: optional, imported only when a stemmer is asked for
    except ImportError:
        raise ImportError(
            f"stemmer={stemmer!r} needs PyStemmer: pip install 'PyStemmer>=2.2' (the stem extra)"
        ) from None
    if stemmer not in Stemmer.algorithms():
        raise ValueError(
            f"unknown stemmer {stemmer!r}; expected one of {', '.join(sorted(Stemmer.algorithms()))}"
        )
    return Stemmer.Stemmer(stemmer)


class WordNormalizer:
    """Maps words to index terms: drops stopwords, stems the rest (each distinct word once)."""

    def __init__(self, stopwords=None, stemmer=None):
        self.stopwords = resolve_stopwords(stopwords)
        self.stemmer_name = stemmer
        self._stop = frozenset(self.stopwords)
        self._stemmer = load_stemmer(stemmer)

    def query_encoder(self):
        """A native QueryEncoder with these stopwords and this stemmer (which it calls once
        per word its cache lacks; see QUERY_CACHE_WORDS)."""
        stem_words = self._stemmer.stemWords if self._stemmer is not None else None
        return _core.QueryEncoder(list(self.stopwords), stem_words=stem_words,
                                  cache_words=QUERY_CACHE_WORDS, cache_bytes=QUERY_CACHE_BYTES)

    def terms(self, words: list[str]) -> list[str | None]:
        """The term of each word (None for a stopword)."""
        kept = [w for w in words if w not in self._stop]
        stems = self._stemmer.stemWords(kept) if self._stemmer is not None and kept else kept
        stem_of = dict(zip(kept, stems))
        return [stem_of.get(w) for w in words]


def tokenize(texts, stopwords=None, stemmer=None, n_threads: int = 0):
    """Tokens of a text (a list of str) or of a list of texts (a list of lists).

    texts: str or bytes (UTF-8), or a list of them; invalid UTF-8 raises ValueError
    naming the document. stopwords: None, "en" or a list of words. stemmer: None or a
    Snowball language name (needs PyStemmer).
    """
    n_threads = check_threads(n_threads)
    single = isinstance(texts, (str, bytes))
    batch = [texts] if single else list(texts)
    tokens = _core.tokenize_texts(batch, n_threads=n_threads)
    normalizer = WordNormalizer(stopwords, stemmer)
    if normalizer.stopwords or normalizer.stemmer_name:
        distinct = list({w: None for doc in tokens for w in doc})
        term_of = dict(zip(distinct, normalizer.terms(distinct)))
        tokens = [[term_of[w] for w in doc if term_of[w] is not None] for doc in tokens]
    return tokens[0] if single else tokens
