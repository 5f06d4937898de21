// AVX-512 (F, BW, VL, DQ) kernels. This file alone is compiled with AVX-512 flags;
// it runs only after simd.cpp has checked the CPU.
#include <immintrin.h>

#include <utility>

#include "kernels_impl.h"

namespace ragcore {
namespace {

struct Avx512 {
  using Reg = __m512;
  static constexpr size_t kBatchQueries = 4;  // dot_rows_batch: queries x 4 rows of accumulators
  static constexpr size_t kWidth = 16;

  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static Reg loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Reg v) { _mm512_storeu_ps(p, v); }
  static void storeu(float* p, Reg v) { _mm512_storeu_ps(p, v); }
  static Reg broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static Reg load_f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static Reg load_bf16(const uint16_t* p) {
    __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
  }
  static Reg load_u8(const uint8_t* p) {
    __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes));
  }
  static float sum(Reg v) {
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static uint32_t mask_ge(Reg a, Reg b) {
    return static_cast<uint32_t>(_mm512_cmp_ps_mask(a, b, _CMP_GE_OQ));
  }
};

}  // namespace

extern const DenseKernels kAvx512Kernels =
    simd_impl::make_kernels<Avx512>(SimdLevel::Avx512, "avx512");

}  // namespace ragcore
