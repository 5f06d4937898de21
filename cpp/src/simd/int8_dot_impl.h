// The AVX-512 int8 kernels' instructions, shared by int8_dot_avx512.cpp (AVX-512BW) and
// int8_dot_vnni.cpp (AVX-512 VNNI), each compiled with its own target flags so the
// BW build never holds a VNNI instruction: 32 codes widened to int16 per step,
// multiplied in pairs into 16 int32 lanes (vpdpwssd with VNNI, vpmaddwd + vpaddd without).
#pragma once

#include <immintrin.h>

#include "int8_dot_rows4.h"
#include "ragcore/simd/int8_dot.h"

namespace ragcore {
namespace int8_impl {
namespace {  // internal linkage: each file keeps its own copy, built with its own flags

inline __m512i widen(const int8_t* p) {
  return _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

template <bool kVnni>
struct Avx512Ops {
  static constexpr size_t kStep = 32;
  using Acc = __m512i;
  using Query = __m512i;
  static Query query(const int8_t* q) { return widen(q); }
  static Acc zero() { return _mm512_setzero_si512(); }
  static Acc madd(Acc acc, const Query& q, const int8_t* x) {
    if constexpr (kVnni) return _mm512_dpwssd_epi32(acc, q, widen(x));
    return _mm512_add_epi32(acc, _mm512_madd_epi16(q, widen(x)));
  }
  static int32_t reduce(Acc acc) { return _mm512_reduce_add_epi32(acc); }
};

template <bool kVnni>
void dot_gather(const int8_t* q, const int8_t* const* rows, size_t n, size_t d, int32_t* out) {
  dot_gather_rows4<Avx512Ops<kVnni>>(q, rows, n, d, out);
}

}  // namespace
}  // namespace int8_impl
}  // namespace ragcore
