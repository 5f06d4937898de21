// Approximate top-k over inverted lists (IVF): the queries' nearest centroids
// choose the lists to scan ("probes"); the lists are scanned with the flat
// index's kernels and top-k selection.
//
// A batch is grouped by list: each probed list is read once, for every query
// of the batch that probes it, and the lists are shared among the threads.
// Storage: float32 / float16 / bfloat16 rows are scored as FlatIndex scores
// them, so probing every list gives FlatIndex's answer. SQ8 rows are per-
// dimension scalar-quantised codes (x ~ min + scale * code): the scan ranks
// by approximate scores, then the best rescore * k are re-scored with the
// exact float32 rows, so the returned ids and scores come from exact scores.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ragcore/dense/flat.h"
#include "ragcore/util/filter.h"
#include "ragcore/simd/simd.h"

namespace ragcore {

// Seconds spent in each stage of one ivf_search call.
struct IvfStageTimes {
  double coarse = 0.0;   // choosing the lists (queries against centroids)
  double scan = 0.0;     // scanning the lists
  double rescore = 0.0;  // exact re-scoring (SQ8) and writing the results
};

struct IvfSearchArgs {
  // Coarse quantizer: lists are probed by squared L2 distance to their centroid,
  // the distance their vectors were assigned by.
  const float* centroids = nullptr;          // nlist x d
  const float* centroid_sq_norms = nullptr;  // nlist
  size_t nlist = 0;
  size_t d = 0;

  // Inverted lists, concatenated: list l holds rows [list_offsets[l], list_offsets[l + 1]).
  const int64_t* list_offsets = nullptr;  // nlist + 1, list_offsets[nlist] = n
  const void* rows = nullptr;             // n rows of d elements of `storage`, row stride d
  Storage storage = Storage::F32;
  size_t n = 0;
  const int64_t* ids = nullptr;       // n external ids
  const float* sq_norms = nullptr;    // n squared norms of the exact rows; L2 only
  Metric metric = Metric::InnerProduct;

  // SQ8 storage only.
  const float* code_min = nullptr;    // d: value of code 0 per dimension
  const float* code_scale = nullptr;  // d: value step of one code per dimension
  const float* exact_rows = nullptr;  // n x d float32, the rows before quantisation
  size_t rescore = 4;                 // exact re-scoring of the best rescore * k

  const float* queries = nullptr;     // nq rows of d float32
  size_t nq = 0;
  size_t query_stride = 0;            // elements between query rows (>= d)
  size_t k = 0;                       // >= 1
  size_t nprobe = 0;                  // lists scanned per query, 1 <= nprobe <= nlist

  // With a filter, a query whose nprobe lists hold fewer than k allowed rows
  // goes on probing the next-nearest lists until it has seen k (or all lists).
  AllowFilter allow;

  float* out_scores = nullptr;        // nq x k, best first, padded (-inf, -1)
  int64_t* out_ids = nullptr;         // nq x k
  int n_threads = 0;                  // <= 0: all cores
  int simd_level = -1;                // < 0: best available
  // BF16 storage only: queries rounded to bf16 and multiplied by the CPU's bf16
  // instructions, as FlatIndex's bf16 compute does (the same scores, bit for bit).
  bool bf16_compute = false;
  int bf16_level = -1;                // < 0: best available; else a Bf16Level
  IvfStageTimes* stages = nullptr;    // optional: filled with the time per stage
};

// Throws std::invalid_argument on inconsistent arguments.
void ivf_search(const IvfSearchArgs& args);

}  // namespace ragcore
