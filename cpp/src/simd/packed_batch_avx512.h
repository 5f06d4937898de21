// The blocked path's float32 product with the queries in lanes (AVX-512 only; included by
// kernels_avx512.cpp, compiled with its flags).
//
// dot_rows reduces a pair in 16 lane sums, lane l over the dimensions l, l + 16, ...
// (one FMA chain each, then the zero-padded tail), and then adds the 16 lane sums by
// Avx512::sum's tree. dot_rows_batch does the same with one register per pair, so each
// pair ends with a horizontal sum: shuffles that cost about an eighth of the blocked
// path's time. Here a register holds one lane sum of 16 queries at once (their
// dimensions repacked by pack_queries), the rows' values are broadcast, and the 16 lane
// sums of a pair are added by the same tree with vertical adds: the same operations on
// the same values in the same order, so the same bits as dot_rows, without a shuffle.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "ragcore/simd/simd.h"

namespace ragcore {
namespace packed_batch {

constexpr size_t kLanes = 16;
constexpr size_t kPanels = 4;  // panels of 16 queries x kRows rows: 24 accumulators
constexpr size_t kRows = 6;  // (callers pass rows in multiples of kRows where they can)
// The lane sums in the order the tree consumes them: Avx512::sum adds lane i + 8 to
// lane i, then + 4, + 2, + 1; evaluated depth first, a stack of at most 4 partial sums.
constexpr int kLaneOrder[kLanes] = {0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15};
// After lane kLaneOrder[s] is summed: how many stacked partial sums to add to it (each
// popped in turn), then push the result (the last one is the pair's score).
constexpr int kPops[kLanes] = {0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0, 4};

// packed[((p * 16 + l) * chunks + k) * 16 + i] = q_(16p + i)[16k + l]; zero where that
// query or dimension does not exist.
inline void pack_queries(const float* q, size_t ldq, size_t nq, size_t d, float* packed) {
  const size_t chunks = packed_query_chunks(d);
  std::memset(packed, 0, packed_query_floats(nq, d) * sizeof(float));
  for (size_t i = 0; i < nq; ++i) {
    const float* row = q + i * ldq;
    float* panel = packed + (i / kLanes) * kLanes * chunks * kLanes + i % kLanes;
    for (size_t j = 0; j < d; ++j) panel[((j % kLanes) * chunks + j / kLanes) * kLanes] = row[j];
  }
}

// P panels x R rows: out[r * ldo + 16p + i] = <q_(16p + i), x_r>.
template <size_t P, size_t R>
inline void block(const float* const* panels, const float* const* rows, size_t chunks,
                  size_t full_chunks, size_t tail, float* out, size_t ldo) {
  __m512 stack[4][P][R];
  int depth = 0;
  for (size_t s = 0; s < kLanes; ++s) {
    const size_t l = static_cast<size_t>(kLaneOrder[s]);
    __m512 acc[P][R];
    for (size_t p = 0; p < P; ++p)
      for (size_t r = 0; r < R; ++r) acc[p][r] = _mm512_setzero_ps();
    // the full chunks, then the tail chunk where this lane has a dimension
    const size_t k_end = full_chunks + (l < tail ? 1 : 0);
    for (size_t k = 0; k < k_end; ++k) {
      __m512 qv[P];
      for (size_t p = 0; p < P; ++p) qv[p] = _mm512_loadu_ps(panels[p] + (l * chunks + k) * kLanes);
      for (size_t r = 0; r < R; ++r) {
        const __m512 xv = _mm512_set1_ps(rows[r][k * kLanes + l]);
        for (size_t p = 0; p < P; ++p) acc[p][r] = _mm512_fmadd_ps(qv[p], xv, acc[p][r]);
      }
    }
    if (tail && l >= tail) {  // dot_rows's zero-padded tail: fma(0, 0, a) = a + 0
      for (size_t p = 0; p < P; ++p)
        for (size_t r = 0; r < R; ++r) acc[p][r] = _mm512_add_ps(acc[p][r], _mm512_setzero_ps());
    }
    for (int pop = 0; pop < kPops[s]; ++pop) {
      --depth;
      for (size_t p = 0; p < P; ++p)
        for (size_t r = 0; r < R; ++r) acc[p][r] = _mm512_add_ps(stack[depth][p][r], acc[p][r]);
    }
    if (s + 1 < kLanes) {
      for (size_t p = 0; p < P; ++p)
        for (size_t r = 0; r < R; ++r) stack[depth][p][r] = acc[p][r];
      ++depth;
    } else {
      for (size_t r = 0; r < R; ++r)
        for (size_t p = 0; p < P; ++p) _mm512_storeu_ps(out + r * ldo + p * kLanes, acc[p][r]);
    }
  }
}

// block<P, n> for the last n < kRows rows (R: the largest n still to try).
template <size_t P, size_t R>
inline void remainder(const float* const* panels, const float* const* rows, size_t n,
                      size_t chunks, size_t full_chunks, size_t tail, float* out, size_t ldo) {
  if constexpr (R > 0) {
    if (n == R) return block<P, R>(panels, rows, chunks, full_chunks, tail, out, ldo);
    remainder<P, R - 1>(panels, rows, n, chunks, full_chunks, tail, out, ldo);
  }
}

template <size_t P>
inline void panel_group(const float* const* panels, const float* x, size_t ldx, size_t n_rows,
                        size_t chunks, size_t full_chunks, size_t tail, float* out, size_t ldo) {
  size_t j = 0;
  for (; j + kRows <= n_rows; j += kRows) {
    const float* rows[kRows];
    for (size_t r = 0; r < kRows; ++r) rows[r] = x + (j + r) * ldx;
    block<P, kRows>(panels, rows, chunks, full_chunks, tail, out + j * ldo, ldo);
  }
  const float* rows[kRows];
  for (size_t r = 0; j + r < n_rows; ++r) rows[r] = x + (j + r) * ldx;
  remainder<P, kRows - 1>(panels, rows, n_rows - j, chunks, full_chunks, tail, out + j * ldo, ldo);
}

// out[r * ldo + i] = <q_i, x_r> for the nq queries packed by pack_queries; writes
// columns up to nq rounded up to 16 (ldo must allow them).
inline void dot_packed_batch(const float* packed, size_t nq, const float* x, size_t ldx,
                             size_t n_rows, size_t d, float* out, size_t ldo) {
  const size_t chunks = packed_query_chunks(d);
  const size_t panel_floats = kLanes * chunks * kLanes;
  const size_t n_panels = (nq + kLanes - 1) / kLanes;
  for (size_t p0 = 0; p0 < n_panels; p0 += kPanels) {
    const float* panels[kPanels];
    const size_t np = std::min(kPanels, n_panels - p0);
    for (size_t p = 0; p < np; ++p) panels[p] = packed + (p0 + p) * panel_floats;
    float* o = out + p0 * kLanes;
    switch (np) {
      case 4: panel_group<4>(panels, x, ldx, n_rows, chunks, d / kLanes, d % kLanes, o, ldo); break;
      case 3: panel_group<3>(panels, x, ldx, n_rows, chunks, d / kLanes, d % kLanes, o, ldo); break;
      case 2: panel_group<2>(panels, x, ldx, n_rows, chunks, d / kLanes, d % kLanes, o, ldo); break;
      default: panel_group<1>(panels, x, ldx, n_rows, chunks, d / kLanes, d % kLanes, o, ldo);
    }
  }
}

}  // namespace packed_batch
}  // namespace ragcore
