// AVX2 fast scan: per block of 32 vectors and pair of sub-quantisers, one 32-byte
// load of codes, two pshufb look-ups (low and high nibbles) in the pair's two
// tables, and 16-bit accumulation split into even and odd bytes (no lane
// crossing); compiled with -mavx2, chosen at run time.
#include <immintrin.h>

#include <algorithm>

#include "pq4_scan_impl.h"

namespace ragcore {
namespace {

// even / odd: the 16-bit losses of a block's even and odd vectors.
inline void block_losses(const uint8_t* block, size_t pairs, const uint8_t* luts, __m256i& even,
                         __m256i& odd) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256i raw = _mm256_setzero_si256();
  odd = _mm256_setzero_si256();
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
    // raw: 16-bit sums of whole lanes (even byte + 256 * odd byte, modulo 2**16);
    // odd: the odd bytes alone. even = raw - 256 * odd is exact (the sums are below
    // 2**16) and costs two operations fewer per pair than masking the even bytes.
    raw = _mm256_add_epi16(raw, _mm256_add_epi16(a, c));
    odd = _mm256_add_epi16(odd, _mm256_add_epi16(_mm256_srli_epi16(a, 8), _mm256_srli_epi16(c, 8)));
  }
  even = _mm256_sub_epi16(raw, _mm256_slli_epi16(odd, 8));
}

// Bit 2j set where lane j of x is <= thr (unsigned 16-bit).
inline uint32_t at_most(__m256i x, __m256i thr) {
  const __m256i le = _mm256_cmpeq_epi16(_mm256_min_epu16(x, thr), x);
  return static_cast<uint32_t>(_mm256_movemask_epi8(le)) & 0x55555555u;
}

}  // namespace

void pq4_scan_avx2(const uint8_t* packed, size_t n, size_t m, const uint8_t* luts,
                   uint16_t* losses) {
  const size_t pairs = pq4_pairs(m);
  for (size_t b = 0; b < pq4_blocks(n); ++b) {
    __m256i even, odd;
    block_losses(packed + b * pairs * kPq4Block, pairs, luts, even, odd);
    alignas(32) uint16_t e[16], o[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(e), even);
    _mm256_store_si256(reinterpret_cast<__m256i*>(o), odd);
    const size_t rows = std::min(kPq4Block, n - b * kPq4Block);
    uint16_t* out = losses + b * kPq4Block;
    for (size_t i = 0; i < rows; ++i) out[i] = (i & 1) ? o[i >> 1] : e[i >> 1];
  }
}

void pq4_select_avx2(const uint8_t* packed, size_t n, size_t m, const uint8_t* luts,
                     uint32_t first_row, const AllowFilter& allow, const int64_t* ids,
                     Pq4Candidates& out) {
  const size_t pairs = pq4_pairs(m);
  for (size_t b = 0; b < pq4_blocks(n); ++b) {
    __m256i even, odd;
    block_losses(packed + b * pairs * kPq4Block, pairs, luts, even, odd);
    const __m256i thr = _mm256_set1_epi16(static_cast<short>(std::min<uint32_t>(out.bound(), 0xFFFF)));
    const uint32_t lanes = (at_most(even, thr) | (at_most(odd, thr) << 1)) &
                           pq4_valid_lanes(n - b * kPq4Block);
    if (!lanes) continue;
    alignas(32) uint16_t e[16], o[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(e), even);
    _mm256_store_si256(reinterpret_cast<__m256i*>(o), odd);
    pq4_offer_lanes(lanes, e, o, first_row + static_cast<uint32_t>(b * kPq4Block), allow, ids, out);
  }
}

}  // namespace ragcore
