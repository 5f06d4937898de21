// The AVX-512 int8 gather kernel body, shared by int8_dot_avx512.cpp (AVX-512BW) and
// int8_dot_vnni.cpp (AVX-512 VNNI), each compiled with its own target flags so the
// BW build never holds a VNNI instruction: 32 codes widened to int16 per step,
// multiplied in pairs into 16 int32 lanes (vpdpwssd with VNNI, vpmaddwd + vpaddd without).
#pragma once

#include <immintrin.h>

#include "ragcore/simd/int8_dot.h"

namespace ragcore {
namespace int8_impl {
namespace {  // internal linkage: each file keeps its own copy, built with its own flags

template <bool kVnni>
inline __m512i madd(__m512i acc, __m512i a, __m512i b) {
  if constexpr (kVnni) return _mm512_dpwssd_epi32(acc, a, b);
  return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
}

inline __m512i widen(const int8_t* p) {
  return _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

inline int32_t tail_sum(const int8_t* q, const int8_t* x, size_t from, size_t d) {
  int32_t acc = 0;
  for (size_t p = from; p < d; ++p) acc += static_cast<int32_t>(q[p]) * x[p];
  return acc;
}

// Four rows at a time (four independent chains); the next four rows' lines are
// requested before this group is reduced.
template <bool kVnni>
void dot_gather(const int8_t* q, const int8_t* const* rows, size_t n, size_t d, int32_t* out) {
  const size_t full = d - d % 32;
  size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    for (size_t r = j + 4; r < j + 8 && r < n; ++r)
      for (size_t line = 0; line < d; line += 64) __builtin_prefetch(rows[r] + line);
    const int8_t *x0 = rows[j], *x1 = rows[j + 1], *x2 = rows[j + 2], *x3 = rows[j + 3];
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t p = 0; p < full; p += 32) {
      const __m512i qv = widen(q + p);
      a0 = madd<kVnni>(a0, qv, widen(x0 + p));
      a1 = madd<kVnni>(a1, qv, widen(x1 + p));
      a2 = madd<kVnni>(a2, qv, widen(x2 + p));
      a3 = madd<kVnni>(a3, qv, widen(x3 + p));
    }
    out[j] = _mm512_reduce_add_epi32(a0) + tail_sum(q, x0, full, d);
    out[j + 1] = _mm512_reduce_add_epi32(a1) + tail_sum(q, x1, full, d);
    out[j + 2] = _mm512_reduce_add_epi32(a2) + tail_sum(q, x2, full, d);
    out[j + 3] = _mm512_reduce_add_epi32(a3) + tail_sum(q, x3, full, d);
  }
  for (; j < n; ++j) {
    __m512i a = _mm512_setzero_si512();
    for (size_t p = 0; p < full; p += 32) a = madd<kVnni>(a, widen(q + p), widen(rows[j] + p));
    out[j] = _mm512_reduce_add_epi32(a) + tail_sum(q, rows[j], full, d);
  }
}

}  // namespace
}  // namespace int8_impl
}  // namespace ragcore
