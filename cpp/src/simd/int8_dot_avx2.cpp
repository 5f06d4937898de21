// The AVX2 int8 kernel (int8_dot.h), compiled with -mavx2, for CPUs without AVX-512.
// 32 codes per step: vpmaddubsw multiplies unsigned by signed bytes, so the query's
// sign moves onto the row (|q| * sign(q) x = q x) and pairs are summed into int16,
// which cannot saturate because |code| <= 127 (2 * 127 * 127 < 2^15); vpmaddwd by
// ones then widens the pairs into 8 int32 lanes. The sums are the scalar loop's exactly.
#include <immintrin.h>

#include "int8_dot_rows4.h"
#include "ragcore/simd/int8_dot.h"

namespace ragcore {
namespace int8_impl {
namespace {

struct Avx2Ops {
  static constexpr size_t kStep = 32;
  using Acc = __m256i;
  struct Query {
    __m256i codes, magnitude;  // q and |q|
  };
  static Query query(const int8_t* q) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
    return {v, _mm256_abs_epi8(v)};
  }
  static Acc zero() { return _mm256_setzero_si256(); }
  static Acc madd(Acc acc, const Query& q, const int8_t* x) {
    const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
    const __m256i pairs = _mm256_maddubs_epi16(q.magnitude, _mm256_sign_epi8(xv, q.codes));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
  }
  static int32_t reduce(Acc v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
  }
};

}  // namespace
}  // namespace int8_impl

extern const Int8Kernel kInt8Avx2 = {"avx2", int8_impl::dot_gather_rows4<int8_impl::Avx2Ops>};

}  // namespace ragcore
