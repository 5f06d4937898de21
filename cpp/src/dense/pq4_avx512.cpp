// AVX-512BW fast scan: two pairs of sub-quantisers per step. A block stores its
// pairs one after the other (32 bytes each), so one 64-byte load holds the codes
// of pairs p and p + 1; the 128-bit lanes of the table registers hold
// [t(2p), t(2p), t(2p+2), t(2p+2)] (low nibbles) and the same for the odd tables,
// because vpshufb looks up within a 128-bit lane. The two 256-bit halves of the
// sums are added at the end; an odd last pair takes the 256-bit step. Lanes at or
// below the running threshold come out of one unsigned compare as a mask.
// Several queries can share a scan (FAISS's qbs): each 64-byte load of codes and its
// split into nibbles then serve up to kQueriesPerLoad queries, whose look-ups and
// sums are what remains per query (8 operations a step instead of 11).
// Compiled with -mavx512f -mavx512bw -mavx512vl -mbmi2, chosen at run time.
#include <immintrin.h>

#include <algorithm>

#include "pq4_scan_impl.h"

namespace ragcore {
namespace {

constexpr size_t kMaxGroups = 64;  // m <= 256: at most 128 pairs, 64 groups of two
constexpr size_t kQueriesPerLoad = 8;  // 16 sums in registers (of 32); measured faster than 4

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

// One query's tables in registers' layout, and its candidates.
struct QueryScan {
  __m512i tables[2 * kMaxGroups];
  __m256i tail_lo, tail_hi;  // the last pair's tables when pairs is odd
  Pq4Candidates* out;

  void prepare(const uint8_t* luts, size_t pairs, Pq4Candidates* candidates) {
    out = candidates;
    group_tables(luts, pairs / 2, tables);
    tail_lo = tail_hi = _mm256_setzero_si256();
    if (pairs % 2 == 0) return;
    tail_lo = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(luts + (pairs - 1) * 32)));
    tail_hi = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(luts + (pairs - 1) * 32 + 16)));
  }

  // Ends a block: the even and odd vectors' losses from the sums of the steps (and the
  // odd last pair), compared with the running threshold; the lanes at or below it offered.
  void finish(__m512i raw_sum, __m512i odd_sum, const uint8_t* block, size_t pairs, size_t rows,
              uint32_t block_row, const AllowFilter& allow, const int64_t* ids) const {
    const __m256i low4h = _mm256_set1_epi8(0x0F);
    const __m256i low8h = _mm256_set1_epi16(0x00FF);
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
    const __m256i thr = _mm256_set1_epi16(static_cast<short>(std::min<uint32_t>(out->bound(), 0xFFFF)));
    // Mask bit j: lane j, i.e. vector 2j (even) or 2j + 1 (odd); pdep spreads it to bit 2j.
    const uint32_t lanes =
        (_pdep_u32(_mm256_cmple_epu16_mask(even, thr), 0x55555555u) |
         _pdep_u32(_mm256_cmple_epu16_mask(odd, thr), 0xAAAAAAAAu)) &
        pq4_valid_lanes(rows);
    if (!lanes) return;
    alignas(32) uint16_t e[16], o[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(e), even);
    _mm256_store_si256(reinterpret_cast<__m256i*>(o), odd);
    pq4_offer_lanes(lanes, e, o, block_row, allow, ids, *out);
  }
};

// Q queries over the same codes. One query alone keeps two independent sets of sums
// (groups g and g + 1, added at the end): one chain of sums leaves the CPU idle; with
// several queries their chains are the work in flight.
template <size_t Q>
void select_queries(const uint8_t* packed, size_t n, size_t m, const QueryScan* scans,
                    uint32_t first_row, const AllowFilter& allow, const int64_t* ids) {
  constexpr size_t S = Q == 1 ? 2 : 1;
  const size_t pairs = pq4_pairs(m), groups = pairs / 2;
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  for (size_t b = 0; b < pq4_blocks(n); ++b) {
    const uint8_t* block = packed + b * pairs * kPq4Block;
    __m512i raw[Q][S], odd[Q][S];
    for (size_t q = 0; q < Q; ++q)
      for (size_t s = 0; s < S; ++s) raw[q][s] = odd[q][s] = _mm512_setzero_si512();
    auto step = [&](size_t g, size_t s) {
      const __m512i codes = _mm512_loadu_si512(block + 2 * g * kPq4Block);
      const __m512i lo = _mm512_and_si512(codes, low4);
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(codes, 4), low4);
      for (size_t q = 0; q < Q; ++q) {
        const __m512i a = _mm512_shuffle_epi8(scans[q].tables[2 * g], lo);
        const __m512i c = _mm512_shuffle_epi8(scans[q].tables[2 * g + 1], hi);
        // raw: 16-bit sums of whole lanes (even byte + 256 * odd byte, modulo 2**16);
        // odd: the odd bytes alone. The even sums are raw - 256 * odd at the end
        // (exact: they are below 2**16), two operations fewer per step than masking.
        raw[q][s] = _mm512_add_epi16(raw[q][s], _mm512_add_epi16(a, c));
        odd[q][s] = _mm512_add_epi16(odd[q][s], _mm512_add_epi16(_mm512_srli_epi16(a, 8), _mm512_srli_epi16(c, 8)));
      }
    };
    size_t g = 0;
    for (; g + S <= groups; g += S)
      for (size_t s = 0; s < S; ++s) step(g + s, s);
    for (; g < groups; ++g) step(g, 0);
    for (size_t q = 0; q < Q; ++q) {
      __m512i r = raw[q][0], o = odd[q][0];
      for (size_t s = 1; s < S; ++s) {
        r = _mm512_add_epi16(r, raw[q][s]);
        o = _mm512_add_epi16(o, odd[q][s]);
      }
      scans[q].finish(r, o, block, pairs, n - b * kPq4Block, first_row + static_cast<uint32_t>(b * kPq4Block),
                      allow, ids);
    }
  }
}

}  // namespace

void pq4_select_avx512_many(const uint8_t* packed, size_t n, size_t m, const uint8_t* const* luts,
                            size_t nq, uint32_t first_row, const AllowFilter& allow,
                            const int64_t* ids, Pq4Candidates* const* outs) {
  const size_t pairs = pq4_pairs(m);
  QueryScan scans[kQueriesPerLoad];
  for (size_t q0 = 0; q0 < nq; q0 += kQueriesPerLoad) {
    const size_t count = std::min(kQueriesPerLoad, nq - q0);
    for (size_t q = 0; q < count; ++q) scans[q].prepare(luts[q0 + q], pairs, outs[q0 + q]);
    switch (count) {
      case 1: select_queries<1>(packed, n, m, scans, first_row, allow, ids); break;
      case 2: select_queries<2>(packed, n, m, scans, first_row, allow, ids); break;
      case 3: select_queries<3>(packed, n, m, scans, first_row, allow, ids); break;
      case 4: select_queries<4>(packed, n, m, scans, first_row, allow, ids); break;
      case 5: select_queries<5>(packed, n, m, scans, first_row, allow, ids); break;
      case 6: select_queries<6>(packed, n, m, scans, first_row, allow, ids); break;
      case 7: select_queries<7>(packed, n, m, scans, first_row, allow, ids); break;
      default: select_queries<8>(packed, n, m, scans, first_row, allow, ids); break;
    }
  }
}

void pq4_select_avx512(const uint8_t* packed, size_t n, size_t m, const uint8_t* luts,
                       uint32_t first_row, const AllowFilter& allow, const int64_t* ids,
                       Pq4Candidates& out) {
  Pq4Candidates* outs[1] = {&out};
  pq4_select_avx512_many(packed, n, m, &luts, 1, first_row, allow, ids, outs);
}

}  // namespace ragcore
