// AVX-512BW fast scan: two pairs of sub-quantisers per step. A block stores its
// pairs one after the other (32 bytes each), so one 64-byte load holds the codes
// of pairs p and p + 1; the 128-bit lanes of the table registers hold
// [t(2p), t(2p), t(2p+2), t(2p+2)] (low nibbles) and the same for the odd tables,
// because vpshufb looks up within a 128-bit lane. The two 256-bit halves of the
// sums are added at the end; an odd last pair takes the 256-bit step. Lanes at or
// below the running threshold come out of one unsigned compare as a mask.
// Compiled with -mavx512f -mavx512bw -mavx512vl -mbmi2, chosen at run time.
#include <immintrin.h>

#include <algorithm>

#include "pq4_scan_impl.h"

namespace ragcore {
namespace {

constexpr size_t kMaxGroups = 64;  // m <= 256: at most 128 pairs, 64 groups of two

// tables[2g], tables[2g + 1]: the low- and high-nibble table registers of pairs 2g, 2g+1.
void group_tables(const uint8_t* luts, size_t groups, __m512i* tables) {
  for (size_t g = 0; g < groups; ++g)
    for (int half = 0; half < 2; ++half) {
      const __m256i first = _mm256_broadcastsi128_si256(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(luts + (4 * g + half) * 16)));
      const __m256i second = _mm256_broadcastsi128_si256(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(luts + (4 * g + 2 + half) * 16)));
      tables[2 * g + half] = _mm512_inserti64x4(_mm512_castsi256_si512(first), second, 1);
    }
}

}  // namespace

void pq4_select_avx512(const uint8_t* packed, size_t n, size_t m, const uint8_t* luts,
                       uint32_t first_row, const AllowFilter& allow, const int64_t* ids,
                       Pq4Candidates& out) {
  const size_t pairs = pq4_pairs(m), groups = pairs / 2;
  __m512i tables[2 * kMaxGroups];
  group_tables(luts, groups, tables);
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m256i low4h = _mm256_set1_epi8(0x0F);
  const __m256i low8h = _mm256_set1_epi16(0x00FF);
  __m256i tail_lo = _mm256_setzero_si256(), tail_hi = _mm256_setzero_si256();
  if (pairs % 2) {
    tail_lo = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(luts + (pairs - 1) * 32)));
    tail_hi = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(luts + (pairs - 1) * 32 + 16)));
  }
  for (size_t b = 0; b < pq4_blocks(n); ++b) {
    const uint8_t* block = packed + b * pairs * kPq4Block;
    // Two independent sets of sums (groups g and g + 1), added at the end: more
    // work in flight per step than one chain of sums allows.
    __m512i raw2[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
    __m512i odd2[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
    auto step = [&](size_t g, int s) {
      const __m512i codes = _mm512_loadu_si512(block + 2 * g * kPq4Block);
      const __m512i lo = _mm512_and_si512(codes, low4);
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(codes, 4), low4);
      const __m512i a = _mm512_shuffle_epi8(tables[2 * g], lo);
      const __m512i c = _mm512_shuffle_epi8(tables[2 * g + 1], hi);
      // raw: 16-bit sums of whole lanes (even byte + 256 * odd byte, modulo 2**16);
      // odd: the odd bytes alone. The even sums are raw - 256 * odd at the end
      // (exact: they are below 2**16), two operations fewer per step than masking.
      raw2[s] = _mm512_add_epi16(raw2[s], _mm512_add_epi16(a, c));
      odd2[s] = _mm512_add_epi16(odd2[s], _mm512_add_epi16(_mm512_srli_epi16(a, 8), _mm512_srli_epi16(c, 8)));
    };
    size_t g = 0;
    for (; g + 2 <= groups; g += 2) {
      step(g, 0);
      step(g + 1, 1);
    }
    if (g < groups) step(g, 0);
    const __m512i raw_sum = _mm512_add_epi16(raw2[0], raw2[1]);
    const __m512i odd_sum = _mm512_add_epi16(odd2[0], odd2[1]);
    __m256i odd = _mm256_add_epi16(_mm512_castsi512_si256(odd_sum), _mm512_extracti64x4_epi64(odd_sum, 1));
    const __m256i raw = _mm256_add_epi16(_mm512_castsi512_si256(raw_sum), _mm512_extracti64x4_epi64(raw_sum, 1));
    __m256i even = _mm256_sub_epi16(raw, _mm256_slli_epi16(odd, 8));
    if (pairs % 2) {
      const __m256i codes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + (pairs - 1) * kPq4Block));
      const __m256i a = _mm256_shuffle_epi8(tail_lo, _mm256_and_si256(codes, low4h));
      const __m256i c = _mm256_shuffle_epi8(tail_hi, _mm256_and_si256(_mm256_srli_epi16(codes, 4), low4h));
      even = _mm256_add_epi16(even, _mm256_add_epi16(_mm256_and_si256(a, low8h), _mm256_and_si256(c, low8h)));
      odd = _mm256_add_epi16(odd, _mm256_add_epi16(_mm256_srli_epi16(a, 8), _mm256_srli_epi16(c, 8)));
    }
    const __m256i thr = _mm256_set1_epi16(static_cast<short>(std::min<uint32_t>(out.bound(), 0xFFFF)));
    // Mask bit j: lane j, i.e. vector 2j (even) or 2j + 1 (odd); pdep spreads it to bit 2j.
    const uint32_t lanes =
        (_pdep_u32(_mm256_cmple_epu16_mask(even, thr), 0x55555555u) |
         _pdep_u32(_mm256_cmple_epu16_mask(odd, thr), 0xAAAAAAAAu)) &
        pq4_valid_lanes(n - b * kPq4Block);
    if (!lanes) continue;
    alignas(32) uint16_t e[16], o[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(e), even);
    _mm256_store_si256(reinterpret_cast<__m256i*>(o), odd);
    pq4_offer_lanes(lanes, e, o, first_row + static_cast<uint32_t>(b * kPq4Block), allow, ids, out);
  }
}

}  // namespace ragcore
