"""Plain numpy reference implementations, written for clarity, not speed.

Tests compare every native function with these. Scores follow the library's
convention: higher is better; for "l2" the score is minus the squared
Euclidean distance. Ordering: score descending, then id ascending.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ._storage import to_float32, to_storage
from .hits import PADDING_ID, Hits

METRICS = ("ip", "cosine", "l2")


def round_to_storage(x: np.ndarray, dtype: str) -> np.ndarray:
    """The float32 values that x becomes once stored as dtype."""
    return to_float32(to_storage(np.asarray(x, dtype=np.float32), dtype, "x"), dtype)


def normalize_rows(x: np.ndarray) -> np.ndarray:
    """Rows divided by their Euclidean norm, in float64."""
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def dense_scores(corpus: np.ndarray, queries: np.ndarray, metric: str = "ip") -> np.ndarray:
    """float64 [nq, n] scores of every query against every corpus row."""
    corpus = np.asarray(corpus, dtype=np.float64)
    queries = np.asarray(queries, dtype=np.float64)
    if metric == "ip":
        return queries @ corpus.T
    if metric == "cosine":
        return normalize_rows(queries) @ normalize_rows(corpus).T
    if metric == "l2":
        diff = queries[:, None, :] - corpus[None, :, :]
        return -np.einsum("qnd,qnd->qn", diff, diff)
    raise ValueError(f"unknown metric {metric!r}; expected one of {METRICS}")


def topk(scores: np.ndarray, ids: np.ndarray, k: int) -> Hits:
    """Best k of each row of scores: score descending, ties by id ascending, padded."""
    scores = np.asarray(scores, dtype=np.float64)
    ids = np.asarray(ids, dtype=np.int64)
    nq, n = scores.shape
    out_scores = np.full((nq, k), -np.inf, dtype=np.float32)
    out_ids = np.full((nq, k), PADDING_ID, dtype=np.int64)
    kept = min(k, n)
    for row in range(nq):
        order = np.lexsort((ids, -scores[row]))[:kept]
        out_scores[row, :kept] = scores[row, order]
        out_ids[row, :kept] = ids[order]
    return Hits(out_scores, out_ids)


def flat_search(corpus, queries, k: int, metric: str = "ip", ids=None) -> Hits:
    """Exact top-k by brute force."""
    corpus = np.asarray(corpus)
    if ids is None:
        ids = np.arange(len(corpus), dtype=np.int64)
    return topk(dense_scores(corpus, np.atleast_2d(queries), metric), ids, k)


# Ranking metrics, one query at a time, with trec_eval's definitions (see ragcore.evaluate).


def trec_eval_order(scores: dict) -> list:
    """Document ids by score descending, equal scores by id descending as strings (trec_eval).

    trec_eval stores scores as C floats, so scores are compared after rounding to float32.
    """
    docs = sorted(scores, reverse=True)
    with np.errstate(over="ignore"):
        docs.sort(key=lambda doc: -np.float32(scores[doc]))  # stable: keeps the id order within equal scores
    return docs


def ranking_metric(ranking: list, grades: dict, metric: str, k: int | None = None) -> float:
    """One metric of one query: ranking is best first, grades maps judged ids to grades."""
    top = ranking if k is None else ranking[:k]
    relevant = [grades.get(doc, 0) >= 1 for doc in top]
    num_rel = sum(g >= 1 for g in grades.values())
    if metric == "precision":
        return sum(relevant) / k
    if metric == "recall":
        return sum(relevant) / num_rel if num_rel else 0.0
    if metric == "hit":
        return float(any(relevant))
    if metric == "mrr":
        return next((1.0 / rank for rank, rel in enumerate(relevant, 1) if rel), 0.0)
    if metric == "map":
        found, total = 0, 0.0
        for rank, rel in enumerate(relevant, 1):
            if rel:
                found += 1
                total += found / rank
        return total / num_rel if num_rel else 0.0
    if metric == "ndcg":
        dcg = sum(max(grades.get(doc, 0), 0) / np.log2(rank + 1) for rank, doc in enumerate(top, 1))
        ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
        idcg = sum(g / np.log2(rank + 1) for rank, g in enumerate(ideal, 1))
        return dcg / idcg if idcg else 0.0
    if metric == "rprec":
        return sum(grades.get(doc, 0) >= 1 for doc in ranking[:num_rel]) / num_rel if num_rel else 0.0
    raise ValueError(f"unknown metric {metric!r}")


# Fusion, one query at a time (see ragcore.fusion).


def fuse_query(lists: list, method: str = "rrf", norm: str | None = None, weights=None,
               r0: float = 60) -> dict:
    """Fused score per id of one query; lists holds, per retriever, (id, score) pairs best first."""
    weights = [1.0] * len(lists) if weights is None else list(weights)
    fused: dict = {}
    count: dict = {}
    for pairs, w in zip(lists, weights):
        scores = [s for _, s in pairs]
        for rank, (doc, score) in enumerate(pairs, 1):
            if method == "rrf":
                value = w / (r0 + rank)
            else:
                value = w * _normalise(score, rank, scores, norm)
            fused.setdefault(doc, []).append(value)
            count[doc] = count.get(doc, 0) + 1
    total = {doc: float(sum(sorted(values))) for doc, values in fused.items()}
    if method == "combmnz":
        total = {doc: value * count[doc] for doc, value in total.items()}
    return total


def _normalise(score: float, rank: int, scores: list, norm: str | None) -> float:
    if norm is None:
        return score
    if norm == "minmax":
        spread = max(scores) - min(scores)
        return (score - min(scores)) / spread if spread > 0 else 0.0
    if norm == "zscore":
        std = float(np.std(scores))
        return (score - float(np.mean(scores))) / std if std > 0 else 0.0
    if norm == "max":
        return score / max(scores)
    if norm == "rank":
        return 1 - (rank - 1) / len(scores)
    raise ValueError(f"unknown norm {norm!r}")


# Evidence spans, one question at a time (see ragcore.evaluate.evidence).


def evidence_question(chunks: list, groups: list, k: int | None = None) -> tuple:
    """(recall at k, reciprocal rank within k) of one question: chunks best first, groups of spans."""
    def covers(chunk, span):
        overlap = min(chunk[2], span[2]) - max(chunk[1], span[1])
        return chunk[0] == span[0] and 2 * overlap >= span[2] - span[1]

    top = chunks if k is None else chunks[:k]
    covered = sum(any(covers(c, s) for c in top for s in group) for group in groups)
    rr = next((1.0 / rank for rank, c in enumerate(top, 1)
               if any(covers(c, s) for group in groups for s in group)), 0.0)
    return covered / len(groups), rr


# ---- BM25 ------------------------------------------------------------------
#
# A registry of scoring variants: each is an idf and a term-frequency part,
# small pure functions whose docstrings cite their source. The native index
# (cpp/include/ragcore/bm25_scoring.h) mirrors them in the same order; the
# order of BM25_VARIANTS gives the native variant codes.


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


# ---- approximate search (IVFIndex) ---------------------------------------------


def kmeans_objective(x: np.ndarray, centroids: np.ndarray) -> float:
    """Sum over the points of the squared distance to their nearest centroid (float64)."""
    x = np.asarray(x, dtype=np.float64)
    c = np.asarray(centroids, dtype=np.float64)
    dist = (x * x).sum(1)[:, None] - 2.0 * x @ c.T + (c * c).sum(1)[None, :]
    return float(np.maximum(dist.min(axis=1), 0.0).sum())


def scalar_quantize(x: np.ndarray, code_min: np.ndarray, code_scale: np.ndarray) -> np.ndarray:
    """8-bit per-dimension codes: for each dimension p, the level
    round((x_p - code_min_p) / code_scale_p), clipped to 0..255."""
    x = np.asarray(x, dtype=np.float64)
    codes = np.empty(x.shape, dtype=np.uint8)
    for p in range(x.shape[1]):
        level = np.round((x[:, p] - code_min[p]) / code_scale[p])
        codes[:, p] = np.minimum(np.maximum(level, 0), 255)
    return codes


def scalar_dequantize(codes: np.ndarray, code_min: np.ndarray, code_scale: np.ndarray) -> np.ndarray:
    """The float64 values the codes stand for: code_min + code_scale * code."""
    return np.asarray(code_min, np.float64) + np.asarray(code_scale, np.float64) * codes


def filtered_flat_search(corpus, queries, k: int, allowed_ids, metric: str = "ip",
                         ids=None) -> Hits:
    """Exact top-k among the rows whose id is in allowed_ids (padded if fewer than k)."""
    corpus = np.asarray(corpus)
    ids = np.arange(len(corpus), dtype=np.int64) if ids is None else np.asarray(ids, np.int64)
    keep = np.isin(ids, np.asarray(allowed_ids, dtype=np.int64))
    return flat_search(corpus[keep], queries, k, metric, ids[keep])


# ---- BM25 on the GPU (GpuBM25Index) --------------------------------------------


def bm25_impact_search(impacts: dict, terms, weights, offsets, base, k: int) -> Hits:
    """Top-k as GpuBM25Index computes it, from BM25Index impacts (CSR: term -> slots and
    float32 score parts) and weighed queries (terms, weights, offsets, base per query):
    float64 sums of weight * part in query order, then float32(base + sum) for every live
    slot (removed slots have id -1), ties by id ascending."""
    offsets_t, docs, values, slot_ids = (impacts[name] for name in
                                         ("offsets", "docs", "values", "slot_ids"))
    live = slot_ids >= 0
    rows = []
    for q in range(len(offsets) - 1):
        acc = np.zeros(len(slot_ids), dtype=np.float64)
        for i in range(offsets[q], offsets[q + 1]):
            if terms[i] < 0:
                continue
            span = slice(offsets_t[terms[i]], offsets_t[terms[i] + 1])
            acc[docs[span]] += weights[i] * values[span].astype(np.float64)
        rows.append((base[q] + acc[live]).astype(np.float32))
    scores = np.array(rows, dtype=np.float32).reshape(len(rows), int(live.sum()))
    return topk(scores, slot_ids[live], k)


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


# ---- sharded search (ragcore.distributed) ----------------------------------------


def merge_topk(lists: list, k: int) -> list:
    """k-way merge of one query's per-shard results into the best k (id, score) pairs.

    lists holds, per shard, (id, score) pairs in ragcore's order (score descending, ties by
    id ascending), padding left out; a heap merge keeps that order across the shards.
    """
    import heapq
    import itertools

    merged = heapq.merge(*lists, key=lambda pair: (-pair[1], pair[0]))
    return list(itertools.islice(merged, k))
