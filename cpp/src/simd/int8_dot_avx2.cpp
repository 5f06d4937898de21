// The AVX2 int8 kernel (int8_dot.h), compiled with -mavx2, for CPUs without AVX-512.
// 32 codes per step: vpmaddubsw multiplies unsigned by signed bytes, so the query's
// sign moves onto the row (|q| * sign(q) x = q x) and pairs are summed into int16,
// which cannot saturate because |code| <= 127 (2 * 127 * 127 < 2^15); vpmaddwd by
// ones then widens the pairs into 8 int32 lanes. The sums are the scalar loop's exactly.
#include <immintrin.h>

#include "ragcore/simd/int8_dot.h"

namespace ragcore {
namespace {

inline int32_t reduce_add(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

inline __m256i load(const int8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// acc += the int32 pair sums of |q| * (x signed by q).
inline __m256i madd(__m256i acc, __m256i q_abs, __m256i q, __m256i x) {
  const __m256i pairs = _mm256_maddubs_epi16(q_abs, _mm256_sign_epi8(x, q));
  return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

inline int32_t tail_sum(const int8_t* q, const int8_t* x, size_t from, size_t d) {
  int32_t acc = 0;
  for (size_t p = from; p < d; ++p) acc += static_cast<int32_t>(q[p]) * x[p];
  return acc;
}

// Four rows at a time (four independent chains), the next four rows' lines requested
// first, as the AVX-512 kernels do.
void dot_gather_avx2(const int8_t* q, const int8_t* const* rows, size_t n, size_t d, int32_t* out) {
  const size_t full = d - d % 32;
  size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    for (size_t r = j + 4; r < j + 8 && r < n; ++r)
      for (size_t line = 0; line < d; line += 64) __builtin_prefetch(rows[r] + line);
    const int8_t *x0 = rows[j], *x1 = rows[j + 1], *x2 = rows[j + 2], *x3 = rows[j + 3];
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t p = 0; p < full; p += 32) {
      const __m256i qv = load(q + p), qa = _mm256_abs_epi8(qv);
      a0 = madd(a0, qa, qv, load(x0 + p));
      a1 = madd(a1, qa, qv, load(x1 + p));
      a2 = madd(a2, qa, qv, load(x2 + p));
      a3 = madd(a3, qa, qv, load(x3 + p));
    }
    out[j] = reduce_add(a0) + tail_sum(q, x0, full, d);
    out[j + 1] = reduce_add(a1) + tail_sum(q, x1, full, d);
    out[j + 2] = reduce_add(a2) + tail_sum(q, x2, full, d);
    out[j + 3] = reduce_add(a3) + tail_sum(q, x3, full, d);
  }
  for (; j < n; ++j) {
    __m256i a = _mm256_setzero_si256();
    for (size_t p = 0; p < full; p += 32) {
      const __m256i qv = load(q + p);
      a = madd(a, _mm256_abs_epi8(qv), qv, load(rows[j] + p));
    }
    out[j] = reduce_add(a) + tail_sum(q, rows[j], full, d);
  }
}

}  // namespace

extern const Int8Kernel kInt8Avx2 = {"avx2", dot_gather_avx2};

}  // namespace ragcore
