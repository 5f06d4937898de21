// IVF with 4-bit PQ storage (IVFIndex dtype="pq4"): the coarse quantizer chooses
// the lists as for the other storages; each list holds the direct (not residual)
// 4-bit PQ codes of its vectors in fast-scan blocks of 32, starting on a block of
// its own. Direct codes make a query's byte tables the same for every list, so one
// candidate heap and one running threshold serve all its probed lists; the best
// rescore * k candidates are then re-scored with the exact float32 rows, so the
// returned scores are exact. Probing every list with rescore * k >= n is an exact search.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ragcore/dense/types.h"
#include "ragcore/util/filter.h"

namespace ragcore {

struct IvfPq4SearchArgs {
  const float* centroids = nullptr;          // nlist x d
  const float* centroid_sq_norms = nullptr;  // nlist
  size_t nlist = 0;
  size_t d = 0;

  // List l: rows [list_offsets[l], list_offsets[l + 1]) of exact / ids, coded in
  // blocks [block_offsets[l], block_offsets[l + 1]) of packed, ceil(rows / 32) of them.
  const int64_t* list_offsets = nullptr;   // nlist + 1, from 0 to n
  const int64_t* block_offsets = nullptr;  // nlist + 1, from 0 to n_blocks
  const uint8_t* packed = nullptr;         // n_blocks * pq4_pairs(m) * 32 bytes
  size_t n_blocks = 0;
  size_t m = 0;                            // sub-quantisers, 1..256, divides d
  const float* codebooks = nullptr;        // m x (d / m) x 16: by dimension (Pq4TableMaker)
  const float* exact = nullptr;            // n x d float32
  const float* sq_norms = nullptr;         // n, L2 only
  const int64_t* ids = nullptr;            // n
  size_t n = 0;
  Metric metric = Metric::InnerProduct;
  AllowFilter allow;  // with a filter, lists past nprobe are scanned until k allowed rows are seen

  const float* queries = nullptr;  // nq x d
  size_t nq = 0;
  size_t k = 0;
  size_t nprobe = 1;               // 1..nlist
  size_t rescore = 4;              // rescore * k candidates re-scored exactly
  float* out_scores = nullptr;     // nq x k, padded (-inf, -1)
  int64_t* out_ids = nullptr;
  int n_threads = 0;
  int simd_level = -1;
};

// Throws std::invalid_argument on inconsistent arguments (list and block offsets included).
void ivf_pq4_search(const IvfPq4SearchArgs& a);

}  // namespace ragcore
