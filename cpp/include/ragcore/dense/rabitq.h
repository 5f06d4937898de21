// RaBitQ codes as the storage of an inverted file (Gao and Long, SIGMOD 2024;
// the multi-bit "extended RaBitQ", SIGMOD 2025).
//
// A stored vector o of list l is kept as its residual r = o - c_l, rotated by a
// random orthogonal map P (FHT-Kac, rabitq_rotation.h; or a dense dp x d matrix, dp = d rounded up to a multiple of 8) and
// quantised to `bits` bits per dimension: the code x (0 .. 2^bits - 1 per
// dimension) stands for the grid vector y = x - (2^bits - 1) / 2, the one whose
// direction is closest to P r (the best rescaling up to the one that lifts the
// largest coordinate to the top level, found exactly in that range). Three float
// factors per vector make the estimate of <o, q> one look-up sum over the code:
//   est(o, q) = <c_l, q> + f_add + f_scale * <y, P q>
// with f_scale = |r|^2 / <y, P r> and f_add = <r, c_l> - f_scale * <y, P c_l>,
// which is <c_l, q> + <r, c_l> + |r| <y, P(q - c_l)> / <y, u>, u = P r / |r|:
// the unbiased RaBitQ estimator of <r, q - c_l>. Its error is below
//   epsilon * |q - c_l| * f_err,  f_err = |r| sqrt((1 - a^2) / a^2) / sqrt(dp - 1),
// a = cos(y, u), with the probability of a normal variable within epsilon
// standard deviations (epsilon = 1.9 in the paper).
//
// Row layout (row_bytes = bits * dp / 8 + 12): `bits` bit planes of dp / 8 bytes
// (plane b holds bit b of every code; byte g, bit t: dimension 8 g + t), then the
// float32 factors f_add, f_scale, f_err.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ragcore/dense/types.h"
#include "ragcore/util/filter.h"

namespace ragcore {

constexpr size_t kRabitqFactors = 3;

inline size_t rabitq_padded_dim(size_t d) { return (d + 7) / 8 * 8; }
inline size_t rabitq_row_bytes(size_t dp, size_t bits) {
  return bits * dp / 8 + kRabitqFactors * sizeof(float);
}

// Quantises n rotated residuals P r (n x dp) of vectors in lists `labels`, whose
// rotated centroids are rot_centroids (nlist x dp), into rows (n x row_bytes).
// Also writes cos(y, u) per vector to `cosines` when not null (tests).
void rabitq_encode(const float* rot_residuals, const float* rot_centroids, const int64_t* labels,
                   size_t n, size_t nlist, size_t dp, size_t bits, int n_threads, uint8_t* rows,
                   float* cosines);

// How the candidates to re-score exactly are chosen.
enum class RabitqRescore : int {
  Bound = 0,  // every candidate whose upper bound reaches the k-th exact score
  Count = 1,  // the best rescore_count * k by estimate
  All = 2,    // every scanned candidate
};

struct RabitqSearchStats {
  uint64_t scanned = 0;    // codes scanned (all queries)
  uint64_t rescored = 0;   // exact re-scorings (all queries)
};

struct RabitqSearchArgs {
  // Coarse quantizer (lists probed by squared L2 to their centroid).
  const float* centroids = nullptr;          // nlist x d
  const float* centroid_sq_norms = nullptr;  // nlist
  size_t nlist = 0;
  size_t d = 0;
  // The rotation P: FHT-Kac sign bits (rotation_rounds x dp / 8 bytes, see
  // rabitq_rotation.h) or, for files of the first layout, a dense matrix.
  const uint8_t* rotation_signs = nullptr;
  size_t rotation_rounds = 0;
  const float* rotation = nullptr;  // dp x d, orthonormal columns; used when no signs
  size_t dp = 0;                    // rabitq_padded_dim(d)
  size_t bits = 1;                  // 1..8

  const int64_t* list_offsets = nullptr;  // nlist + 1, list l: rows [offsets[l], offsets[l + 1])
  const uint8_t* rows = nullptr;          // n x rabitq_row_bytes(dp, bits)
  size_t n = 0;
  const int64_t* ids = nullptr;       // n external ids
  const float* exact_rows = nullptr;  // n x d float32 (the vectors before quantisation)
  const float* sq_norms = nullptr;    // n squared norms of the exact rows; L2 only
  // Optional (bits 1, dp <= kRabitqFastMaxDim): the rows packed for the fast scan,
  // rabitq_fast_pack of rows (rabitq_fastscan.h), fast_bytes bytes; then the scan
  // reads these blocks instead of rows. Null: the bit-plane kernel (rabitq_scan.h).
  const uint8_t* fast_blocks = nullptr;
  size_t fast_bytes = 0;
  Metric metric = Metric::InnerProduct;

  RabitqRescore rescore = RabitqRescore::Bound;
  size_t rescore_count = 4;  // Count only
  float epsilon = 1.9f;      // Bound only: standard deviations of the error bound

  const float* queries = nullptr;  // nq x d
  size_t nq = 0;
  size_t query_stride = 0;  // >= d
  size_t k = 0;
  size_t nprobe = 0;  // 1..nlist
  AllowFilter allow;  // a query short of k allowed rows probes further lists

  float* out_scores = nullptr;  // nq x k exact scores, best first, padded (-inf, -1)
  int64_t* out_ids = nullptr;   // nq x k
  int n_threads = 0;            // over queries; <= 0: all cores
  int simd_level = -1;          // scan kernel; < 0: best available
  RabitqSearchStats* stats = nullptr;  // optional
};

// Throws std::invalid_argument on inconsistent arguments.
void rabitq_ivf_search(const RabitqSearchArgs& args);

// The estimate and error bound (epsilon = 1) of every row of `list` for one query,
// in the metric's score (for tests: the scan computes the same values).
void rabitq_estimates(const RabitqSearchArgs& args, const float* query, size_t list, float* est,
                      float* err);

}  // namespace ragcore
