// pq4_encode on AVX-512: the 16 distances of a part are one register, summed in the
// scalar loop's order with separate subtract, multiply and add (compiled with
// -ffp-contract=off: no FMA), so the codes have the scalar encoder's bits.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace ragcore {

void pq4_encode_rows_avx512(const float* x, size_t i0, size_t i1, size_t d, const float* by_dim,
                            size_t m, uint8_t* codes) {
  const size_t dsub = d / m;
  for (size_t i = i0; i < i1; ++i) {
    const float* row = x + i * d;
    for (size_t j = 0; j < m; ++j) {
      __m512 dist = _mm512_setzero_ps();
      for (size_t p = 0; p < dsub; ++p) {
        const __m512 e = _mm512_sub_ps(_mm512_set1_ps(row[j * dsub + p]),
                                       _mm512_loadu_ps(by_dim + (j * dsub + p) * 16));
        dist = _mm512_add_ps(dist, _mm512_mul_ps(e, e));
      }
      const float low = _mm512_reduce_min_ps(dist);
      const uint32_t at = _mm512_cmp_ps_mask(dist, _mm512_set1_ps(low), _CMP_EQ_OQ);
      uint8_t best = 0;
      if (at) {
        best = static_cast<uint8_t>(__builtin_ctz(at));  // the lowest code of the minimum
      } else {  // a NaN distance: the scalar rule (first strictly smaller)
        alignas(64) float s[16];
        _mm512_store_ps(s, dist);
        for (uint8_t c = 1; c < 16; ++c)
          if (s[c] < s[best]) best = c;
      }
      codes[i * m + j] = best;
    }
  }
}

}  // namespace ragcore
