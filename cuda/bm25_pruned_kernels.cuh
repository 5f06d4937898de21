// Kernels of the pruned BM25 plan (see gpu_bm25.h and bm25_pruned.cu).
#pragma once

#include "bm25_segment.cuh"
#include "common.cuh"

namespace ragcore::gpu {

// Where the candidates of query row r of a group live: slots
// [cand_begin[r], cand_begin[r] + counts[r]) of the group's candidate arrays,
// cand_begin[r + 1] - cand_begin[r] being the postings of r's essential terms
// (an upper bound of its candidates).
struct CandidateLists {
  const int64_t* cand_begin;  // rows + 1
  uint32_t* counts;           // rows
  uint32_t* docs;             // candidate slots
  uint64_t* keys;             // their result keys
  int64_t total;              // cand_begin[rows]
  int rows;
};

// The row whose range holds index g: the last r with cand_begin[r] <= g.
__device__ __forceinline__ int row_of(const int64_t* begin, int rows, int64_t g) {
  int lo = 0, hi = rows - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (begin[mid] <= g) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// One thread per posting of the group's essential terms (segments as in the
// exhaustive scatter, row = query row): the first thread to set a document's bit
// in its query's `seen` bitmap appends the document to the query's candidates.
__global__ void bm25_gather_kernel(const Bm25Segment* segs, int n_segs, int64_t total,
                                   const uint32_t* docs, uint32_t* seen, int64_t seen_words,
                                   CandidateLists c) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < total;
       g += step) {
    const Bm25Segment s = segment_of(segs, n_segs, g);
    const uint32_t doc = docs[s.begin + (g - s.first)];
    const uint32_t bit = 1u << (doc % 32);
    const uint32_t before = atomicOr(seen + s.row * seen_words + doc / 32, bit);
    if (before & bit) continue;  // another essential term of the query has it
    const uint32_t at = atomicAdd(c.counts + s.row, 1u);
    c.docs[c.cand_begin[s.row] + at] = doc;
  }
}

// What scoring a candidate needs: the query terms of each row (query order, terms
// without live documents left out), the CSR and the dense terms' bitmaps.
struct ProbeParams {
  const int64_t* q_begin;  // rows + 1: row r's terms are [q_begin[r], q_begin[r + 1])
  const int64_t* q_terms;
  const double* q_weights;
  const double* base;      // per row
  const int64_t* offsets;  // CSR of all terms
  const uint32_t* docs;
  const float* values;
  const int32_t* dense_index;
  const uint64_t* bits;
  const uint32_t* rank_before;
  int64_t n_words;
  const int32_t* ranks;    // per slot
};

// The position of doc in term t's list, or -1.
__device__ __forceinline__ int64_t probe(const ProbeParams& p, int64_t t, uint32_t doc) {
  const int32_t d = p.dense_index[t];
  if (d >= 0) {
    const int64_t w = static_cast<int64_t>(d) * p.n_words + doc / 64;
    const uint64_t word = p.bits[w];
    const uint64_t below = (uint64_t{1} << (doc % 64)) - 1;
    if (!((word >> (doc % 64)) & 1)) return -1;
    return p.offsets[t] + p.rank_before[w] + __popcll(word & below);
  }
  int64_t lo = p.offsets[t], hi = p.offsets[t + 1];  // docs ascend within a term
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (p.docs[mid] < doc) lo = mid + 1; else hi = mid;
  }
  return lo < p.offsets[t + 1] && p.docs[lo] == doc ? lo : -1;
}

// One thread per candidate slot: the exact score of the candidate, every query
// term added in query order with the exhaustive plan's arithmetic (so the same
// bits), as a result key.
__global__ void bm25_score_candidates_kernel(CandidateLists c, ProbeParams p) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < c.total;
       g += step) {
    const int r = row_of(c.cand_begin, c.rows, g);
    if (g - c.cand_begin[r] >= c.counts[r]) continue;  // a slot left free
    const uint32_t doc = c.docs[g];
    double sum = 0.0;
    for (int64_t i = p.q_begin[r]; i < p.q_begin[r + 1]; ++i) {
      const int64_t at = probe(p, p.q_terms[i], doc);
      if (at >= 0) sum = __dadd_rn(sum, __dmul_rn(p.q_weights[i], static_cast<double>(p.values[at])));
    }
    c.keys[g] = result_key(__double2float_rn(__dadd_rn(p.base[r], sum)),
                           static_cast<uint32_t>(p.ranks[doc]));
  }
}

// Per row: the segment bounds of its candidates for the segmented sort.
__global__ void bm25_candidate_bounds_kernel(CandidateLists c, int64_t* seg_begin, int64_t* seg_end) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= c.rows) return;
  seg_begin[r] = c.cand_begin[r];
  seg_end[r] = c.cand_begin[r] + c.counts[r];
}

// Grid: (blocks over k, rows). The first k sorted candidates of each row as
// scores and ids (padded), and the row's k-th best score (NaN with fewer than k).
__global__ void bm25_candidate_write_kernel(CandidateLists c, const uint64_t* sorted, int64_t k,
                                            const int64_t* sorted_ids, float* out_scores,
                                            int64_t* out_ids, float* kth) {
  const int r = blockIdx.y;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= k) return;
  const int64_t count = c.counts[r];
  const int64_t out = static_cast<int64_t>(r) * k + t;
  if (t < count) {
    const uint64_t key = sorted[c.cand_begin[r] + t];
    out_scores[out] = key_score(key);
    out_ids[out] = sorted_ids[key_rank(key)];
  } else {
    out_scores[out] = -INFINITY;
    out_ids[out] = -1;
  }
  if (t == k - 1) kth[r] = count >= k ? out_scores[out] : NAN;
}

}  // namespace ragcore::gpu
