// AVX2 1-bit fast scan (rabitq_fastscan.h): one 32-byte load holds pair p of a
// block's 32 rows; its two nibble tables are broadcast to both 128-bit lanes
// (vpshufb looks up within a lane) straight from the luts. Sums as in pq4's
// kernels: raw = 16-bit sums of whole lanes (even row + 256 * odd row, modulo 2^16)
// and odd = the odd rows' bytes alone; even = raw - 256 * odd at the end (exact:
// every sum is below 2^16). Compiled with -mavx2, chosen at run time.
#include <immintrin.h>

#include <vector>

#include "ragcore/dense/rabitq_fastscan.h"
#include "rabitq_fastscan_impl.h"

namespace ragcore {
namespace {

void avx2_layout(const uint8_t* luts, size_t dp, std::vector<uint8_t>& laid) {
  laid.assign(luts, luts + dp / 4 * 16);
}

inline __m256i table(const uint8_t* luts, size_t t) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(luts + 16 * t)));
}

// Even and odd rows' sums back in row order: rows 0..15, then 16..31.
inline void store_rows(__m256i even, __m256i odd, uint16_t* out) {
  const __m256i lo = _mm256_unpacklo_epi16(even, odd);  // rows 0-7 | 16-23
  const __m256i hi = _mm256_unpackhi_epi16(even, odd);  // rows 8-15 | 24-31
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_permute2x128_si256(lo, hi, 0x20));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 16), _mm256_permute2x128_si256(lo, hi, 0x31));
}

void avx2_sums(const uint8_t* blocks, size_t nblocks, size_t dp, const uint8_t* luts, uint16_t* out) {
  const size_t pairs = dp / 8, block_bytes = rabitq_fast_block_bytes(dp);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  for (size_t b = 0; b < nblocks; ++b) {
    const uint8_t* block = blocks + b * block_bytes;
    __m256i raw = _mm256_setzero_si256(), odd = raw;
    for (size_t p = 0; p < pairs; ++p) {
      const __m256i codes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + p * kRabitqFastBlock));
      const __m256i a = _mm256_shuffle_epi8(table(luts, 2 * p), _mm256_and_si256(codes, low4));
      const __m256i c = _mm256_shuffle_epi8(table(luts, 2 * p + 1),
                                            _mm256_and_si256(_mm256_srli_epi16(codes, 4), low4));
      raw = _mm256_add_epi16(raw, _mm256_add_epi16(a, c));
      odd = _mm256_add_epi16(odd, _mm256_add_epi16(_mm256_srli_epi16(a, 8), _mm256_srli_epi16(c, 8)));
    }
    store_rows(_mm256_sub_epi16(raw, _mm256_slli_epi16(odd, 8)), odd, out + b * kRabitqFastBlock);
  }
}

}  // namespace

const RabitqFastScanKernel& rabitq_fast_avx2() {
  static const RabitqFastScanKernel k{avx2_layout, avx2_sums, rabitq_fast_estimates_impl};
  return k;
}

}  // namespace ragcore
