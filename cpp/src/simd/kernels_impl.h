// Kernel bodies shared by the SIMD levels, written once over a vector-traits type
// V (see simd_avx2.cpp, simd_avx512.cpp). Included only by files compiled with
// that level's target flags.
#pragma once

#include <algorithm>
#include <cstring>
#include <utility>

#include "ragcore/simd/simd.h"

namespace ragcore {
namespace simd_impl {

// Loads V::kWidth stored elements of type T starting at x as float32 lanes.
template <class V, Storage S>
typename V::Reg load_row(const void* x, size_t offset) {
  if constexpr (S == Storage::F32) {
    return V::load(static_cast<const float*>(x) + offset);
  } else if constexpr (S == Storage::F16) {
    return V::load_f16(static_cast<const uint16_t*>(x) + offset);
  } else if constexpr (S == Storage::BF16) {
    return V::load_bf16(static_cast<const uint16_t*>(x) + offset);
  } else {
    return V::load_u8(static_cast<const uint8_t*>(x) + offset);
  }
}

// The last d % kWidth elements of a row, zero-padded to a full register.
template <class V, Storage S>
typename V::Reg load_row_tail(const void* x, size_t offset, size_t count) {
  constexpr size_t bytes = storage_bytes(S);
  alignas(64) unsigned char buf[V::kWidth * 4] = {};
  std::memcpy(buf, static_cast<const unsigned char*>(x) + offset * bytes, count * bytes);
  return load_row<V, S>(buf, 0);
}

// Rows ahead of the current four that dot_rows prefetches (a hint: it never faults).
constexpr size_t kPrefetchRows = 12;

// Four rows x0..x3 sharing each query load: every row runs one accumulator chain over
// the full chunks, then its zero-padded tail, then the same horizontal sum, so a row's
// score does not depend on where it sits or which kernel reduced it. prefetch(p) is
// called at each chunk offset p (elements), to request lines of rows still to come.
template <class V, Storage S, class Prefetch>
inline void dot4(const float* q, typename V::Reg qt, const void* x0, const void* x1,
                 const void* x2, const void* x3, size_t full, size_t tail, float* out,
                 Prefetch prefetch) {
  using Reg = typename V::Reg;
  constexpr size_t W = V::kWidth;
  Reg a0 = V::zero(), a1 = V::zero(), a2 = V::zero(), a3 = V::zero();
  for (size_t p = 0; p < full; p += W) {
    prefetch(p);
    const Reg qv = V::load(q + p);
    a0 = V::fma(qv, load_row<V, S>(x0, p), a0);
    a1 = V::fma(qv, load_row<V, S>(x1, p), a1);
    a2 = V::fma(qv, load_row<V, S>(x2, p), a2);
    a3 = V::fma(qv, load_row<V, S>(x3, p), a3);
  }
  if (tail) {
    a0 = V::fma(qt, load_row_tail<V, S>(x0, full, tail), a0);
    a1 = V::fma(qt, load_row_tail<V, S>(x1, full, tail), a1);
    a2 = V::fma(qt, load_row_tail<V, S>(x2, full, tail), a2);
    a3 = V::fma(qt, load_row_tail<V, S>(x3, full, tail), a3);
  }
  out[0] = V::sum(a0);
  out[1] = V::sum(a1);
  out[2] = V::sum(a2);
  out[3] = V::sum(a3);
}

// The query's last d % kWidth values, zero-padded to a register.
template <class V>
inline typename V::Reg query_tail(const float* q, size_t full, size_t tail) {
  alignas(64) float q_tail[V::kWidth] = {};
  std::memcpy(q_tail, q + full, tail * sizeof(float));
  return V::load(q_tail);
}

// One row by dot4's chain.
template <class V, Storage S>
inline float dot1(const float* q, typename V::Reg qt, const void* x, size_t full, size_t tail) {
  typename V::Reg a0 = V::zero();
  for (size_t p = 0; p < full; p += V::kWidth) a0 = V::fma(V::load(q + p), load_row<V, S>(x, p), a0);
  if (tail) a0 = V::fma(qt, load_row_tail<V, S>(x, full, tail), a0);
  return V::sum(a0);
}

template <class V, Storage S>
void dot_rows(const float* q, const void* x, size_t ldx, size_t n_rows, size_t d, float* out) {
  constexpr size_t kBytes = storage_bytes(S);
  const size_t full = d - d % V::kWidth;
  const size_t tail = d - full;
  const typename V::Reg qt = query_tail<V>(q, full, tail);
  const char* base = static_cast<const char*>(x);
  const size_t row_bytes = ldx * kBytes;
  size_t j = 0;
  for (; j + 4 <= n_rows; j += 4) {
    const char* r0 = base + j * row_bytes;
    // Hardware prefetchers keep too few lines in flight for four interleaved
    // row streams of narrow (fp16/bf16) rows; fetch the rows kPrefetchRows ahead.
    dot4<V, S>(q, qt, r0, r0 + row_bytes, r0 + 2 * row_bytes, r0 + 3 * row_bytes, full, tail,
               out + j, [&](size_t p) {
                 const char* ahead = r0 + kPrefetchRows * row_bytes + p * kBytes;
                 __builtin_prefetch(ahead);
                 __builtin_prefetch(ahead + row_bytes);
                 __builtin_prefetch(ahead + 2 * row_bytes);
                 __builtin_prefetch(ahead + 3 * row_bytes);
               });
  }
  for (; j < n_rows; ++j) out[j] = dot1<V, S>(q, qt, base + j * row_bytes, full, tail);
}

template <class V, Storage S>
void to_f32(const void* x, size_t ldx, size_t n_rows, size_t d, float* dst) {
  constexpr size_t W = V::kWidth;
  const size_t full = d - d % W;
  for (size_t j = 0; j < n_rows; ++j) {
    float* row = dst + j * d;
    for (size_t p = 0; p < full; p += W) V::store(row + p, load_row<V, S>(x, j * ldx + p));
    if (full < d) {
      alignas(64) float buf[W];
      V::store(buf, load_row_tail<V, S>(x, j * ldx + full, d - full));
      std::memcpy(row + full, buf, (d - full) * sizeof(float));
    }
  }
}

// Qb queries x Rb rows of dot_rows_batch: Qb * Rb accumulators, each the chain that
// dot_rows runs for its pair (full chunks in order, then the zero-padded tail, then
// V::sum), sharing the loads of the block's queries and rows.
template <class V, size_t Qb, size_t Rb>
void dot_block(const float* const* q, const float* const* q_tail, const float* const* x,
               size_t full, size_t tail, float* out, size_t ldo) {
  using Reg = typename V::Reg;
  constexpr size_t W = V::kWidth;
  Reg acc[Qb][Rb];
  for (size_t i = 0; i < Qb; ++i)
    for (size_t r = 0; r < Rb; ++r) acc[i][r] = V::zero();
  for (size_t p = 0; p < full; p += W) {
    Reg xv[Rb];
    for (size_t r = 0; r < Rb; ++r) xv[r] = V::load(x[r] + p);
    for (size_t i = 0; i < Qb; ++i) {
      const Reg qv = V::load(q[i] + p);
      for (size_t r = 0; r < Rb; ++r) acc[i][r] = V::fma(qv, xv[r], acc[i][r]);
    }
  }
  if (tail) {
    Reg xv[Rb];
    for (size_t r = 0; r < Rb; ++r) xv[r] = load_row_tail<V, Storage::F32>(x[r], full, tail);
    for (size_t i = 0; i < Qb; ++i) {
      const Reg qv = V::load(q_tail[i]);
      for (size_t r = 0; r < Rb; ++r) acc[i][r] = V::fma(qv, xv[r], acc[i][r]);
    }
  }
  if constexpr (Qb >= 4 && Rb == 4 && V::kHasBlockSum) {
    V::block_sum(&acc[0][0], out, ldo);
    if constexpr (Qb == 6) V::block_sum_2x4(&acc[4][0], out + 4, ldo);
    static_assert(Qb == 4 || Qb == 6, "block sums cover 4 or 6 queries");
  } else {
    for (size_t r = 0; r < Rb; ++r)
      for (size_t i = 0; i < Qb; ++i) out[r * ldo + i] = V::sum(acc[i][r]);
  }
}

template <class V, size_t Qb>
void dot_query_block(const float* const* q, const float* const* q_tail, const float* x, size_t ldx,
                     size_t n_rows, size_t full, size_t tail, float* out, size_t ldo) {
  constexpr size_t kRows = 4;
  size_t j = 0;
  for (; j + kRows <= n_rows; j += kRows) {
    const float* rows[kRows] = {x + j * ldx, x + (j + 1) * ldx, x + (j + 2) * ldx, x + (j + 3) * ldx};
    dot_block<V, Qb, kRows>(q, q_tail, rows, full, tail, out + j * ldo, ldo);
  }
  for (; j < n_rows; ++j) {
    const float* row = x + j * ldx;
    dot_block<V, Qb, 1>(q, q_tail, &row, full, tail, out + j * ldo, ldo);
  }
}

// Queries of a block (V::kBatchQueries: 4 x 4 accumulators fit AVX-512's 32 registers,
// 2 x 4 AVX2's 16) times the rows, which the caller keeps few enough to stay in L1.
template <class V>
void dot_rows_batch(const float* q, size_t ldq, size_t nq, const float* x, size_t ldx,
                    size_t n_rows, size_t d, float* out, size_t ldo) {
  constexpr size_t W = V::kWidth;
  constexpr size_t kQueries = V::kBatchQueries;
  static_assert(kQueries <= 6, "the switch below covers blocks of up to 6 queries");
  const size_t full = d - d % W, tail = d - full;
  alignas(64) float tails[kQueries][W];
  for (size_t i0 = 0; i0 < nq; i0 += kQueries) {
    const size_t qb = std::min(kQueries, nq - i0);
    const float* qs[kQueries];
    const float* qt[kQueries];
    for (size_t i = 0; i < qb; ++i) {
      qs[i] = q + (i0 + i) * ldq;
      std::memset(tails[i], 0, sizeof tails[i]);
      std::memcpy(tails[i], qs[i] + full, tail * sizeof(float));
      qt[i] = tails[i];
    }
    float* o = out + i0;
    switch (qb) {
      case 6: dot_query_block<V, (kQueries >= 6 ? 6 : 1)>(qs, qt, x, ldx, n_rows, full, tail, o, ldo); break;
      case 5: dot_query_block<V, (kQueries >= 5 ? 4 : 1)>(qs, qt, x, ldx, n_rows, full, tail, o, ldo);
              dot_query_block<V, 1>(qs + 4, qt + 4, x, ldx, n_rows, full, tail, o + 4, ldo); break;
      case 4: dot_query_block<V, (kQueries >= 4 ? 4 : 1)>(qs, qt, x, ldx, n_rows, full, tail, o, ldo); break;
      case 3: dot_query_block<V, (kQueries >= 3 ? 3 : 1)>(qs, qt, x, ldx, n_rows, full, tail, o, ldo); break;
      case 2: dot_query_block<V, 2>(qs, qt, x, ldx, n_rows, full, tail, o, ldo); break;
      default: dot_query_block<V, 1>(qs, qt, x, ldx, n_rows, full, tail, o, ldo); break;
    }
  }
}

template <class V>
size_t at_least(const float* s, const float* thr, size_t n, uint32_t* idx) {
  constexpr size_t W = V::kWidth;
  size_t count = 0;
  size_t i = 0;
  for (; i + W <= n; i += W) {
    uint32_t mask = V::mask_ge(V::loadu(s + i), V::loadu(thr + i));
    while (mask) {
      idx[count++] = static_cast<uint32_t>(i + __builtin_ctz(mask));
      mask &= mask - 1;
    }
  }
  for (; i < n; ++i)
    if (s[i] >= thr[i]) idx[count++] = static_cast<uint32_t>(i);
  return count;
}

// dot_rows over rows given by address. The next group's lines at the same offset are
// requested while this group is reduced, so they arrive in time for it.
template <class V, Storage S>
void dot_gather(const float* q, const void* const* rows, size_t n, size_t d, float* out) {
  constexpr size_t kBytes = storage_bytes(S);
  const size_t full = d - d % V::kWidth;
  const size_t tail = d - full;
  const typename V::Reg qt = query_tail<V>(q, full, tail);
  size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const size_t ahead = std::min<size_t>(4, n - j - 4);  // rows of the next group
    dot4<V, S>(q, qt, rows[j], rows[j + 1], rows[j + 2], rows[j + 3], full, tail, out + j,
               [&](size_t p) {
                 for (size_t r = 0; r < ahead; ++r)
                   __builtin_prefetch(static_cast<const char*>(rows[j + 4 + r]) + p * kBytes);
               });
  }
  for (; j < n; ++j) out[j] = dot1<V, S>(q, qt, rows[j], full, tail);
}

// dot_rows for one query: the rows in four quarters, one row of each per step, so the
// four accumulator chains hide each other's latency while the reads form four long
// sequential streams (one row at a time is bound by the chain's latency). Each row by
// dot4's chain: the same bits as dot_rows.
template <class V, Storage S>
void dot_rows_one_query(const float* q, const void* x, size_t ldx, size_t n_rows, size_t d,
                        float* out) {
  const size_t full = d - d % V::kWidth;
  const size_t tail = d - full;
  const typename V::Reg qt = query_tail<V>(q, full, tail);
  const size_t row_bytes = ldx * storage_bytes(S);
  const size_t quarter = n_rows / 4;
  const size_t gap = quarter * row_bytes;
  const char* r0 = static_cast<const char*>(x);
  for (size_t s = 0; s < quarter; ++s, r0 += row_bytes) {
    float o[4];
    dot4<V, S>(q, qt, r0, r0 + gap, r0 + 2 * gap, r0 + 3 * gap, full, tail, o, [](size_t) {});
    for (size_t part = 0; part < 4; ++part) out[part * quarter + s] = o[part];
  }
  for (size_t j = 4 * quarter; j < n_rows; ++j)
    out[j] = dot1<V, S>(q, qt, static_cast<const char*>(x) + j * row_bytes, full, tail);
}

// pack, packed: the level's packed batch (DenseKernels), or null.
template <class V>
constexpr DenseKernels make_kernels(SimdLevel level, const char* name,
                                    decltype(DenseKernels::pack_queries) pack = nullptr,
                                    decltype(DenseKernels::dot_packed_batch) packed = nullptr) {
  return DenseKernels{
      level,
      name,
      {dot_rows<V, Storage::F32>, dot_rows<V, Storage::F16>, dot_rows<V, Storage::BF16>},
      dot_rows<V, Storage::SQ8>,
      {to_f32<V, Storage::F32>, to_f32<V, Storage::F16>, to_f32<V, Storage::BF16>},
      to_f32<V, Storage::SQ8>,
      dot_rows_batch<V>,
      at_least<V>,
      {dot_gather<V, Storage::F32>, dot_gather<V, Storage::F16>, dot_gather<V, Storage::BF16>},
      {dot_rows_one_query<V, Storage::F32>, dot_rows_one_query<V, Storage::F16>,
       dot_rows_one_query<V, Storage::BF16>},
      pack,
      packed,
  };
}

}  // namespace simd_impl
}  // namespace ragcore
