"""The BM25 scoring variants: one registry, in the order of the native ``ragcore::Variant``.

Every variant scores a query term in a document as ``idf(df, N) * g(tf, norm)`` with
``norm = 1 - b + b * dl / avgdl``; the native index (cpp/include/ragcore/sparse/scoring.h)
computes them. This module holds what the Python layer needs to know of each: its name, its
formulas as text (for documentation and error messages), where it comes from, and whether a
term a document lacks still scores. The independent numpy formulas that tests check the
native scores with live in ragcore.reference.sparse.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Variant:
    """One BM25 formula: idf and term-frequency part, as text, and its source."""

    name: str
    idf: str
    tf: str
    source: str
    scores_absent_terms: bool = False  # a document without the term gets g(0, norm) > 0


_LUCENE_IDF = "ln(1 + (N - df + 0.5) / (df + 0.5))"
_CLASSIC_TF = "(k1 + 1) tf / (tf + k1 norm)"

REGISTRY: dict[str, Variant] = {v.name: v for v in (
    Variant("lucene", _LUCENE_IDF, "tf / (tf + k1 norm)",
            "Lucene >= 8 BM25Similarity (the (k1 + 1) factor dropped in LUCENE-8563)"),
    Variant("lucene_legacy", _LUCENE_IDF, _CLASSIC_TF, "Lucene < 8 BM25Similarity"),
    Variant("okapi", "ln((N - df + 0.5) / (df + 0.5)), negative past df = N / 2", _CLASSIC_TF,
            "Robertson et al., Okapi at TREC-3 (1994)"),
    Variant("robertson", "ln(max(1, (N - df + 0.5) / (df + 0.5)))", "tf / (tf + k1 norm)",
            "bm25s scoring._score_idf_robertson"),
    Variant("atire", "ln(N / df)", _CLASSIC_TF, "Trotman et al., ADCS 2014; bm25s 'atire'"),
    Variant("bm25l", "ln((N + 1) / (df + 0.5))",
            "(k1 + 1)(c + delta) / (k1 + c + delta), c = tf / norm",
            "Lv & Zhai, CIKM 2011; bm25s 'bm25l'", scores_absent_terms=True),
    Variant("bm25+", "ln((N + 1) / df)", _CLASSIC_TF + " + delta",
            "Lv & Zhai, CIKM 2011; bm25s 'bm25+'", scores_absent_terms=True),
)}

VARIANTS = tuple(REGISTRY)
