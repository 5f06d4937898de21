// AVX2 + FMA + F16C kernels. This file alone is compiled with -mavx2 -mfma -mf16c;
// it runs only after simd.cpp has checked the CPU.
#include <immintrin.h>

#include <utility>

#include "kernels_impl.h"

namespace ragcore {
namespace {

struct Avx2 {
  using Reg = __m256;
  static constexpr size_t kBatchQueries = 2;  // dot_rows_batch: queries x 4 rows of accumulators
  static constexpr size_t kWidth = 8;

  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static Reg loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Reg v) { _mm256_storeu_ps(p, v); }
  static void storeu(float* p, Reg v) { _mm256_storeu_ps(p, v); }
  static Reg broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static Reg load_f16(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static Reg load_bf16(const uint16_t* p) {
    __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  static Reg load_u8(const uint8_t* p) {
    __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
  }
  static float sum(Reg v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static uint32_t mask_ge(Reg a, Reg b) {
    return static_cast<uint32_t>(_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_GE_OQ)));
  }
  static constexpr bool kHasBlockSum = false;  // 2 x 4 blocks: one sum() per pair
  static void block_sum(const Reg*, float*, size_t) {}
};

}  // namespace

extern constexpr DenseKernels kAvx2Kernels = simd_impl::make_kernels<Avx2>(SimdLevel::Avx2, "avx2");

}  // namespace ragcore
