// Dense kernels and their run-time dispatch.
//
// Each SIMD level (scalar, AVX2+FMA+F16C, AVX-512) fills one DenseKernels table,
// compiled in its own file with its own target flags. The scalar table always
// exists and is what tests compare the others with.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ragcore/dense/types.h"

namespace ragcore {

enum class SimdLevel : int { Scalar = 0, Avx2 = 1, Avx512 = 2 };

struct DenseKernels {
  SimdLevel level;
  const char* name;

  // out[j] = <q, x_j> for j < n_rows, x_j = row j of x (row stride ldx elements).
  // Every row is reduced by the same instruction sequence, so equal rows give
  // bit-equal scores wherever they sit.
  void (*dot_rows[kNumStorage])(const float* q, const void* x, size_t ldx, size_t n_rows,
                                size_t d, float* out);

  // out[j] = sum_p q[p] * float(x_j[p]) over rows of uint8 codes; the caller folds
  // the per-dimension scale into q and adds the offset term itself.
  void (*dot_rows_sq8)(const float* q, const void* x, size_t ldx, size_t n_rows, size_t d,
                      float* out);

  // dst (n_rows x d, row stride d) = float32 of the stored rows of x.
  void (*to_f32[kNumStorage])(const void* x, size_t ldx, size_t n_rows, size_t d, float* dst);
  // to_f32 for rows of uint8 codes (their values as float32; the caller scales them).
  void (*to_f32_sq8)(const void* x, size_t ldx, size_t n_rows, size_t d, float* dst);

  // out[r * ldo + i] = <q_i, x_r> for queries i < nq (row stride ldq) and float32 rows
  // r < n_rows (row stride ldx): the blocked path's tile. Each pair is reduced exactly
  // as dot_rows reduces it, so a query's scores do not depend on the path, the batch
  // or the tile that computed them (batch invariance).
  void (*dot_rows_batch)(const float* q, size_t ldq, size_t nq, const float* x, size_t ldx,
                         size_t n_rows, size_t d, float* out, size_t ldo);

  // Writes to idx the positions i < n with s[i] >= thr[i]; returns their count.
  size_t (*at_least)(const float* s, const float* thr, size_t n, uint32_t* idx);

  // out[j] = <q, rows[j]> for j < n, rows anywhere in memory (a graph walk's unvisited
  // neighbours): four rows at a time, the next four prefetched meanwhile. Each row is
  // reduced exactly as dot_rows reduces it, so its score has the same bits.
  void (*dot_gather[kNumStorage])(const float* q, const void* const* rows, size_t n, size_t d,
                                  float* out);

  // dot_rows for one query (no other query reuses the rows while they are in cache):
  // the same sums, the rows read as four long streams (four quarters side by side).
  void (*dot_rows_one_query[kNumStorage])(const float* q, const void* x, size_t ldx,
                                          size_t n_rows, size_t d, float* out);

  // dot_rows_batch in two steps, where a level has them (null otherwise): pack_queries
  // writes nq queries (row stride ldq) into packed_query_floats(nq, d) floats, then
  // dot_packed_batch gives the same tile from them (the same bits), writing columns up
  // to nq rounded up to 16 (ldo must allow them).
  void (*pack_queries)(const float* q, size_t ldq, size_t nq, size_t d, float* packed);
  void (*dot_packed_batch)(const float* packed, size_t nq, const float* x, size_t ldx,
                           size_t n_rows, size_t d, float* out, size_t ldo);
};

// pack_queries' layout: 16 queries a panel, each dimension's value in its lane.
constexpr size_t packed_query_chunks(size_t d) { return (d + 15) / 16; }
constexpr size_t packed_query_floats(size_t nq, size_t d) {
  return (nq + 15) / 16 * 16 * 16 * packed_query_chunks(d);
}

// Kernels of one level; throws std::invalid_argument if this CPU or build lacks it.
const DenseKernels& dense_kernels(SimdLevel level);
// The widest level this CPU and build support.
SimdLevel best_simd_level();
bool simd_level_available(SimdLevel level);

// Scalar helpers shared by the levels for tails.
float half_to_float(uint16_t h);
inline float bf16_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

}  // namespace ragcore
