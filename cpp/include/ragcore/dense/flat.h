// Exact dense top-k over a flat corpus.
//
// Two paths, picked by batch size (see kBlockedFromBatch* in cpp/src/dense/flat.cpp):
//  - scan: for a few queries, stream each corpus block once and score it against
//    every query with dot_rows; memory-bound, so narrow storage is speed.
//  - blocked: for many queries, tiles of the query x corpus product computed by
//    dot_rows_batch (4 queries x 4 rows share their loads), with the k-selection
//    fused into the tile loop, so the nq x n score matrix never exists.
//
// Batch invariance: both paths (and IVFIndex's list scan) reduce every (query, row)
// pair in one order, dot_rows's: so a query's scores and ids are bit-identical
// whatever the batch it arrives in, the path, the thread count or the tile size.
// A BLAS (or a broadcast micro-kernel, as before) reduces in another order than a
// scan can afford, which is why neither is used.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ragcore/dense/types.h"
#include "ragcore/simd/bf16_dot.h"
#include "ragcore/simd/simd.h"
#include "ragcore/util/filter.h"

namespace ragcore {

enum class DensePath : int { Auto = 0, Scan = 1, Blocked = 2 };

struct FlatSearchArgs {
  const void* corpus = nullptr;  // n rows of d elements of `storage`
  Storage storage = Storage::F32;
  size_t n = 0;
  size_t d = 0;
  size_t corpus_stride = 0;        // elements between rows (>= d)
  const int64_t* ids = nullptr;    // n external ids, or nullptr for row positions
  const float* sq_norms = nullptr; // n squared norms of the stored rows; L2 only
  Metric metric = Metric::InnerProduct;

  const float* queries = nullptr;  // nq rows of d float32
  size_t nq = 0;
  size_t query_stride = 0;         // elements between rows (>= d)
  size_t k = 0;                    // >= 1; rows shorter than k are padded (-inf, -1)

  AllowFilter allow;               // rows a result may come from (default: all)

  float* out_scores = nullptr;     // nq x k, best first
  int64_t* out_ids = nullptr;      // nq x k

  int n_threads = 0;               // <= 0: all cores
  DensePath path = DensePath::Auto;
  int simd_level = -1;             // < 0: best available; else a SimdLevel
  size_t tile_rows = 0;            // 0: default corpus rows per tile (tests set small)
  size_t tile_depth = 0;           // unused: every pair is reduced over all d at once

  // BF16 storage only: round the queries to bf16 and multiply with the CPU's bf16
  // instructions (ragcore/simd/bf16_dot.h) instead of converting rows to float32.
  bool bf16_compute = false;
  int bf16_level = -1;             // < 0: best available; else a Bf16Level
};

// Throws std::invalid_argument on inconsistent arguments.
void flat_search(const FlatSearchArgs& args);

// Smallest batch that the automatic choice sends to the blocked path.
size_t blocked_path_min_batch(SimdLevel level, Storage storage);
size_t bf16_blocked_path_min_batch(Bf16Level level);

}  // namespace ragcore
