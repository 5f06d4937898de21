"""BM25 in plain numpy: every variant's formula, written independently of the native index
(cpp/include/ragcore/sparse/scoring.h) and of ragcore.sparse.variants, which name the same
variants in the same order; the GPU plans' exhaustive and candidate searches; and how a
query becomes term ids.

Each variant is an idf and a term-frequency part, small pure functions whose docstrings
cite their source.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

from ..hits import Hits
from .selection import topk


def _idf_lucene(df, n):
    """Lucene >= 8 BM25Similarity.idf: ln(1 + (N - df + 0.5) / (df + 0.5)), always positive."""
    return np.log(1.0 + (n - df + 0.5) / (df + 0.5))


def _idf_okapi(df, n):
    """Robertson et al., Okapi at TREC-3 (1994): ln((N - df + 0.5) / (df + 0.5)), unclamped
    (negative for terms in more than half the documents)."""
    return np.log((n - df + 0.5) / (df + 0.5))


def _idf_robertson(df, n):
    """bm25s scoring._score_idf_robertson: the Okapi idf with its ratio clamped at 1 (idf >= 0)."""
    return np.log(np.maximum(1.0, (n - df + 0.5) / (df + 0.5)))


def _idf_atire(df, n):
    """bm25s scoring._score_idf_atire (Trotman et al., ADCS 2014): ln(N / df)."""
    return np.log(n / df)


def _idf_bm25l(df, n):
    """bm25s scoring._score_idf_bm25l (Lv & Zhai, CIKM 2011): ln((N + 1) / (df + 0.5))."""
    return np.log((n + 1.0) / (df + 0.5))


def _idf_bm25plus(df, n):
    """bm25s scoring._score_idf_bm25plus (Lv & Zhai, CIKM 2011): ln((N + 1) / df)."""
    return np.log((n + 1.0) / df)


def _length_norm(dl, avgdl, b):
    return 1.0 - b + b * dl / avgdl


def _tf_lucene(tf, dl, avgdl, k1, b, delta):
    """Lucene >= 8 BM25Similarity: tf / (tf + k1 (1 - b + b dl / avgdl)), no (k1 + 1) factor
    (dropped in LUCENE-8563; it does not change the ranking). Also bm25s's robertson/lucene tfc."""
    return tf / (tf + k1 * _length_norm(dl, avgdl, b))


def _tf_classic(tf, dl, avgdl, k1, b, delta):
    """Robertson & Zaragoza, The Probabilistic Relevance Framework (2009), eq. 3.15; Lucene < 8
    and bm25s's atire tfc: (k1 + 1) tf / (tf + k1 (1 - b + b dl / avgdl))."""
    return (k1 + 1.0) * tf / (tf + k1 * _length_norm(dl, avgdl, b))


def _tf_bm25l(tf, dl, avgdl, k1, b, delta):
    """bm25s scoring._score_tfc_bm25l (Lv & Zhai, CIKM 2011): c = tf / (1 - b + b dl / avgdl),
    (k1 + 1)(c + delta) / (k1 + c + delta); an absent term (c = 0) still scores."""
    c = tf / _length_norm(dl, avgdl, b)
    return (k1 + 1.0) * (c + delta) / (k1 + c + delta)


def _tf_bm25plus(tf, dl, avgdl, k1, b, delta):
    """bm25s scoring._score_tfc_bm25plus (Lv & Zhai, CIKM 2011): the classic part + delta; an
    absent term still scores delta."""
    return _tf_classic(tf, dl, avgdl, k1, b, delta) + delta


BM25_VARIANTS = {
    "lucene": (_idf_lucene, _tf_lucene),
    "lucene_legacy": (_idf_lucene, _tf_classic),
    "okapi": (_idf_okapi, _tf_classic),
    "robertson": (_idf_robertson, _tf_lucene),
    "atire": (_idf_atire, _tf_classic),
    "bm25l": (_idf_bm25l, _tf_bm25l),
    "bm25+": (_idf_bm25plus, _tf_bm25plus),
}


def bm25_absent_part(variant: str, k1: float, delta: float) -> float:
    """The tf part of a query term a document lacks (tf = 0). Only bm25l, (k1 + 1) delta /
    (k1 + delta), and bm25+, delta, give it a value (bm25s's "nonoccurrence" scores), so with
    them every document gets a base score; the other variants score only terms a document
    holds."""
    if variant == "bm25l":
        return (k1 + 1.0) * delta / (k1 + delta)
    if variant == "bm25+":
        return delta
    return 0.0


def lucene_norm_length(dl):
    """Lucene's SmallFloat.byte4ToInt(intToByte4(dl)): the document length Lucene scores with
    (exact up to 39, then 4 significant bits)."""
    dl = np.asarray(dl, dtype=np.int64)
    free = 24  # 255 - longToInt4(Integer.MAX_VALUE)
    x = np.maximum(dl - free, 0)
    bits = np.floor(np.log2(np.maximum(x, 1))).astype(np.int64) + 1  # bit length of x (x >= 1)
    shift = np.maximum(bits - 4, 0)
    coarse = free + ((x >> shift) << shift)  # keep the 4 most significant bits of x
    return np.where(dl < free, dl, coarse)


def bm25_scores(docs, query, k1=1.5, b=0.75, variant="lucene", delta=0.5, lucene_norms=False):
    """float64 scores of one query (a list of tokens, repeats counted) for every document
    (lists of tokens). Query tokens that no document holds contribute nothing."""
    if variant not in BM25_VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {', '.join(BM25_VARIANTS)}")
    idf_fn, tf_fn = BM25_VARIANTS[variant]
    n = len(docs)
    true_len = np.array([len(d) for d in docs], dtype=np.float64)
    avgdl = true_len.mean() if n and true_len.sum() > 0 else 1.0
    dl = lucene_norm_length(true_len).astype(np.float64) if lucene_norms else true_len
    counts = [Counter(d) for d in docs]
    scores = np.zeros(n, dtype=np.float64)
    for term in query:
        tf = np.array([c.get(term, 0) for c in counts], dtype=np.float64)
        df = float((tf > 0).sum())
        if df == 0:
            continue
        with np.errstate(invalid="ignore", divide="ignore"):  # 0/0 at tf = 0 when k1 = 0
            part = tf_fn(tf, dl, avgdl, k1, b, delta)
        part = np.where(tf > 0, part, bm25_absent_part(variant, k1, delta))
        scores += idf_fn(df, float(n)) * part
    return scores


def bm25_scores_with_statistics(docs, query, n_docs, total_length, doc_freqs, k1=1.5, b=0.75,
                                variant="lucene", delta=0.5, lucene_norms=False):
    """float64 scores of one query (a list of terms, repeats counted) for every document of
    docs (lists of terms) under statistics given from outside: idf from doc_freqs (term ->
    df) and n_docs, length norms from the average total_length / n_docs (1 if either is 0).
    A query term of df 0 contributes nothing; one absent from doc_freqs is an error."""
    if variant not in BM25_VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {', '.join(BM25_VARIANTS)}")
    idf_fn, tf_fn = BM25_VARIANTS[variant]
    avgdl = total_length / n_docs if n_docs and total_length else 1.0
    true_len = np.array([len(d) for d in docs], dtype=np.float64)
    dl = lucene_norm_length(true_len).astype(np.float64) if lucene_norms else true_len
    counts = [Counter(d) for d in docs]
    scores = np.zeros(len(docs), dtype=np.float64)
    for term in query:
        df = float(doc_freqs[term])
        if df == 0:
            continue
        tf = np.array([c.get(term, 0) for c in counts], dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            part = tf_fn(tf, dl, avgdl, k1, b, delta)
        part = np.where(tf > 0, part, bm25_absent_part(variant, k1, delta))
        scores += idf_fn(df, float(n_docs)) * part
    return scores


def bm25_matches(docs, query) -> np.ndarray:
    """Which documents (lists of tokens) hold at least one token of query: the only BM25
    results, as in Lucene, PISA and tantivy. A document without any query term is not a
    match even where bm25l / bm25+ give it a base score (bm25_scores still computes it)."""
    wanted = set(query)
    return np.array([not wanted.isdisjoint(d) for d in docs], dtype=bool)


def bm25_top_matches(scores: np.ndarray, matches: np.ndarray, ids: np.ndarray, k: int) -> Hits:
    """The top k of one query's scores among its matching documents, padded with (-1, -inf)."""
    return topk(np.asarray(scores)[matches][None, :], np.asarray(ids)[matches], k)


def bm25_impact_search(impacts: dict, terms, weights, offsets, base, k: int) -> Hits:
    """Top-k as GpuBM25Index computes it, from BM25Index impacts (CSR: term -> slots and
    float32 score parts) and weighed queries (terms, weights, offsets, base per query):
    float64 sums of weight * part in query order, then float32(base + sum) for every live
    slot (removed slots have id -1) that holds a query term, ties by id ascending."""
    offsets_t, docs, values, slot_ids = (impacts[name] for name in
                                         ("offsets", "docs", "values", "slot_ids"))
    live = slot_ids >= 0
    rows = []
    for q in range(len(offsets) - 1):
        acc = np.zeros(len(slot_ids), dtype=np.float64)
        held = np.zeros(len(slot_ids), dtype=bool)
        for i in range(offsets[q], offsets[q + 1]):
            if terms[i] < 0:
                continue
            span = slice(offsets_t[terms[i]], offsets_t[terms[i] + 1])
            acc[docs[span]] += weights[i] * values[span].astype(np.float64)
            held[docs[span]] = True
        rows.append(bm25_top_matches((base[q] + acc).astype(np.float32), live & held, slot_ids, k))
    if not rows:
        return topk(np.zeros((0, 0), dtype=np.float32), np.zeros(0, dtype=np.int64), k)
    return Hits(np.vstack([r.scores for r in rows]), np.vstack([r.ids for r in rows]))


def bm25_dense_bound(weights_and_maxima, base: float) -> float:
    """The best float32 score a document holding none of a query's essential terms can
    reach: float32(base + sum of weight * (largest score part) over its other terms with
    a positive weight), with a 1e-9 relative margin for the order of the additions."""
    bound = sum(w * float(m) for w, m in weights_and_maxima if w > 0)
    return float(np.float32(base + bound * (1.0 + 1e-9)))


def bm25_candidate_search(impacts: dict, terms, weights, offsets, base, k: int,
                          dense_min_df: int) -> tuple[Hits, np.ndarray]:
    """GpuBM25Index's pruned search, and for each query whether it fell back.

    A query's terms whose lists hold fewer than dense_min_df postings are essential: the
    documents holding one are the candidates, scored exactly (every query term, in query
    order, as bm25_impact_search). The other documents hold only dense terms, so none can
    score above bm25_dense_bound; when the k-th best candidate scores strictly above it, the
    candidates' top k is the exact top k. Otherwise (no essential term, fewer than k
    candidates, or a bound too high) the query falls back to bm25_impact_search."""
    offsets_t, docs, values, slot_ids = (impacts[name] for name in
                                         ("offsets", "docs", "values", "slot_ids"))
    nq = len(offsets) - 1
    exhaustive = bm25_impact_search(impacts, terms, weights, offsets, base, k)
    out_scores, out_ids = exhaustive.scores.copy(), exhaustive.ids.copy()
    fell_back = np.ones(nq, dtype=bool)
    for q in range(nq):
        kept = [(int(terms[i]), weights[i]) for i in range(offsets[q], offsets[q + 1])
                if terms[i] >= 0 and offsets_t[terms[i] + 1] > offsets_t[terms[i]]]
        df = {t: offsets_t[t + 1] - offsets_t[t] for t, _ in kept}
        essential = [t for t, _ in kept if df[t] < dense_min_df]
        if not essential:
            continue
        candidates = np.unique(np.concatenate(
            [docs[offsets_t[t]:offsets_t[t + 1]] for t in essential]))
        if len(candidates) < k:
            continue
        acc = np.zeros(len(slot_ids), dtype=np.float64)
        for t, w in kept:
            span = slice(offsets_t[t], offsets_t[t + 1])
            acc[docs[span]] += w * values[span].astype(np.float64)
        scores = (base[q] + acc[candidates]).astype(np.float32)
        best = topk(scores[None, :], slot_ids[candidates], k)
        bound = bm25_dense_bound([(w, values[offsets_t[t]:offsets_t[t + 1]].max())
                                  for t, w in kept if df[t] >= dense_min_df], base[q])
        if bound < best.scores[0, k - 1]:
            out_scores[q], out_ids[q] = best.scores[0], best.ids[0]
            fell_back[q] = False
    return Hits(out_scores, out_ids), fell_back


_QUERY_TOKEN = re.compile(r"(?u)\b\w\w+\b")


def bm25_query_terms(queries, term_ids: dict, stopwords=(), stem=None, pretokenized=False):
    """(term ids, multiplicities, offsets) of queries as BM25Index scores them: texts are
    tokenized as re.findall(r"(?u)\\b\\w\\w+\\b", text.lower()) (token lists used as given),
    stopwords dropped, the rest mapped through stem (a word -> stem function, or none) and
    looked up in term_ids; each term once per query, in order of first appearance."""
    stop = set(stopwords)
    terms, weights, offsets = [], [], [0]
    for query in queries:
        words = query if pretokenized else _QUERY_TOKEN.findall(query.lower())
        counts: Counter = Counter()
        for word in words:
            if word in stop:
                continue
            term = term_ids.get(stem(word) if stem else word)
            if term is not None:
                counts[term] += 1  # Counter keeps first-insertion order
        terms.extend(counts)
        weights.extend(counts.values())
        offsets.append(len(terms))
    return (np.array(terms, dtype=np.int64), np.array(weights, dtype=np.float64),
            np.array(offsets, dtype=np.int64))
