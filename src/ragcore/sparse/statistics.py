"""Collection statistics for BM25 given from outside the index.

A sharded index scores BM25 like one index over all its documents when every shard uses
the same statistics: the live documents N, their total length and each query term's
document frequency, summed over the shards (Elasticsearch's dfs_query_then_fetch). A first
phase asks every shard for ``BM25Index.statistics(queries)``, ``combine_statistics`` sums
them, and the second phase passes the sum to ``BM25Index.search(..., statistics=)``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from types import MappingProxyType

from .. import _core


@dataclass(frozen=True)
class BM25Statistics:
    """N, total length and the document frequency of each term (as indexed: after
    stopwords and stemming). A term missing from ``doc_freqs`` is not covered: a search
    whose query holds it is refused."""

    n_docs: int
    total_length: int
    doc_freqs: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self):
        for name in ("n_docs", "total_length"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"statistics: {name} must be an int >= 0, got {value!r}")
        freqs = dict(self.doc_freqs)
        for term, df in freqs.items():
            if not isinstance(term, str):
                raise TypeError(f"statistics: doc_freqs keys must be str terms, got {term!r}")
            if isinstance(df, bool) or not isinstance(df, int) or not 0 <= df <= self.n_docs:
                raise ValueError(f"statistics: doc_freqs[{term!r}] must be an int in "
                                 f"[0, n_docs={self.n_docs}], got {df!r}")
        object.__setattr__(self, "doc_freqs", MappingProxyType(freqs))

    def __reduce__(self):  # mapping proxies do not pickle (Ray ships statistics to actors)
        return (BM25Statistics, (self.n_docs, self.total_length, dict(self.doc_freqs)))


def combine_statistics(parts) -> BM25Statistics:
    """The statistics of the union of disjoint document sets: every count summed (a term
    some part lacks counts 0 there)."""
    parts = list(parts)
    if not all(isinstance(p, BM25Statistics) for p in parts):
        raise TypeError("combine_statistics takes BM25Statistics values")
    freqs: Counter = Counter()
    for part in parts:
        freqs.update(part.doc_freqs)
    for part in parts:  # a term counted nowhere still stays covered
        for term in part.doc_freqs:
            freqs.setdefault(term, 0)
    return BM25Statistics(sum(p.n_docs for p in parts), sum(p.total_length for p in parts),
                          dict(freqs))


def query_terms(batch: list, pretokenized: bool, normalizer) -> list[list[tuple[str, int]]]:
    """Each query's index terms with their multiplicities, in order of first appearance
    (the order BM25Index scores them in); texts tokenized natively, stopwords and the
    stemmer applied by normalizer."""
    tokens = batch if pretokenized else _core.tokenize_texts(batch, n_threads=1)
    distinct = list({w: None for query in tokens for w in query})
    term_of = dict(zip(distinct, normalizer.terms(distinct)))
    out = []
    for query in tokens:
        counts: Counter = Counter(term_of[w] for w in query if term_of[w] is not None)
        out.append(list(counts.items()))
    return out
