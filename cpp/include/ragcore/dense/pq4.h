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

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ragcore/dense/types.h"
#include "ragcore/simd/simd.h"
#include "ragcore/util/filter.h"

namespace ragcore {

constexpr size_t kPq4Block = 32;

inline size_t pq4_pairs(size_t m) { return (m + 1) / 2; }
inline size_t pq4_blocks(size_t n) { return (n + kPq4Block - 1) / kPq4Block; }
// Bytes of the packed codes of n vectors.
inline size_t pq4_packed_bytes(size_t n, size_t m) { return pq4_blocks(n) * pq4_pairs(m) * kPq4Block; }

// codes: n x m, each < 16. packed: pq4_packed_bytes(n, m) bytes (padding rows are code 0).
void pq4_pack(const uint8_t* codes, size_t n, size_t m, uint8_t* packed);

// codes[i * m + j]: the centroid nearest to part j of row i of x (n x d, d divisible by
// m), by squared L2 summed over direct differences, ties to the lower code. by_dim: the
// codebooks by dimension, m x (d / m) x 16 (as Pq4TableMaker reads them), so the 16
// distances of a part are one vector of lanes. Rows split over n_threads (<= 0: all).
void pq4_encode(const float* x, size_t n, size_t d, const float* by_dim, size_t m,
                uint8_t* codes, int n_threads);

// books (m x 16 x d / m): per part j of the rows of x (n x d, d divisible by m, n >= 16),
// kmeans_train with k = 16, seed + j (mod 2^64) and its other defaults, one thread per
// part: the m independent k-means run in parallel over n_threads (<= 0: all), each the
// same as alone, so the books do not depend on n_threads.
void pq4_train(const float* x, size_t n, size_t d, size_t m, uint64_t seed, int n_threads,
               float* books);

// losses[i] = sum_j luts[j * 16 + code_j(i)] for i < n; luts: pairs*2 tables of 16 bytes
// (the tables of sub-quantisers >= m must be zero). Exact integer sums (m <= 256).
void pq4_scan(const uint8_t* packed, size_t n, size_t m, const uint8_t* luts, uint16_t* losses,
              SimdLevel level);

// The `want` smallest (loss, row) pairs offered so far, ties to the lower row, kept
// as a reservoir (FAISS's ReservoirTopN): offers are appended, and when the buffer
// holds 2 * want the want smallest are kept and the loss of the largest of them
// becomes bound(). The SIMD scans compare a whole block of 16-bit losses with
// bound() and offer only the lanes at or below it, so most blocks cost no scalar
// work, and an offer is an append (a heap per offer measured slower).
class Pq4Candidates {
 public:
  explicit Pq4Candidates(size_t want);

  // A loss above this cannot be among the want smallest.
  uint32_t bound() const { return bound_; }
  // Rows offered and kept; every offered row while fewer than 2 * want were offered.
  size_t size() const { return used_; }

  // Inline for the SIMD scans; everything that grows or sorts the vector is out of line in
  // pq4.cpp, a baseline file, so no SIMD file emits its own copy of std::vector's or
  // std::sort's code for the linker to share with scalar code (tools/check_simd_linkage.py).
  void offer(uint32_t loss, uint32_t row) {
    if (want_ == 0) return;
    if (used_ == keys_.size()) make_room();
    keys_[used_++] = (static_cast<uint64_t>(loss) << 32) | row;
    if (used_ == cap_) shrink();
  }

  // The want smallest keys, best (smallest loss, then lowest row) first.
  const std::vector<uint64_t>& sorted();

 private:
  void make_room();
  void shrink();

  size_t want_, cap_;
  size_t used_ = 0;  // keys_[0, used_) are the offers kept; the rest is room
  uint32_t bound_ = 0xFFFFFFFFu;
  std::vector<uint64_t> keys_;
};

// Offers rows first_row + i (i < n) of packed codes to out, with their losses under
// byte tables luts (as pq4_scan); a row enters only if allow allows it (ids: the
// external id of every row, indexed by row; may be null when allow is inactive).
// Every SIMD level keeps exactly the candidates the scalar path keeps.
void pq4_scan_select(const uint8_t* packed, size_t n, size_t m, const uint8_t* luts,
                     uint32_t first_row, const AllowFilter& allow, const int64_t* ids,
                     Pq4Candidates& out, SimdLevel level);

// pq4_scan_select for nq queries over the same codes: query i's tables luts[i], its
// candidates outs[i]. The AVX-512 path scans up to 8 queries per load of each block's
// codes (FAISS's qbs), the other levels one query at a time; every query keeps exactly
// what pq4_scan_select keeps.
void pq4_scan_select_many(const uint8_t* packed, size_t n, size_t m, const uint8_t* const* luts,
                          size_t nq, uint32_t first_row, const AllowFilter& allow,
                          const int64_t* ids, Pq4Candidates* const* outs, SimdLevel level);

// Builds queries' byte tables from the codebooks, given by dimension: by_dim is
// m x (d / m) x 16, per sub-quantiser and dimension of its part the 16 centroids'
// values side by side (the codebooks m x 16 x (d / m), transposed once by the
// caller), so a query's float tables are d multiply-adds of 16 lanes (vectorised):
// inner products, or 2<q_j, c> - |c|^2 for L2; quantised by pq4_quantize_tables.
class Pq4TableMaker {
 public:
  Pq4TableMaker(const float* by_dim, size_t m, size_t d, Metric metric);
  // luts: pq4_pairs(m) * 32 bytes.
  void luts(const float* q, uint8_t* luts) const;

 private:
  const float* by_dim_;
  size_t m_, dsub_;
  Metric metric_;
  std::vector<float> sq_norms_;  // m x 16, L2 only
};

// The exact top-k of candidate rows (keys of Pq4Candidates, row in the low 32 bits):
// scored against float32 rows exact (n x d), written best first, padded (-inf, -1).
void pq4_rescore(const std::vector<uint64_t>& candidates, const float* q, const float* exact,
                 const float* sq_norms, const int64_t* ids, size_t d, Metric metric,
                 size_t k, const DenseKernels& kern, float* out_scores, int64_t* out_ids);

// min(n, rescore * k) without wrapping.
inline size_t pq4_candidates_wanted(size_t n, size_t k, size_t rescore) {
  if (k != 0 && rescore > n / k) return n;
  return std::min(n, rescore * k);
}

struct Pq4SearchArgs {
  const uint8_t* packed = nullptr;    // pq4_packed_bytes(n, m)
  size_t n = 0;
  size_t m = 0;                       // sub-quantisers, 1..256
  size_t d = 0;                       // divisible by m
  const float* centroids = nullptr;   // m x (d / m) x 16: the codebooks by dimension (Pq4TableMaker)
  const float* exact = nullptr;       // n x d float32, for the exact re-scoring
  const float* sq_norms = nullptr;    // n, L2 only
  const int64_t* ids = nullptr;       // n
  Metric metric = Metric::InnerProduct;
  const float* queries = nullptr;     // nq x d
  size_t nq = 0;
  size_t k = 0;
  size_t rescore = 4;                 // rescore * k candidates re-scored exactly
  AllowFilter allow;                  // rows a result may come from (default: all)
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
