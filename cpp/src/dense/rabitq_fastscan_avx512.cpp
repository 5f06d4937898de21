// AVX-512BW 1-bit fast scan (rabitq_fastscan.h): one 64-byte load holds pairs 2g
// and 2g + 1 of a block's 32 rows, so the per-query layout puts in the 128-bit lanes
// of two table registers [t(4g), t(4g), t(4g+2), t(4g+2)] (low nibbles) and
// [t(4g+1), t(4g+1), t(4g+3), t(4g+3)] (high nibbles). Two sets of sums alternate
// between steps (two independent add chains); the 256-bit halves (pair 2g's rows and
// pair 2g + 1's: the same rows) are added at the end, an odd last pair takes one
// 256-bit step. Sums as in the AVX2 kernel (raw and odd 16-bit sums).
// Compiled with -mavx512f -mavx512bw, chosen at run time.
#include <immintrin.h>

#include <vector>

#include "ragcore/dense/rabitq_fastscan.h"
#include "rabitq_fastscan_impl.h"

namespace ragcore {
namespace {

constexpr size_t kGroupBytes = 128;  // two 64-byte table registers per two pairs

void avx512_layout(const uint8_t* luts, size_t dp, std::vector<uint8_t>& laid) {
  const size_t pairs = dp / 8, groups = pairs / 2;
  laid.assign(groups * kGroupBytes + 32, 0);
  for (size_t g = 0; g < groups; ++g)
    for (size_t half = 0; half < 2; ++half)      // low, high nibble
      for (size_t lane = 0; lane < 4; ++lane) {  // pair 2g in lanes 0, 1; 2g + 1 in 2, 3
        const size_t t = 4 * g + 2 * (lane / 2) + half;
        std::copy(luts + 16 * t, luts + 16 * t + 16, laid.begin() + g * kGroupBytes + half * 64 + lane * 16);
      }
  if (pairs % 2)  // the last pair's two tables, for the 256-bit step
    std::copy(luts + 32 * (pairs - 1), luts + 32 * pairs, laid.begin() + groups * kGroupBytes);
}

inline void step(const uint8_t* codes_at, const uint8_t* tables, __m512i& raw, __m512i& odd) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i codes = _mm512_loadu_si512(codes_at);
  const __m512i a = _mm512_shuffle_epi8(_mm512_loadu_si512(tables), _mm512_and_si512(codes, low4));
  const __m512i c = _mm512_shuffle_epi8(_mm512_loadu_si512(tables + 64),
                                        _mm512_and_si512(_mm512_srli_epi16(codes, 4), low4));
  raw = _mm512_add_epi16(raw, _mm512_add_epi16(a, c));
  odd = _mm512_add_epi16(odd, _mm512_add_epi16(_mm512_srli_epi16(a, 8), _mm512_srli_epi16(c, 8)));
}

inline __m256i halves(__m512i v) {
  return _mm256_add_epi16(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

void avx512_sums(const uint8_t* blocks, size_t nblocks, size_t dp, const uint8_t* laid, uint16_t* out) {
  const size_t pairs = dp / 8, groups = pairs / 2, block_bytes = rabitq_fast_block_bytes(dp);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const uint8_t* tail = laid + groups * kGroupBytes;
  for (size_t b = 0; b < nblocks; ++b) {
    const uint8_t* block = blocks + b * block_bytes;
    __m512i raw0 = _mm512_setzero_si512(), odd0 = raw0, raw1 = raw0, odd1 = raw0;
    size_t g = 0;
    for (; g + 2 <= groups; g += 2) {
      step(block + g * 64, laid + g * kGroupBytes, raw0, odd0);
      step(block + (g + 1) * 64, laid + (g + 1) * kGroupBytes, raw1, odd1);
    }
    if (g < groups) step(block + g * 64, laid + g * kGroupBytes, raw0, odd0);
    __m256i raw = halves(_mm512_add_epi16(raw0, raw1)), odd = halves(_mm512_add_epi16(odd0, odd1));
    if (pairs % 2) {
      const __m256i codes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + (pairs - 1) * kRabitqFastBlock));
      const __m256i tl = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(tail)));
      const __m256i th = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(tail + 16)));
      const __m256i a = _mm256_shuffle_epi8(tl, _mm256_and_si256(codes, low4));
      const __m256i c = _mm256_shuffle_epi8(th, _mm256_and_si256(_mm256_srli_epi16(codes, 4), low4));
      raw = _mm256_add_epi16(raw, _mm256_add_epi16(a, c));
      odd = _mm256_add_epi16(odd, _mm256_add_epi16(_mm256_srli_epi16(a, 8), _mm256_srli_epi16(c, 8)));
    }
    const __m256i even = _mm256_sub_epi16(raw, _mm256_slli_epi16(odd, 8));
    const __m256i lo = _mm256_unpacklo_epi16(even, odd);  // rows 0-7 | 16-23
    const __m256i hi = _mm256_unpackhi_epi16(even, odd);  // rows 8-15 | 24-31
    uint16_t* o = out + b * kRabitqFastBlock;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o), _mm256_permute2x128_si256(lo, hi, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 16), _mm256_permute2x128_si256(lo, hi, 0x31));
  }
}

}  // namespace

const RabitqFastScanKernel& rabitq_fast_avx512() {
  static const RabitqFastScanKernel k{avx512_layout, avx512_sums, rabitq_fast_estimates_impl};
  return k;
}

}  // namespace ragcore
