// Product quantisation with 4-bit codes, scanned by in-register table look-ups
// (the fast-scan technique of FAISS's IndexPQFastScan and of André et al.,
// "Quicker ADC", 2019): a query's m tables of 16 entries are quantised to bytes
// and held in SIMD registers; pshufb looks up 32 codes at once.
//
// Layout: vectors in blocks of 32; per block, per pair of sub-quantisers (j, j+1),
// 32 bytes, byte i = code_j(vector i) | code_{j+1}(vector i) << 4. An odd m gets a
// zero last code (its table is all zeros). Losses are "lower is better": per
// sub-quantiser the best entry of the query's table scores 0.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ragcore/dense/types.h"
#include "ragcore/simd/simd.h"

namespace ragcore {

constexpr size_t kPq4Block = 32;

inline size_t pq4_pairs(size_t m) { return (m + 1) / 2; }
inline size_t pq4_blocks(size_t n) { return (n + kPq4Block - 1) / kPq4Block; }
// Bytes of the packed codes of n vectors.
inline size_t pq4_packed_bytes(size_t n, size_t m) { return pq4_blocks(n) * pq4_pairs(m) * kPq4Block; }

// codes: n x m, each < 16. packed: pq4_packed_bytes(n, m) bytes (padding rows are code 0).
void pq4_pack(const uint8_t* codes, size_t n, size_t m, uint8_t* packed);

// losses[i] = sum_j luts[j * 16 + code_j(i)] for i < n; luts: pairs*2 tables of 16 bytes
// (the tables of sub-quantisers >= m must be zero). Exact integer sums (m <= 256).
void pq4_scan(const uint8_t* packed, size_t n, size_t m, const uint8_t* luts, uint16_t* losses,
              SimdLevel level);

struct Pq4SearchArgs {
  const uint8_t* packed = nullptr;    // pq4_packed_bytes(n, m)
  size_t n = 0;
  size_t m = 0;                       // sub-quantisers, 1..256
  size_t d = 0;                       // divisible by m
  const float* centroids = nullptr;   // m x 16 x (d / m)
  const float* exact = nullptr;       // n x d float32, for the exact re-scoring
  const float* sq_norms = nullptr;    // n, L2 only
  const int64_t* ids = nullptr;       // n
  Metric metric = Metric::InnerProduct;
  const float* queries = nullptr;     // nq x d
  size_t nq = 0;
  size_t k = 0;
  size_t rescore = 4;                 // rescore * k candidates re-scored exactly
  float* out_scores = nullptr;        // nq x k (exact scores), padded (-inf, -1)
  int64_t* out_ids = nullptr;
  int n_threads = 0;
  int simd_level = -1;                // < 0: best available
};

void pq4_search(const Pq4SearchArgs& a);

// The quantised tables of one query: float tables t (m x 16, higher is better)
// become losses (max_c t_j - t_j[c]) scaled by one factor so the largest is 255,
// rounded to nearest. luts: pairs*2*16 bytes (tables past m zero). Returns the scale.
float pq4_quantize_tables(const float* t, size_t m, uint8_t* luts);

}  // namespace ragcore
