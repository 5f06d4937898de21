// AVX-512 (F, BW, VL, DQ) kernels. This file alone is compiled with AVX-512 flags;
// it runs only after simd.cpp has checked the CPU.
#include <immintrin.h>

#include <utility>

#include "kernels_impl.h"
#include "packed_batch_avx512.h"

namespace ragcore {
namespace {

struct Avx512 {
  using Reg = __m512;
  static constexpr size_t kBatchQueries = 6;  // dot_rows_batch: queries x 4 rows of accumulators
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

  // sum() of 16 accumulators v[i * 4 + r] (4 queries x 4 rows) at once, by sum()'s own
  // addition tree (lanes j + 8, then + 4, + 2, + 1), so each result has sum()'s bits;
  // about 3 instructions a sum instead of 8. Writes out[r * ldo + i].
  static constexpr bool kHasBlockSum = true;
  static void block_sum(const Reg* v, float* out, size_t ldo) {
    Reg h[8], s[4], u[2];
    for (int m = 0; m < 8; ++m)  // [v_j + v_(j+8) of v[2m] | of v[2m+1]]
      h[m] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    for (int n = 0; n < 4; ++n)  // block b: + 4 of v[4n + b]
      s[n] = _mm512_add_ps(_mm512_shuffle_f32x4(h[2 * n], h[2 * n + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm512_shuffle_f32x4(h[2 * n], h[2 * n + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    for (int t = 0; t < 2; ++t)  // block b: + 2 of v[8t + b], v[8t + 4 + b]
      u[t] = _mm512_add_ps(_mm512_shuffle_ps(s[2 * t], s[2 * t + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm512_shuffle_ps(s[2 * t], s[2 * t + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    // block r, lane i: + 1 of v[4i + r]
    const Reg total = _mm512_add_ps(_mm512_shuffle_ps(u[0], u[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                    _mm512_shuffle_ps(u[0], u[1], _MM_SHUFFLE(3, 1, 3, 1)));
    _mm_storeu_ps(out, _mm512_castps512_ps128(total));
    _mm_storeu_ps(out + ldo, _mm512_extractf32x4_ps(total, 1));
    _mm_storeu_ps(out + 2 * ldo, _mm512_extractf32x4_ps(total, 2));
    _mm_storeu_ps(out + 3 * ldo, _mm512_extractf32x4_ps(total, 3));
  }

  // block_sum's tree for 8 accumulators v[i * 4 + r] (2 queries x 4 rows): the same
  // additions, half of the vectors. Writes out[r * ldo + i].
  static void block_sum_2x4(const Reg* v, float* out, size_t ldo) {
    Reg h[4], s[2];
    for (int m = 0; m < 4; ++m)
      h[m] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    for (int n = 0; n < 2; ++n)  // block b: + 4 of v[4n + b]
      s[n] = _mm512_add_ps(_mm512_shuffle_f32x4(h[2 * n], h[2 * n + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm512_shuffle_f32x4(h[2 * n], h[2 * n + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    // block b: + 2 of v[b], v[4 + b]
    const Reg u = _mm512_add_ps(_mm512_shuffle_ps(s[0], s[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                _mm512_shuffle_ps(s[0], s[1], _MM_SHUFFLE(3, 2, 3, 2)));
    // block r, lane i (< 2): + 1 of v[4i + r]
    const Reg total = _mm512_add_ps(_mm512_shuffle_ps(u, u, _MM_SHUFFLE(2, 0, 2, 0)),
                                    _mm512_shuffle_ps(u, u, _MM_SHUFFLE(3, 1, 3, 1)));
    _mm_storel_pi(reinterpret_cast<__m64*>(out), _mm512_castps512_ps128(total));
    _mm_storel_pi(reinterpret_cast<__m64*>(out + ldo), _mm512_extractf32x4_ps(total, 1));
    _mm_storel_pi(reinterpret_cast<__m64*>(out + 2 * ldo), _mm512_extractf32x4_ps(total, 2));
    _mm_storel_pi(reinterpret_cast<__m64*>(out + 3 * ldo), _mm512_extractf32x4_ps(total, 3));
  }
};

}  // namespace

extern constexpr DenseKernels kAvx512Kernels = simd_impl::make_kernels<Avx512>(
    SimdLevel::Avx512, "avx512", packed_batch::pack_queries, packed_batch::dot_packed_batch);

}  // namespace ragcore
