// AVX2 fast scan: per block of 32 vectors and pair of sub-quantisers, one 32-byte
// load of codes, two pshufb look-ups (low and high nibbles) in the pair's two
// tables, and 16-bit accumulation split into even and odd bytes (no lane
// crossing); compiled with -mavx2, chosen at run time.
#include <immintrin.h>

#include "pq4_scan_impl.h"

namespace ragcore {

void pq4_scan_avx2(const uint8_t* packed, size_t n, size_t m, const uint8_t* luts,
                   uint16_t* losses) {
  const size_t pairs = pq4_pairs(m);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i low8 = _mm256_set1_epi16(0x00FF);
  for (size_t b = 0; b < pq4_blocks(n); ++b) {
    const uint8_t* block = packed + b * pairs * kPq4Block;
    __m256i even = _mm256_setzero_si256(), odd = _mm256_setzero_si256();
    for (size_t p = 0; p < pairs; ++p) {
      // Each 16-byte table in both 128-bit lanes: pshufb looks up within a lane.
      const __m256i lut_lo = _mm256_broadcastsi128_si256(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(luts + (2 * p) * 16)));
      const __m256i lut_hi = _mm256_broadcastsi128_si256(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(luts + (2 * p + 1) * 16)));
      const __m256i codes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + p * kPq4Block));
      const __m256i lo = _mm256_and_si256(codes, low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(codes, 4), low4);
      const __m256i a = _mm256_shuffle_epi8(lut_lo, lo);
      const __m256i c = _mm256_shuffle_epi8(lut_hi, hi);
      even = _mm256_add_epi16(even, _mm256_add_epi16(_mm256_and_si256(a, low8), _mm256_and_si256(c, low8)));
      odd = _mm256_add_epi16(odd, _mm256_add_epi16(_mm256_srli_epi16(a, 8), _mm256_srli_epi16(c, 8)));
    }
    alignas(32) uint16_t e[16], o[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(e), even);
    _mm256_store_si256(reinterpret_cast<__m256i*>(o), odd);
    const size_t rows = n - b * kPq4Block < kPq4Block ? n - b * kPq4Block : kPq4Block;
    uint16_t* out = losses + b * kPq4Block;
    for (size_t i = 0; i < rows; ++i) out[i] = (i & 1) ? o[i >> 1] : e[i >> 1];
  }
}

}  // namespace ragcore
